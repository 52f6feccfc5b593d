//! SpaceToBatch-2 and BatchToSpace-2: moving `block_shape` blocks of the spatial dims into
//! the batch and back. Inputs data `[N, D1 .. Dk]` and three 1-D integer inputs of the data's
//! rank: `block_shape` (>= 1, the first 1), then `pads_begin`, `pads_end` (SpaceToBatch) or
//! `crops_begin`, `crops_end` (BatchToSpace).
//! - SpaceToBatch zero-pads each dim, views it as `[Di' / Bi, Bi]` and moves the block
//!   offsets in front of the batch: `[B1 .. Bk * N, D1' / B1 .. Dk' / Bk]`.
//! - BatchToSpace views the batch as `[B1 .. Bk, N / prod(B)]`, interleaves the offsets back
//!   (`Di * Bi`) and crops.
//!
//! Each is an [`AxisMap`] (pad or crop) and one strided copy.

use irun_tensor::{Dim, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::axis_map::AxisMap;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError, Value};
use crate::strided::Strided;
use crate::util::{expect_int_type, ints, known_ints, output};

#[derive(Debug)]
pub struct BatchSpace {
    /// SpaceToBatch (else BatchToSpace).
    pub to_batch: bool,
}

pub fn build_space_to_batch(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(BatchSpace { to_batch: true }))
}

pub fn build_batch_to_space(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(BatchSpace { to_batch: false }))
}

impl BatchSpace {
    fn bad(&self, slot: usize, code: &'static str, m: String) -> OpError {
        OpError::input(slot, code, format!("{}: {m}", self.name()))
    }

    /// The output dims from the input dims (unknown: `None`) and the three value inputs.
    fn out_dims(
        &self,
        dims: &[Option<u64>],
        b: &[i64],
        lo: &[i64],
        hi: &[i64],
    ) -> Result<Vec<Option<u64>>, OpError> {
        let r = dims.len();
        for (slot, v) in [(1, b), (2, lo), (3, hi)] {
            if v.len() != r {
                return Err(self.bad(
                    slot,
                    codes::SHAPE,
                    format!("{} values for data of rank {r}", v.len()),
                ));
            }
        }
        if b.iter().any(|&x| x < 1) || b[0] != 1 || lo.iter().chain(hi).any(|&x| x < 0) {
            return Err(self.bad(
                1,
                codes::BAD_VALUE,
                format!(
                    "block_shape {b:?} (>= 1, first 1) and pads or crops {lo:?}, {hi:?} (>= 0)"
                ),
            ));
        }
        let volume = b
            .iter()
            .try_fold(1u64, |a, &x| a.checked_mul(x as u64))
            .ok_or_else(|| self.bad(1, codes::BAD_VALUE, "block_shape overflows".into()))?;
        let mut out = Vec::with_capacity(r);
        for i in 0..r {
            let Some(d) = dims[i] else {
                out.push(None);
                continue;
            };
            let (bi, l, h) = (b[i] as u64, lo[i] as u64, hi[i] as u64);
            let v = if self.to_batch {
                let p = d + l + h;
                if p % bi != 0 {
                    return Err(self.bad(
                        0,
                        codes::SHAPE,
                        format!("padded dim {i} of {p} is not a multiple of block {bi}"),
                    ));
                }
                if i == 0 {
                    d * volume
                } else {
                    p / bi
                }
            } else if i == 0 {
                if d % volume != 0 {
                    return Err(self.bad(
                        0,
                        codes::SHAPE,
                        format!("batch {d} is not a multiple of the block volume {volume}"),
                    ));
                }
                d / volume
            } else {
                (d * bi).checked_sub(l + h).ok_or_else(|| {
                    self.bad(
                        2,
                        codes::BAD_VALUE,
                        format!("crops {l} + {h} exceed dim {i} of {}", d * bi),
                    )
                })?
            };
            out.push(Some(v));
        }
        Ok(out)
    }

    /// Zero-pads (`lo`, `hi` >= 0) or crops (as negative pads) `x`.
    fn pad(&self, x: &Tensor, lo: &[i64], hi: &[i64], grow: bool) -> Result<Value, OpError> {
        let sign = if grow { 1 } else { -1 };
        let begin: Vec<i64> = lo.iter().map(|&l| sign * l).collect();
        let out: Vec<usize> = x
            .shape()
            .iter()
            .enumerate()
            .map(|(i, &d)| (d as i64 + sign * (lo[i] + hi[i])).max(0) as usize)
            .collect();
        AxisMap::shifted(x.shape(), &begin, &out, self.name())?.apply(x, None, self.name())
    }
}

