//! RandomUniform-8: `shape` (1-D integers) values drawn uniformly from `[min, max)` (inputs 1
//! and 2, one value each, of `output_type`: f16, bf16, f32, f64, i32 or i64), by one of two
//! generators that `alignment` names:
//!
//! - `tensorflow` (the default): Philox4x32-10 with key `global_seed` and counter
//!   `[n_lo, n_hi, op_seed_lo, op_seed_hi]`, `n` counting the calls, four u32 per call. A
//!   float is `bits(0x3F800000 | (x & 0x7FFFFF)) - 1` (23 random bits) times `max - min`
//!   plus `min`, one fused multiply-add as OpenVINO CPU computes it (the reference rounds
//!   twice); an integer is `x mod (max - min) + min`.
//! - `pytorch`: MT19937 seeded with `global_seed` (torch's generator), one u32 per value: a
//!   float is `(x & 0xFFFFFF) * 2^-24` times `max - min` plus `min` (torch.rand), an integer
//!   `x mod (max - min) + min` (torch.randint).
//!
//! As OpenVINO CPU computes them (checked against it: models/random): f16 and f64 are the
//! f32 value converted (bf16 too, unchecked: the CPU runs a bf16 RandomUniform in f32), and
//! i64 the i32 path (OpenVINO's reference kernel and TensorFlow
//! draw f16 from 10 random bits and f64 and i64 from two u32; irun gives what OpenVINO CPU
//! gives). Integer ranges of 2^32 or more are refused (their draws were not checked).
//!
//! State: with `tensorflow`, each run continues the sequence where OpenVINO CPU does, `n`
//! advanced by 256 per element drawn, across every run of the compiled model; with
//! `pytorch` every run gives the same values. With both seeds 0 the seed is random per
//! compiled model, as OpenVINO's is. The op is never folded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{bf16, f16, with_float, Dim, ElementType, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::try_with_capacity;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alignment {
    Tensorflow,
    Pytorch,
}

#[derive(Debug)]
pub struct RandomUniform {
    pub output_type: ElementType,
    pub global_seed: u64,
    pub op_seed: u64,
    pub alignment: Alignment,
    /// The Philox call count the next run starts from.
    next: AtomicU64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    use ElementType as E;
    let output_type = a.element_type("output_type")?;
    if !matches!(
        output_type,
        E::F16 | E::Bf16 | E::F32 | E::F64 | E::I32 | E::I64
    ) {
        return Err(OpError::attribute(
            "output_type",
            format!("RandomUniform-8: output_type must be f16, bf16, f32, f64, i32 or i64, got {output_type}"),
        ));
    }
    let seed = |name: &'static str| -> Result<u64, OpError> {
        let v = a.i64_or(name, Some(0))?;
        u64::try_from(v).map_err(|_| {
            OpError::attribute(
                name,
                format!("RandomUniform-8: {name} must be 0 or more, got {v}"),
            )
        })
    };
    let (mut global_seed, op_seed) = (seed("global_seed")?, seed("op_seed")?);
    let alignment = match a.enum_or("alignment", &["tensorflow", "pytorch"], "tensorflow")? {
        "pytorch" => Alignment::Pytorch,
        _ => Alignment::Tensorflow,
    };
    if global_seed == 0 && op_seed == 0 {
        global_seed = random_seed();
    }
    Ok(Box::new(RandomUniform {
        output_type,
        global_seed,
        op_seed,
        alignment,
        next: AtomicU64::new(0),
    }))
}

/// A seed from the standard library's per-process randomness (what OpenVINO's unseeded
/// generator takes from the clock).
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x5eed);
    h.finish().max(1)
}

/// Philox4x32-10: four u32 from a counter and a key.
fn philox(mut c: [u32; 4], mut k: [u32; 2]) -> [u32; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    for round in 0..10 {
        let p0 = M0 * u64::from(c[0]);
        let p1 = M1 * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
        if round < 9 {
            k = [
                k[0].wrapping_add(0x9E37_79B9),
                k[1].wrapping_add(0xBB67_AE85),
            ];
        }
    }
    c
}

