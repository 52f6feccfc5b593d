//! ScaledDotProductAttention-13: `softmax(q k^T * scale + bias) v` per batch item. Inputs
//! `q [..., L, E]`, `k [..., S, E]`, `v [..., S, Ev]` (rank >= 3; batch dims broadcast numpy
//! style), optional `attn_mask` (boolean: false masks with -inf; float: added; broadcast to
//! `[..., L, S]`) and optional `scale` (one value; default `1/sqrt(E)`). `causal` (required;
//! omitted, false) masks `j > i` top-left aligned and ignores the mask. A fully masked row is
//! NaN (the spec's pseudo-code and CPU). Floats; f16/bf16 computed in f32.

use std::sync::Arc;

use irun_tensor::{Dim, ElementType, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::broadcast::{broadcast_or_error, Broadcast};
use crate::conv::{narrow, widen};
use crate::fact::Fact;
use crate::gemm::Mul;
use crate::op::{codes, same_element_type, Op, OpError, Value};
use crate::par;

#[derive(Debug)]
pub struct Sdpa {
    pub causal: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Sdpa {
        causal: a.bool_or("causal", false)?,
    }))
}

const NAME: &str = "ScaledDotProductAttention-13";

impl Op for Sdpa {
    fn name(&self) -> &'static str {
        NAME
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        if !(3..=5).contains(&inputs.len()) {
            return Err(OpError::new(
                codes::ARITY,
                format!("{NAME} takes 3 to 5 inputs, got {}", inputs.len()),
            ));
        }
        let ty = same_element_type(inputs, &[0, 1, 2], NAME)?;
        if !ty.is_real() && ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("{NAME}: q, k, v must be a floating-point type, got {ty}"),
            ));
        }
        let (Some(q), Some(k), Some(v)) = (
            inputs[0].shape.dims(),
            inputs[1].shape.dims(),
            inputs[2].shape.dims(),
        ) else {
            return Ok(vec![Fact::new(ty, PartialShape::dynamic_rank())]);
        };
        for (slot, d) in [(0, q), (1, k), (2, v)] {
            if d.len() < 3 {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!("{NAME}: input {slot} must have rank 3 or more"),
                ));
            }
        }
        let (e, s) = (q[q.len() - 1], k[k.len() - 2]);
        if !e.compatible(k[k.len() - 1]) {
            return Err(OpError::input(
                1,
                codes::SHAPE,
                format!(
                    "{NAME}: q {} and k {} differ in the embedding dim",
                    inputs[0].shape, inputs[1].shape
                ),
            ));
        }
        if !s.compatible(v[v.len() - 2]) {
            return Err(OpError::input(
                2,
                codes::SHAPE,
                format!(
                    "{NAME}: k {} and v {} differ in the sequence dim",
                    inputs[1].shape, inputs[2].shape
                ),
            ));
        }
        let batch = |d: &[Dim]| PartialShape::new(d[..d.len() - 2].to_vec());
        let b = broadcast_or_error(&[&batch(q), &batch(k), &batch(v)])?;
        let mut out = b.dims().map(<[Dim]>::to_vec).unwrap_or_default();
        out.extend([q[q.len() - 2], v[v.len() - 1]]);
        Ok(vec![Fact::new(ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let ty = inputs[0].element_type();
        let out = match ty {
            ElementType::F32 => self.run::<f32>(&inputs),
            ElementType::F64 => self.run::<f64>(&inputs),
            ElementType::F16 | ElementType::Bf16 => {
                let mut wide = Vec::with_capacity(inputs.len());
                for (i, t) in inputs.iter().enumerate() {
                    // A boolean mask stays boolean; float inputs widen.
                    wide.push(if i == 3 && t.element_type() == ElementType::Boolean {
                        t.clone()
                    } else {
                        Arc::new(widen(t)?)
                    });
                }
                narrow(&self.run::<f32>(&wide)?, ty)
            }
            ty => Err(OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!("{NAME} on {ty}"),
            )),
        }?;
        Ok(vec![Arc::new(out)])
    }
}

/// A float the attention computes in.
trait Real: Mul + Copy + Default + Into<f64> {
    fn from_f64(x: f64) -> Self;
}
impl Real for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
}
impl Real for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
}