impl Op for BatchSpace {
    fn name(&self) -> &'static str {
        if self.to_batch {
            "SpaceToBatch-2"
        } else {
            "BatchToSpace-2"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2, 3]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 4, self.name())?;
        for slot in 1..4 {
            expect_int_type(inputs, slot, self.name())?;
        }
        let x = &inputs[0];
        let Some(d) = x.shape.dims() else {
            return Ok(vec![Fact::new(x.ty, PartialShape::dynamic_rank())]);
        };
        if d.len() < 2 {
            return Err(self.bad(
                0,
                codes::RANK,
                format!("data {} must have rank 2 or more", x.shape),
            ));
        }
        let v: Option<Vec<Vec<i64>>> = inputs[1..].iter().map(known_ints).collect();
        let Some(v) = v else {
            return Ok(vec![Fact::new(
                x.ty,
                PartialShape::dynamic_of_rank(d.len()),
            )]);
        };
        let dims: Vec<Option<u64>> = d.iter().map(|d| d.get_static()).collect();
        let out = self.out_dims(&dims, &v[0], &v[1], &v[2])?;
        Ok(vec![Fact::new(
            x.ty,
            PartialShape::new(
                out.into_iter()
                    .map(|d| d.map_or(Dim::DYNAMIC, Dim::fixed))
                    .collect(),
            ),
        )])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        if inputs.len() != 4 {
            return Err(OpError::new(
                codes::ARITY,
                format!("{} takes 4 inputs", self.name()),
            ));
        }
        let v: Vec<Vec<i64>> = (1..4)
            .map(|s| ints(&inputs[s], s))
            .collect::<Result<_, _>>()?;
        let (b, lo, hi) = (&v[0], &v[1], &v[2]);
        let x = &inputs[0];
        let dims: Vec<Option<u64>> = x.shape().iter().map(|&d| Some(d as u64)).collect();
        let out: Vec<usize> = self
            .out_dims(&dims, b, lo, hi)?
            .iter()
            .map(|d| d.unwrap_or(0) as usize)
            .collect();
        let k = x.shape().len() - 1;
        let bs: Vec<usize> = b[1..].iter().map(|&v| v as usize).collect();
        if self.to_batch {
            let p = self.pad(x, lo, hi, true)?;
            let ps = p.shape();
            // [N, D1'/B1, B1, .., Dk'/Bk, Bk] -> [B1, .., Bk, N, D1'/B1, .., Dk'/Bk]
            let mut view = vec![ps[0]];
            for i in 0..k {
                view.extend([ps[i + 1] / bs[i], bs[i]]);
            }
            let mut perm: Vec<usize> = (0..k).map(|i| 2 + 2 * i).collect();
            perm.push(0);
            perm.extend((0..k).map(|i| 1 + 2 * i));
            let words = Strided::permuted(&view, &perm).apply(&p, self.name())?;
            return Ok(vec![output(x.element_type(), out, words)?]);
        }
        let s = x.shape();
        let n = s[0] / bs.iter().product::<usize>().max(1);
        // [B1, .., Bk, N', D1, .., Dk] -> [N', D1, B1, .., Dk, Bk]
        let mut view = bs.clone();
        view.push(n);
        view.extend_from_slice(&s[1..]);
        let mut perm = vec![k];
        for i in 0..k {
            perm.extend([k + 1 + i, i]);
        }
        let mut grown = vec![n];
        grown.extend((0..k).map(|i| s[i + 1] * bs[i]));
        let words = Strided::permuted(&view, &perm).apply(x, self.name())?;
        let moved = output(x.element_type(), grown, words)?;
        Ok(vec![self.pad(&moved, lo, hi, false)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// A [1, 1, 2, 4] image with 2 x 2 blocks: four batches of [1, 1, 2]; and back.
    #[test]
    fn round_trip() {
        let x = i32s(&[1, 1, 2, 4], &[1, 2, 3, 4, 5, 6, 7, 8]);
        let b = i64s(&[4], &[1, 1, 2, 2]);
        let z = i64s(&[4], &[0, 0, 0, 0]);
        let y = run(
            &BatchSpace { to_batch: true },
            vec![x.clone(), b.clone(), z.clone(), z.clone()],
        )
        .unwrap();
        assert_eq!(y[0], i32s(&[4, 1, 1, 2], &[1, 3, 2, 4, 5, 7, 6, 8]));
        let back = run(
            &BatchSpace { to_batch: false },
            vec![y[0].clone(), b.clone(), z.clone(), z],
        )
        .unwrap();
        assert_eq!(back[0], x);
        // Padding then cropping the same amounts is the identity too.
        let p = i64s(&[4], &[0, 0, 0, 1]);
        let q = i64s(&[4], &[0, 0, 0, 1]);
        let y = run(
            &BatchSpace { to_batch: true },
            vec![x.clone(), b.clone(), p.clone(), q.clone()],
        )
        .unwrap();
        assert_eq!(y[0].shape(), &[4, 1, 1, 3]);
        let back = run(&BatchSpace { to_batch: false }, vec![y[0].clone(), b, p, q]).unwrap();
        assert_eq!(back[0], x);
        let e = BatchSpace { to_batch: true }
            .infer(&[
                fact(F32, "1,1,3,4"),
                i64_value(&[1, 1, 2, 2]),
                i64_value(&[0, 0, 0, 0]),
                i64_value(&[0, 0, 0, 0]),
            ])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