/// `count` u32 from Philox calls `first, first + 1, ...` (each call's counter `n` carries into
/// the op seed's words).
fn philox_stream(
    global_seed: u64,
    op_seed: u64,
    first: u64,
    count: usize,
) -> Result<Vec<u32>, OpError> {
    let key = [global_seed as u32, (global_seed >> 32) as u32];
    let mut out = try_with_capacity(count.saturating_add(3))?;
    let (mut n, mut op) = (first, op_seed);
    while out.len() < count {
        out.extend(philox(
            [n as u32, (n >> 32) as u32, op as u32, (op >> 32) as u32],
            key,
        ));
        n = n.wrapping_add(1);
        if n == 0 {
            op = op.wrapping_add(1);
        }
    }
    out.truncate(count);
    Ok(out)
}

/// MT19937 as torch's CPU generator runs it, seeded with `seed`: `count` tempered u32.
fn mersenne_stream(seed: u64, count: usize) -> Result<Vec<u32>, OpError> {
    const N: usize = 624;
    const M: usize = 397;
    let mut state = [0u32; N];
    state[0] = seed as u32;
    for i in 1..N {
        let prev = state[i - 1];
        state[i] = 1_812_433_253u32
            .wrapping_mul(prev ^ (prev >> 30))
            .wrapping_add(i as u32);
    }
    let twist = |u: u32, v: u32| {
        let mixed = (u & 0x8000_0000) | (v & 0x7FFF_FFFF);
        (mixed >> 1) ^ if v & 1 == 1 { 0x9908_B0DF } else { 0 }
    };
    let mut out = try_with_capacity(count)?;
    let mut next = N;
    while out.len() < count {
        if next == N {
            for i in 0..N {
                state[i] = state[(i + M) % N] ^ twist(state[i], state[(i + 1) % N]);
            }
            next = 0;
        }
        let mut y = state[next];
        next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9D2C_5680;
        y ^= (y << 15) & 0xEFC6_0000;
        y ^= y >> 18;
        out.push(y);
    }
    Ok(out)
}

/// The values of `values` (`count` of them) in a `Vec` allocated first, so that an output
/// too large for memory is an error rather than an abort.
fn collected<T>(count: usize, values: impl Iterator<Item = T>) -> Result<Vec<T>, OpError> {
    let mut out = try_with_capacity(count)?;
    out.extend(values);
    Ok(out)
}

/// What a draw is mapped into: `[min, max)` as f32 (every float type draws through f32, as
/// OpenVINO CPU does), or an integer minimum and the range the draw is reduced modulo.
#[derive(Clone, Copy, Debug)]
enum Bounds {
    Float(f32, f32),
    Int { min: i64, range: u32 },
}

/// The one value of input `slot` (min or max), which must be of the output type.
fn one(t: &Tensor, slot: usize, ty: ElementType) -> Result<&Tensor, OpError> {
    let bad = |why: String| {
        OpError::input(
            slot,
            codes::BAD_VALUE,
            format!("RandomUniform-8: input {slot} {why}"),
        )
    };
    if t.element_type() != ty {
        return Err(bad(format!(
            "is {}, not output_type {ty}",
            t.element_type()
        )));
    }
    if t.len() != 1 {
        return Err(bad(format!("must hold one value, got {}", t.len())));
    }
    Ok(t)
}

