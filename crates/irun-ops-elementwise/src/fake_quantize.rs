//! FakeQuantize-1: `x` snapped to one of `levels` (>= 2) evenly spaced values. Inputs `x`,
//! `input_low`, `input_high`, `output_low`, `output_high`, all of one float type; the four
//! ranges broadcast (numpy) onto `x`, whose shape the output keeps. Per element, with
//! `L = levels - 1`:
//! - `x <= min(il, ih)`: `ol`; `x > max(il, ih)`: `oh`;
//! - otherwise `round((x - il) / (ih - il) * L) / L * (oh - ol) + ol`, the rounding half to
//!   even (`nearbyint`).
//!
//! Computed in the order written, in f32 for f32 (the reference's arithmetic, so levels
//! agree with it bit for bit), f16 and bf16 (rounded once at the end, where the reference
//! rounds every step), and in f64 for f64. OpenVINO CPU precomputes scales and uses fused
//! multiply-adds, so its level differs from the formula's by one step for a few elements
//! in a million, near the rounding boundaries.

use std::sync::Arc;

use irun_tensor::{ElementType, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, same_element_type, Op, OpError, Value};
use irun_opkit::broadcast::Broadcast;
use irun_opkit::number::Number;

#[derive(Debug)]
pub struct FakeQuantize {
    pub levels: u64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let levels = a.i64_or("levels", None)?;
    a.enum_or("auto_broadcast", &["numpy"], "numpy")?;
    if levels < 2 {
        return Err(OpError::attribute(
            "levels",
            format!("FakeQuantize-1: levels must be at least 2, got {levels}"),
        ));
    }
    Ok(Box::new(FakeQuantize {
        levels: levels as u64,
    }))
}

use irun_opkit::quantize::{fake_quantize_f32 as quantize_f32, fake_quantize_f64 as quantize_f64};

impl FakeQuantize {
    /// f32 without conversions: rows along which the four ranges are constant (per-tensor
    /// and per-channel activations) run the formula over the contiguous slice of `x` in the
    /// widest vectors (the same operations in the same order, so the same bits).
    fn run_f32(&self, bc: &Broadcast<5>, inputs: [&[f32]; 5]) -> Vec<f32> {
        let mut out = vec![0f32; bc.out_len()];
        let l = (self.levels - 1) as f32;
        irun_opkit::par::for_each_split_mut(&mut out, 4096, &|at, chunk| {
            bc.rows(at..at + chunk.len(), |start, s, st, len| {
                let dst = &mut chunk[start - at..start - at + len];
                if st[0] == 1 && st[1..].iter().all(|&t| t == 0) {
                    let [il, ih, ol, oh] = std::array::from_fn(|j| inputs[j + 1][s[j + 1]]);
                    let src = &inputs[0][s[0]..s[0] + len];
                    irun_opkit::simd::widest(
                        #[inline(always)]
                        || {
                            for (y, &x) in dst.iter_mut().zip(src) {
                                *y = quantize_f32(x, il, ih, ol, oh, l);
                            }
                        },
                    );
                } else {
                    for (i, y) in dst.iter_mut().enumerate() {
                        let v = |j: usize| inputs[j][s[j] + i * st[j]];
                        *y = quantize_f32(v(0), v(1), v(2), v(3), v(4), l);
                    }
                }
            });
        });
        out
    }

    fn run<T: Number>(&self, bc: &Broadcast<5>, inputs: [&[T]; 5]) -> Vec<T> {
        let mut out = vec![T::default(); bc.out_len()];
        let wide = std::mem::size_of::<T>() == 8;
        let (l32, l64) = ((self.levels - 1) as f32, (self.levels - 1) as f64);
        irun_opkit::par::for_each_split_mut(&mut out, 4096, &|at, chunk| {
            bc.rows(at..at + chunk.len(), |start, s, st, len| {
                for i in 0..len {
                    let v = |j: usize| inputs[j][s[j] + i * st[j]].to_f64();
                    let y = if wide {
                        quantize_f64(v(0), v(1), v(2), v(3), v(4), l64)
                    } else {
                        let v = |j| v(j) as f32;
                        quantize_f32(v(0), v(1), v(2), v(3), v(4), l32) as f64
                    };
                    chunk[start - at + i] = T::from_f64(y);
                }
            });
        });
        out
    }
}