impl Sdpa {
    fn run<T: Real>(&self, inputs: &[Value]) -> Result<Tensor, OpError> {
        let bad = |slot: usize| {
            OpError::input(
                slot,
                codes::RUN_SHAPE,
                format!("{NAME}: input {slot} has an unexpected type or shape"),
            )
        };
        let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        if qs.len() < 3 || ks.len() < 3 || vs.len() < 3 {
            return Err(bad(0));
        }
        let (l, e, s, ev) = (
            qs[qs.len() - 2],
            qs[qs.len() - 1],
            ks[ks.len() - 2],
            vs[vs.len() - 1],
        );
        if ks[ks.len() - 1] != e || vs[vs.len() - 2] != s {
            return Err(bad(1));
        }
        let mask = inputs.get(3).filter(|_| !self.causal);
        let scale = match inputs.get(4) {
            Some(t) => t
                .values::<T>()
                .and_then(|v| v.first().copied())
                .map(Into::into)
                .ok_or_else(|| bad(4))?,
            None => 1.0 / (e as f64).sqrt(),
        };
        // Batch dims of q, k, v and the mask (whose last two dims broadcast to [L, S]).
        let batch = |sh: &[usize]| sh[..sh.len().saturating_sub(2)].to_vec();
        let ms = mask.map(|m| m.shape().to_vec()).unwrap_or_default();
        // Dim `i` from the end of the mask's shape, 1 where the mask has no such dim.
        let mask_tail =
            |sh: &[usize], i: usize| -> usize { sh.len().checked_sub(1 + i).map_or(1, |p| sh[p]) };
        let (ml, msd) = (mask_tail(&ms, 1), mask_tail(&ms, 0));
        if (ml != 1 && ml != l) || (msd != 1 && msd != s) {
            return Err(OpError::input(
                3,
                codes::RUN_SHAPE,
                format!("{NAME}: mask {ms:?} does not broadcast to [{l}, {s}]"),
            ));
        }
        let (bq, bk, bv, bm) = (batch(qs), batch(ks), batch(vs), batch(&ms));
        let bc = Broadcast::<4>::new([&bq, &bk, &bv, &bm])?;
        let batches = bc.out_len();
        let mut starts = Vec::with_capacity(batches);
        bc.rows(0..batches, |_, st, step, len| {
            for i in 0..len {
                starts.push([
                    st[0] + i * step[0],
                    st[1] + i * step[1],
                    st[2] + i * step[2],
                    st[3] + i * step[3],
                ]);
            }
        });
        let (qv, kv, vv) = (
            q.values::<T>().ok_or_else(|| bad(0))?,
            k.values::<T>().ok_or_else(|| bad(1))?,
            v.values::<T>().ok_or_else(|| bad(2))?,
        );
        let mask_at = |m: usize, i: usize, j: usize| -> f64 {
            let Some(t) = mask else { return 0.0 };
            let off =
                m * ml * msd + (if ml == 1 { 0 } else { i }) * msd + if msd == 1 { 0 } else { j };
            if let Some(b) = t.values::<bool>() {
                if b[off] {
                    0.0
                } else {
                    f64::NEG_INFINITY
                }
            } else {
                t.values::<T>().map_or(0.0, |v| v[off].into())
            }
        };
        let blocks = par::try_map_tasks(batches, &|b| {
            let [iq, ik, iv, im] = starts[b];
            let mut scores = vec![T::default(); l * s];
            T::gemm(
                l,
                e,
                s,
                &qv[iq * l * e..(iq + 1) * l * e],
                (e as isize, 1),
                &kv[ik * s * e..(ik + 1) * s * e],
                (1, e as isize),
                &mut scores,
            );
            let mut probs = vec![T::default(); l * s];
            for i in 0..l {
                let row: Vec<f64> = (0..s)
                    .map(|j| {
                        let bias = if self.causal && j > i {
                            f64::NEG_INFINITY
                        } else {
                            mask_at(im, i, j)
                        };
                        scores[i * s + j].into() * scale + bias
                    })
                    .collect();
                let max = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
                let exps: Vec<f64> = row.iter().map(|&x| (x - max).exp()).collect();
                let sum: f64 = exps.iter().sum();
                for (j, &x) in exps.iter().enumerate() {
                    probs[i * s + j] = T::from_f64(x / sum);
                }
            }
            let mut out = vec![T::default(); l * ev];
            T::gemm(
                l,
                s,
                ev,
                &probs,
                (s as isize, 1),
                &vv[iv * s * ev..(iv + 1) * s * ev],
                (ev as isize, 1),
                &mut out,
            );
            Ok(out)
        })?;
        let mut shape = bc.out_shape().to_vec();
        shape.extend([l, ev]);
        let flat: Vec<T> = blocks.into_iter().flatten().collect();
        Tensor::new(q.element_type(), shape, T::wrap(flat))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{eval1, fact, infer1};
    use irun_tensor::ElementType::*;

    fn t(shape: &[usize], v: &[f64]) -> Tensor {
        Tensor::from_f64(shape.to_vec(), v.to_vec()).unwrap()
    }

    #[test]
    fn attention_mask_and_causal() {
        // L = 2, S = 2, E = 1: scores q_i * k_j / 1.
        let (q, k, v) = (
            t(&[1, 2, 1], &[0., 0.]),
            t(&[1, 2, 1], &[1., 2.]),
            t(&[1, 2, 1], &[10., 20.]),
        );
        let out = eval1(
            &Sdpa { causal: false },
            vec![q.clone(), k.clone(), v.clone()],
        )
        .unwrap();
        assert_eq!(
            out.values::<f64>().unwrap(),
            &[15., 15.],
            "equal scores average v"
        );
        let out = eval1(
            &Sdpa { causal: true },
            vec![q.clone(), k.clone(), v.clone()],
        )
        .unwrap();
        assert_eq!(
            out.values::<f64>().unwrap(),
            &[10., 15.],
            "row 0 sees only key 0"
        );
        let mask = Tensor::from_bool(vec![2, 2], vec![false, true, false, false]).unwrap();
        let out = eval1(&Sdpa { causal: false }, vec![q, k, v, mask]).unwrap();
        let o = out.values::<f64>().unwrap();
        assert_eq!(o[0], 20.);
        assert!(o[1].is_nan(), "a fully masked row is NaN");
    }

    #[test]
    fn shapes() {
        let f = infer1(
            &Sdpa { causal: false },
            &[
                fact(F32, "2,4,7,8"),
                fact(F32, "1,4,5,8"),
                fact(F32, "2,1,5,3"),
            ],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[2,4,7,3]");
        let e = infer1(
            &Sdpa { causal: false },
            &[fact(F32, "2,7,8"), fact(F32, "2,5,6"), fact(F32, "2,5,3")],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