/// `[min, max)` checked before anything is drawn (so a refused run leaves the sequence where
/// it was): `min < max`, an integer range below 2^32.
fn bounds(min: &Tensor, max: &Tensor, ty: ElementType) -> Result<Bounds, OpError> {
    let (min, max) = (one(min, 1, ty)?, one(max, 2, ty)?);
    let empty = |lo: &dyn std::fmt::Display, hi: &dyn std::fmt::Display| {
        OpError::new(
            codes::RUN_VALUE,
            format!("RandomUniform-8: min {lo} must be below max {hi}"),
        )
    };
    if ty.is_real() {
        let value = |t: &Tensor| with_float!(ty, T => t.values::<T>().map_or(f64::NAN, |v| v[0].to_f64()), else f64::NAN);
        let (lo, hi) = (value(min), value(max));
        if lo.is_nan() || hi.is_nan() || lo >= hi {
            return Err(empty(&lo, &hi));
        }
        return Ok(Bounds::Float(lo as f32, hi as f32));
    }
    let value = |t: &Tensor| t.to_i64_vec().map_or(0, |v| v[0]);
    let (lo, hi) = (value(min), value(max));
    if lo >= hi {
        return Err(empty(&lo, &hi));
    }
    let range = u32::try_from(i128::from(hi) - i128::from(lo)).map_err(|_| {
        OpError::new(
            codes::UNSUPPORTED_TYPE,
            format!(
                "RandomUniform-8: integer ranges of 2^32 or more ([{lo}, {hi})) are not supported"
            ),
        )
    })?;
    Ok(Bounds::Int { min: lo, range })
}

impl RandomUniform {
    /// The f32 value of draw `x` in `[min, max)`.
    fn float(&self, x: u32, min: f32, max: f32) -> f32 {
        let unit = match self.alignment {
            Alignment::Tensorflow => f32::from_bits(0x3F80_0000 | (x & 0x7F_FFFF)) - 1.0,
            Alignment::Pytorch => (x & 0xFF_FFFF) as f32 * (1.0 / (1u32 << 24) as f32),
        };
        // One rounding, as OpenVINO CPU's kernel (a fused multiply-add) gives it.
        unit.mul_add(max - min, min)
    }
}