impl Op for FakeQuantize {
    fn name(&self) -> &'static str {
        "FakeQuantize-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 5, self.name())?;
        let ty = same_element_type(inputs, &[0, 1, 2, 3, 4], self.name())?;
        if !ty.is_real() && ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("FakeQuantize-1: inputs must be a floating-point type, got {ty}"),
            ));
        }
        let x = &inputs[0];
        if let Some(xs) = x.shape.to_static() {
            for (slot, f) in inputs.iter().enumerate().skip(1) {
                let Some(s) = f.shape.to_static() else {
                    continue;
                };
                let fits = Broadcast::<2>::new([&xs, &s]).is_ok_and(|b| b.out_shape() == xs);
                if !fits {
                    return Err(OpError::input(
                        slot,
                        codes::SHAPE,
                        format!(
                            "FakeQuantize-1: range {} does not broadcast onto x {}",
                            f.shape, x.shape
                        ),
                    ));
                }
            }
        }
        Ok(vec![Fact::new(ty, x.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let inputs: [Value; 5] = inputs
            .try_into()
            .map_err(|_| OpError::new(codes::ARITY, "FakeQuantize-1 takes 5 inputs"))?;
        let bc = Broadcast::<5>::new(std::array::from_fn(|j| inputs[j].shape()))?;
        let x = &inputs[0];
        if bc.out_shape() != x.shape() {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                "FakeQuantize-1: a range does not broadcast onto x",
            ));
        }
        let ty = x.element_type();
        let bad = || {
            OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!("FakeQuantize-1 on {ty} (inputs of one float type)"),
            )
        };
        if ty == ElementType::F32 {
            let vals: [&[f32]; 5] =
                std::array::from_fn(|j| inputs[j].values::<f32>().unwrap_or(&[]));
            if vals.iter().zip(&inputs).any(|(v, t)| v.len() != t.len()) {
                return Err(bad());
            }
            let out = Tensor::from_f32(x.shape().to_vec(), self.run_f32(&bc, vals))
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
            return Ok(vec![Arc::new(out)]);
        }
        let out = irun_tensor::with_float!(ty, T => {
            let mut vals: [&[T]; 5] = [&[]; 5];
            for (j, t) in inputs.iter().enumerate() {
                vals[j] = t.values::<T>().ok_or_else(bad)?;
            }
            Tensor::new(ty, x.shape().to_vec(), T::wrap(self.run(&bc, vals)))
        }, else return Err(bad()));
        let out = out.map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn fq(levels: u64, x: Tensor, r: [f32; 4]) -> Tensor {
        let s = |v: f32| f32s(&[], &[v]);
        run(
            &FakeQuantize { levels },
            vec![x, s(r[0]), s(r[1]), s(r[2]), s(r[3])],
        )
        .unwrap()
    }

    /// Five levels on [0, 1]: 0.125 and 0.625 are ties (0.5 and 2.5 levels) and go to even.
    #[test]
    fn ties_round_to_even() {
        let y = fq(5, f32s(&[4], &[0.125, 0.375, 0.625, 0.9]), [0., 1., 0., 1.]);
        assert_eq!(y, f32s(&[4], &[0., 0.5, 0.5, 1.]));
    }

    /// Inverted input range (low 1, high 0): outside by min/max, inside by the formula.
    #[test]
    fn inverted_range() {
        let y = fq(3, f32s(&[4], &[0.25, 0.75, -1., 2.]), [1., 0., 0., 10.]);
        assert_eq!(y, f32s(&[4], &[10., 0., 0., 10.]));
    }

    /// Per-channel ranges ([1, 2, 1]) on [1, 2, 2]; the low end is inclusive.
    #[test]
    fn per_channel_ranges() {
        let x = f32s(&[1, 2, 2], &[0., 0.5, 0., 0.5]);
        let y = run(
            &FakeQuantize { levels: 256 },
            vec![
                x,
                f32s(&[1, 2, 1], &[0., -1.]),
                f32s(&[1, 2, 1], &[1., 1.]),
                f32s(&[1, 2, 1], &[0., -1.]),
                f32s(&[1, 2, 1], &[1., 1.]),
            ],
        )
        .unwrap();
        let v = y.values::<f32>().unwrap();
        assert_eq!(v[0], 0.);
        assert!((v[1] - 128. / 255.).abs() < 1e-6, "{}", v[1]);
        assert!((v[2] - (128. / 255. * 2. - 1.)).abs() < 1e-6, "{}", v[2]);
        let e = infer1(
            &FakeQuantize { levels: 2 },
            &[
                fact(F32, "1,2,2"),
                fact(F32, "3"),
                fact(F32, ""),
                fact(F32, ""),
                fact(F32, ""),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }

    /// The f32 path (vectorised rows, constant ranges hoisted) gives the generic path's bits:
    /// ties, values on and around the range ends, infinities and NaN, per-tensor ranges and
    /// per-channel ones, inverted ranges.
    #[test]
    fn the_f32_rows_give_the_generic_paths_bits() {
        let mut x: Vec<f32> = (0..3000).map(|i| (i as f32 - 1500.0) * 0.00731).collect();
        x.extend([
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1.0,
            -1.0,
        ]);
        let len = x.len();
        let op = FakeQuantize { levels: 256 };
        /// x's shape, the ranges' shape, the four ranges.
        type Case = (Vec<usize>, Vec<usize>, [Vec<f32>; 4]);
        let cases: Vec<Case> = vec![
            (
                vec![len],
                vec![],
                [vec![-4.66], vec![4.62], vec![-4.66], vec![4.62]],
            ),
            (
                vec![len],
                vec![],
                [vec![1.0], vec![-1.0], vec![0.0], vec![3.0]],
            ),
            (
                vec![7, len / 7],
                vec![7, 1],
                [
                    (0..7).map(|c| -1.0 - c as f32).collect(),
                    (0..7).map(|c| 1.0 + 0.5 * c as f32).collect(),
                    (0..7).map(|c| -(c as f32)).collect(),
                    (0..7).map(|c| c as f32 * 0.25).collect(),
                ],
            ),
            (
                vec![len / 7, 7],
                vec![1, 7],
                std::array::from_fn(|j| (0..7).map(|c| c as f32 - 3.0 + j as f32 * 2.0).collect()),
            ),
        ];
        for (xs, rs, ranges) in cases {
            let n: usize = xs.iter().product();
            let shapes: [&[usize]; 5] = [&xs, &rs, &rs, &rs, &rs];
            let bc = Broadcast::<5>::new(shapes).unwrap();
            let vals: [&[f32]; 5] = [&x[..n], &ranges[0], &ranges[1], &ranges[2], &ranges[3]];
            let fast = op.run_f32(&bc, vals);
            let generic = op.run::<f32>(&bc, vals);
            irun_opkit::testing::assert_same_bits(
                &fast,
                &generic,
                format!("x {xs:?}, ranges {rs:?}"),
            );
        }
    }
}