impl Op for RandomUniform {
    fn name(&self) -> &'static str {
        "RandomUniform-8"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[0]
    }

    fn may_fold(&self) -> bool {
        false
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.name())?;
        let shape = &inputs[0];
        if shape.rank().is_some_and(|r| r != 1) {
            return Err(OpError::input(
                0,
                codes::RANK,
                format!("RandomUniform-8: shape must be 1-D, got {}", shape.shape),
            ));
        }
        if !shape.ty.is_integral_number() && shape.ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("RandomUniform-8: shape must be integers, got {}", shape.ty),
            ));
        }
        for slot in [1, 2] {
            let f = &inputs[slot];
            if f.ty != self.output_type && f.ty != ElementType::Dynamic {
                return Err(OpError::input(
                    slot,
                    codes::ELEMENT_TYPE,
                    format!(
                        "RandomUniform-8: input {slot} must be output_type {}, got {}",
                        self.output_type, f.ty
                    ),
                ));
            }
            if f.shape
                .to_static()
                .is_some_and(|s| s.iter().product::<usize>() != 1)
            {
                return Err(OpError::input(
                    slot,
                    codes::SHAPE,
                    format!(
                        "RandomUniform-8: input {slot} must hold one value, got {}",
                        f.shape
                    ),
                ));
            }
        }
        let out = match shape.value.as_ref().and_then(|v| v.to_i64_vec()) {
            Some(dims) => {
                if let Some(d) = dims.iter().find(|&&d| d < 0) {
                    return Err(OpError::input(
                        0,
                        codes::BAD_VALUE,
                        format!("RandomUniform-8: shape holds {d}"),
                    ));
                }
                PartialShape::new(dims.iter().map(|&d| Dim::fixed(d as u64)).collect())
            }
            None => match shape.shape.to_static() {
                Some(s) => PartialShape::dynamic_of_rank(s[0]),
                None => PartialShape::dynamic_rank(),
            },
        };
        Ok(vec![Fact::new(self.output_type, out)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [shape, min, max] = take_inputs::<3>(inputs, self.name())?;
        let dims = shape
            .to_i64_vec()
            .filter(|_| shape.shape().len() == 1)
            .ok_or_else(|| {
                OpError::input(
                    0,
                    codes::BAD_VALUE,
                    "RandomUniform-8: shape must be 1-D integers",
                )
            })?;
        let dims: Vec<usize> = dims
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                OpError::input(
                    0,
                    codes::BAD_VALUE,
                    format!("RandomUniform-8: shape {dims:?} has a negative dim"),
                )
            })?;
        let count = irun_tensor::element_count(&dims).ok_or_else(|| {
            OpError::new(
                codes::RUN_SHAPE,
                format!("RandomUniform-8: shape {dims:?} overflows"),
            )
        })?;
        let ty = self.output_type;
        let bounds = bounds(&min, &max, ty)?;
        let draws = match self.alignment {
            Alignment::Tensorflow => {
                let first = self
                    .next
                    .fetch_add(256u64.saturating_mul(count as u64), Ordering::Relaxed);
                philox_stream(self.global_seed, self.op_seed, first, count)?
            }
            Alignment::Pytorch => mersenne_stream(self.global_seed, count)?,
        };
        let out = match bounds {
            Bounds::Float(lo, hi) => {
                let values = draws.iter().map(|&x| self.float(x, lo, hi));
                match ty {
                    ElementType::F16 => {
                        Tensor::from_f16(dims, collected(count, values.map(f16::from_f32))?)
                    }
                    ElementType::Bf16 => {
                        Tensor::from_bf16(dims, collected(count, values.map(bf16::from_f32))?)
                    }
                    ElementType::F64 => {
                        Tensor::from_f64(dims, collected(count, values.map(f64::from))?)
                    }
                    _ => Tensor::from_f32(dims, collected(count, values)?),
                }
            }
            Bounds::Int { min, range } => {
                let values = draws.iter().map(|&x| i64::from(x % range) + min);
                match ty {
                    ElementType::I32 => {
                        Tensor::from_i32(dims, collected(count, values.map(|v| v as i32))?)
                    }
                    _ => Tensor::from_i64(dims, collected(count, values)?),
                }
            }
        }
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(ty: ElementType, global_seed: u64, op_seed: u64, alignment: Alignment) -> RandomUniform {
        RandomUniform {
            output_type: ty,
            global_seed,
            op_seed,
            alignment,
            next: AtomicU64::new(0),
        }
    }

    fn run(op: &RandomUniform, shape: &[i64], min: Tensor, max: Tensor) -> Result<Tensor, OpError> {
        let shape = Tensor::from_i64(vec![shape.len()], shape.to_vec()).unwrap();
        let out = op.eval(vec![Arc::new(shape), Arc::new(min), Arc::new(max)])?;
        Ok(Arc::unwrap_or_clone(out.into_iter().next().unwrap()))
    }

    fn f32s(v: f32) -> Tensor {
        Tensor::from_f32(vec![], vec![v]).unwrap()
    }

    fn i32s(v: i32) -> Tensor {
        Tensor::from_i32(vec![], vec![v]).unwrap()
    }

    /// The specification's examples (seeds 150/10 for f32, 80/100 for i32 in [50, 100)).
    /// A shape whose element count fits a `usize` but not memory (a fuzzed model asked for
    /// 2^60 values) is an error in both alignments and for every output type, not a panic
    /// or an abort.
    #[test]
    fn an_output_too_large_for_memory_is_an_error() {
        for alignment in [Alignment::Tensorflow, Alignment::Pytorch] {
            for (ty, min, max) in [
                (
                    ElementType::F32,
                    Tensor::from_f32(vec![], vec![0.0]),
                    Tensor::from_f32(vec![], vec![1.0]),
                ),
                (
                    ElementType::I64,
                    Tensor::from_i64(vec![], vec![0]),
                    Tensor::from_i64(vec![], vec![9]),
                ),
            ] {
                let op = op(ty, 1, 2, alignment);
                let err = run(&op, &[1 << 40, 1 << 20], min.unwrap(), max.unwrap()).unwrap_err();
                assert_eq!(
                    err.code,
                    codes::MEMORY,
                    "{alignment:?} {ty}: {}",
                    err.message
                );
            }
        }
    }

    #[test]
    fn the_specifications_examples() {
        let t = run(
            &op(ElementType::F32, 150, 10, Alignment::Tensorflow),
            &[2, 3],
            f32s(0.0),
            f32s(1.0),
        )
        .unwrap();
        let want = [
            0.7011236, 0.30539632, 0.93931055, 0.9456035, 0.11694777, 0.50770056,
        ];
        assert_eq!(t.values::<f32>().unwrap(), &want);
        let t = run(
            &op(ElementType::I32, 80, 100, Alignment::Tensorflow),
            &[2, 3],
            i32s(50),
            i32s(100),
        )
        .unwrap();
        assert_eq!(t.values::<i32>().unwrap(), &[65, 70, 56, 59, 82, 92]);
    }

    /// torch.manual_seed(150); torch.rand(6) and torch.randint(-50, 50, (6,)).
    #[test]
    fn pytorch_alignment_draws_torchs_numbers() {
        let o = op(ElementType::F32, 150, 10, Alignment::Pytorch);
        let t = run(&o, &[6], f32s(0.0), f32s(1.0)).unwrap();
        let want = [
            0.59748673, 0.544582, 0.04074067, 0.5810562, 0.67971706, 0.3907653,
        ];
        assert_eq!(t.values::<f32>().unwrap(), &want);
        assert_eq!(
            run(&o, &[6], f32s(0.0), f32s(1.0)).unwrap(),
            t,
            "no state: the same again"
        );
        let t = run(
            &op(ElementType::I32, 150, 10, Alignment::Pytorch),
            &[6],
            i32s(-50),
            i32s(50),
        )
        .unwrap();
        assert_eq!(t.values::<i32>().unwrap(), &[26, 28, 21, 23, -6, -4]);
    }

    /// A second run continues 256 calls per element further on, as OpenVINO CPU's does.
    #[test]
    fn tensorflow_runs_continue_the_sequence() {
        let o = op(ElementType::F32, 150, 10, Alignment::Tensorflow);
        run(&o, &[2, 3], f32s(0.0), f32s(1.0)).unwrap();
        let second = run(&o, &[2, 3], f32s(0.0), f32s(1.0)).unwrap();
        assert_eq!(second.values::<f32>().unwrap()[..2], [0.9234557, 0.3423096]);
    }

    #[test]
    fn bad_bounds_and_shapes_are_errors() {
        let o = op(ElementType::F32, 1, 2, Alignment::Tensorflow);
        assert_eq!(
            run(&o, &[2], f32s(1.0), f32s(1.0)).unwrap_err().code,
            codes::RUN_VALUE
        );
        assert_eq!(
            run(&o, &[-1], f32s(0.0), f32s(1.0)).unwrap_err().code,
            codes::BAD_VALUE
        );
        assert_eq!(
            run(&o, &[2], i32s(0), f32s(1.0)).unwrap_err().code,
            codes::BAD_VALUE
        );
        let o = op(ElementType::I64, 1, 2, Alignment::Tensorflow);
        let wide = run(
            &o,
            &[2],
            Tensor::from_i64(vec![], vec![0]).unwrap(),
            Tensor::from_i64(vec![], vec![1 << 40]).unwrap(),
        );
        assert_eq!(wide.unwrap_err().code, codes::UNSUPPORTED_TYPE);
        assert!(!o.may_fold());
        // Refused runs drew nothing: the first run that draws starts the sequence.
        let o = op(ElementType::F32, 150, 10, Alignment::Tensorflow);
        assert!(run(&o, &[2, 3], f32s(1.0), f32s(0.0)).is_err());
        let t = run(&o, &[2, 3], f32s(0.0), f32s(1.0)).unwrap();
        assert_eq!(t.values::<f32>().unwrap()[0], 0.7011236);
    }
}
