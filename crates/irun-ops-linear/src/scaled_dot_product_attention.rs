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
use crate::kernel::try_zeroed;
use crate::op::{codes, expect_inputs_between, same_element_type, Op, OpError, Value};
use crate::par;
use crate::simd;

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
        expect_inputs_between(inputs, 3, 5, NAME)?;
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

    fn eval_shared_heads(
        &self,
        inputs: &mut Vec<Value>,
        groups: usize,
    ) -> Result<Option<Vec<Value>>, OpError> {
        let heads = |slot: usize| {
            let s = inputs.get(slot)?.shape();
            (s.len() >= 3).then(|| s[s.len() - 3])
        };
        let (Some(q), Some(k), Some(v)) = (heads(0), heads(1), heads(2)) else {
            return Ok(None);
        };
        let rank = inputs[0].shape().len();
        let served = groups > 1
            && q == k * groups
            && k == v
            && [1, 2].iter().all(|&s| inputs[s].shape().len() == rank)
            && matches!(
                inputs[0].element_type(),
                ElementType::F32 | ElementType::F64
            );
        if !served {
            return Ok(None);
        }
        let out = match inputs[0].element_type() {
            ElementType::F32 => self.run_grouped::<f32>(inputs, groups),
            _ => self.run_grouped::<f64>(inputs, groups),
        }?;
        Ok(Some(vec![Arc::new(out)]))
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

/// Multiply-adds a parallel chunk of batch items should have at least.
const PAR_MIN_MACS: usize = 1 << 18;

/// How many of `batches` batch items (of `macs` multiply-adds each, query heads in runs of
/// `groups` that share their keys and values) a parallel chunk takes: whole runs, so that a
/// run's keys and values are read from cache after its first head; at least
/// [`PAR_MIN_MACS`] (small attention, BERT's 2 heads of 32 x 32, stays on the calling
/// thread: measured 30 us on one thread, 48 us split in two); and as many chunks as
/// threads, or a multiple, so that no thread waits on another's extra chunk. A decode
/// step's 12 heads over a 1000-token cache were one chunk (a thread idle through the
/// attention); they are now four runs of three, two a thread.
fn items_per_chunk(batches: usize, macs: usize, groups: usize, threads: usize) -> usize {
    let run = if groups > 1 && batches.is_multiple_of(groups) {
        groups
    } else {
        1
    };
    let runs = batches / run;
    let per_run = macs.max(1) * run;
    let mut chunks = par::pieces_for(runs, PAR_MIN_MACS.div_ceil(per_run), threads);
    if chunks > 1 {
        chunks = chunks.div_ceil(threads) * threads;
    }
    runs.div_ceil(chunks.clamp(1, runs.max(1))).max(1) * run
}

/// A float the attention computes in.
trait Real: Mul + Copy + Default + Into<f64> {
    fn from_f64(x: f64) -> Self;
    /// `row` becomes its softmax (a row of -inf: NaN, as `exp(-inf - -inf)`).
    fn softmax(row: &mut [Self]);
}
impl Real for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    /// rten-vecmath's SIMD softmax, as SoftMax runs it.
    fn softmax(row: &mut [f32]) {
        if row.iter().all(|&x| x == f32::NEG_INFINITY) {
            row.fill(f32::NAN);
            return;
        }
        rten_simd::SimdOp::dispatch(rten_vecmath::Softmax::new_mut(row));
    }
}
impl Real for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn softmax(row: &mut [f64]) {
        let max = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
        row.iter_mut().for_each(|x| *x = (*x - max).exp());
        let sum: f64 = row.iter().sum();
        row.iter_mut().for_each(|x| *x /= sum);
    }
}

impl Sdpa {
    fn run<T: Real>(&self, inputs: &[Value]) -> Result<Tensor, OpError> {
        self.run_grouped::<T>(inputs, 1)
    }

    /// [`Sdpa::run`] with keys and values whose heads (the last batch dim) are each shared by
    /// `groups` query heads in a row. The query's head dim is read as `[heads / groups,
    /// groups]`, the keys' and values' as `[heads, 1]` and a mask's as `[1, 1]` or `[heads /
    /// groups, groups]`: the batch items are those of the repeated inputs, in the same order,
    /// each computed as before.
    fn run_grouped<T: Real>(&self, inputs: &[Value], groups: usize) -> Result<Tensor, OpError> {
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
        let (mut bq, mut bk, mut bv, mut bm) = (batch(qs), batch(ks), batch(vs), batch(&ms));
        if groups > 1 {
            // Each batch shape's last dim split in two, the keys' and values' heads shared.
            let split = |b: &mut Vec<usize>, shared: bool| {
                if let Some(h) = b.pop() {
                    let (outer, inner) = match (shared, h) {
                        (true, h) => (h, 1),
                        (false, 1) => (1, 1),
                        (false, h) => (h / groups, groups),
                    };
                    b.extend([outer, inner]);
                }
            };
            let (qh, kh) = (bq.last().copied(), bk.last().copied());
            let whole = |h: Option<usize>| h.is_some_and(|h| h == 1 || h == qh.unwrap_or(0));
            let mask_heads = bm.last().copied();
            if qh != kh.map(|k| k * groups)
                || bv.last() != kh.as_ref()
                || (mask_heads.is_some() && !whole(mask_heads))
            {
                return Err(bad(1));
            }
            split(&mut bq, false);
            split(&mut bk, true);
            split(&mut bv, true);
            split(&mut bm, false);
        }
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
        // The mask's values looked up once: a boolean mask, a float one, or none (0).
        let mask_bool = mask.and_then(|t| t.values::<bool>());
        let mask_real = mask.and_then(|t| t.values::<T>());
        // Row `i` of mask item `m`: its first element and the step along the keys.
        let mask_row = |m: usize, i: usize| -> (usize, usize) {
            let off = m * ml * msd + (if ml == 1 { 0 } else { i }) * msd;
            (off, usize::from(msd != 1))
        };
        // One batch item: scores, softmax rows, scores x v into `out` (l x ev).
        let attend = |b: usize, scores: &mut [T], out: &mut [T]| {
            let [iq, ik, iv, im] = starts[b];
            T::gemm(
                l,
                e,
                s,
                &qv[iq * l * e..(iq + 1) * l * e],
                (e as isize, 1),
                &kv[ik * s * e..(ik + 1) * s * e],
                (1, e as isize),
                scores,
            );
            for (i, row) in scores.chunks_mut(s.max(1)).enumerate().take(l) {
                // `x * scale + bias` in f64 for each score, the bias the mask's (0 without
                // one) up to the causal end, -inf past it. One loop per kind of mask, so
                // that each vectorises (a lookup of the mask's type a score was 5% of a
                // 1000-token prefill).
                let open = if self.causal {
                    (i + 1).min(row.len())
                } else {
                    row.len()
                };
                let (at, step) = mask_row(im, i);
                let (open_part, closed) = row.split_at_mut(open);
                let scaled = |x: T, bias: f64| T::from_f64(x.into() * scale + bias);
                simd::widest(
                    #[inline(always)]
                    || {
                        match (mask_bool, mask_real) {
                            (Some(b), _) => {
                                for (j, x) in open_part.iter_mut().enumerate() {
                                    let bias = if b[at + j * step] {
                                        0.0
                                    } else {
                                        f64::NEG_INFINITY
                                    };
                                    *x = scaled(*x, bias);
                                }
                            }
                            (None, Some(v)) => {
                                for (j, x) in open_part.iter_mut().enumerate() {
                                    *x = scaled(*x, v[at + j * step].into());
                                }
                            }
                            (None, None) => {
                                for x in open_part.iter_mut() {
                                    *x = scaled(*x, 0.0);
                                }
                            }
                        }
                        for x in closed.iter_mut() {
                            *x = scaled(*x, f64::NEG_INFINITY);
                        }
                    },
                );
                T::softmax(row);
            }
            T::gemm(
                l,
                s,
                ev,
                scores,
                (s as isize, 1),
                &vv[iv * s * ev..(iv + 1) * s * ev],
                (ev as isize, 1),
                out,
            );
        };
        let mut flat = try_zeroed::<T>(batches * l * ev)?;
        let block = l * ev;
        if block > 0 {
            let items = items_per_chunk(batches, l * s * (e + ev), groups, par::threads());
            par::for_each_chunk_mut(&mut flat, items * block, &|start, chunk| {
                let mut scores = vec![T::default(); l * s];
                for (k, out) in chunk.chunks_mut(block).enumerate() {
                    attend(start / block + k, &mut scores, out);
                }
            });
        }
        let mut shape = bc.out_shape().to_vec();
        if groups > 1 {
            // The split head dim joined again: the repeated inputs' output shape.
            let inner = shape.pop().unwrap_or(1);
            if let Some(outer) = shape.last_mut() {
                *outer *= inner;
            }
        }
        shape.extend([l, ev]);
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

    /// Each of `heads` heads (dim 1 of `[1, heads, s, e]`) repeated `groups` times in a row.
    fn repeat_heads(x: &Tensor, groups: usize) -> Tensor {
        let s = x.shape();
        let block = s[2] * s[3];
        let v = x.values::<f32>().unwrap();
        let out: Vec<f32> = v
            .chunks(block)
            .flat_map(|h| std::iter::repeat_n(h, groups).flatten().copied())
            .collect();
        Tensor::from_f32(vec![s[0], s[1] * groups, s[2], s[3]], out).unwrap()
    }

    /// A decode step's heads over a long cache are cut into as many chunks as threads (or a
    /// multiple), of whole runs of the heads that share keys and values; small attention is
    /// one chunk, and so is everything on one thread.
    #[test]
    fn chunks_of_heads_are_whole_runs_one_or_more_per_thread() {
        // Llama's 12 query heads on 4 shared heads, one query row over 1000 keys of 64 + 64.
        let macs = 1000 * 128;
        assert_eq!(items_per_chunk(12, macs, 3, 2), 3);
        assert_eq!(items_per_chunk(12, macs, 3, 1), 12);
        assert_eq!(items_per_chunk(12, macs, 3, 4), 3);
        // Runs of 4 sharing heads stay whole: 3 chunks of 4, not 4 of 3.
        assert_eq!(items_per_chunk(12, macs, 4, 2), 4);
        // Without shared heads, each chunk at least PAR_MIN_MACS (3 heads): 4 chunks of 3 on
        // 2 threads, 6 of 2 on 3 threads.
        assert_eq!(items_per_chunk(12, macs, 1, 2), 3);
        assert_eq!(items_per_chunk(12, macs, 1, 3), 2);
        // Each chunk at least PAR_MIN_MACS: 8 heads of 64K make two chunks of four.
        assert_eq!(items_per_chunk(8, 1 << 16, 1, 2), 4);
        // BERT's 2 heads of 32 x 32 (64K each) stay one chunk.
        assert_eq!(items_per_chunk(2, 32 * 32 * 64, 1, 2), 2);
        // A short cache: 12 heads of 16 keys, one chunk.
        assert_eq!(items_per_chunk(12, 16 * 128, 3, 2), 12);
        // 7 runs of PAR_MIN_MACS on 2 threads: 7 chunks (8 rounded to the runs there are).
        assert_eq!(items_per_chunk(7, PAR_MIN_MACS, 1, 2), 1);
    }

    /// Keys and values with each head shared by 3 query heads in a row give, bit for bit,
    /// what the repeated heads give: with masks of one head and of every head, boolean and
    /// float, causal, and the inputs the shared form does not serve left to `eval`.
    #[test]
    fn shared_heads_give_the_repeated_heads_bits() {
        let f = |shape: &[usize], seed: usize| {
            let n: usize = shape.iter().product();
            let v = (0..n)
                .map(|i| ((i * 37 + seed * 11) % 23) as f32 * 0.13 - 1.4)
                .collect();
            Arc::new(Tensor::from_f32(shape.to_vec(), v).unwrap())
        };
        let (q, k, v) = (
            f(&[1, 6, 2, 4], 1),
            f(&[1, 2, 5, 4], 2),
            f(&[1, 2, 5, 3], 3),
        );
        let bool_mask = |heads: usize| {
            let n = heads * 2 * 5;
            Arc::new(
                Tensor::from_bool(vec![1, heads, 2, 5], (0..n).map(|i| i % 4 != 1).collect())
                    .unwrap(),
            )
        };
        let masks: Vec<Option<Value>> = vec![
            None,
            Some(bool_mask(1)),
            Some(bool_mask(6)),
            Some(f(&[1, 6, 2, 5], 4)),
        ];
        for causal in [false, true] {
            let op = Sdpa { causal };
            for mask in &masks {
                let mut inputs = vec![q.clone(), k.clone(), v.clone()];
                inputs.extend(mask.clone());
                let mut repeated = inputs.clone();
                repeated[1] = Arc::new(repeat_heads(&k, 3));
                repeated[2] = Arc::new(repeat_heads(&v, 3));
                let want = op.eval(repeated).unwrap();
                let got = op
                    .eval_shared_heads(&mut inputs, 3)
                    .unwrap()
                    .expect("served");
                let bits = |t: &Tensor| {
                    t.values::<f32>()
                        .unwrap()
                        .iter()
                        .map(|x| x.to_bits())
                        .collect::<Vec<_>>()
                };
                assert_eq!(got[0].shape(), want[0].shape());
                assert_eq!(
                    bits(&got[0]),
                    bits(&want[0]),
                    "causal {causal}, mask {:?}",
                    mask.as_ref().map(|m| m.shape().to_vec())
                );
            }
        }
        // Heads that are not the keys' times the groups, or other types: not served.
        let op = Sdpa { causal: false };
        let mut inputs = vec![q.clone(), k.clone(), v.clone()];
        assert!(op.eval_shared_heads(&mut inputs, 2).unwrap().is_none());
        assert_eq!(inputs.len(), 3);
        let half = Arc::new(narrow(&q, F16).unwrap());
        let mut inputs = vec![half, k, v];
        assert!(op.eval_shared_heads(&mut inputs, 3).unwrap().is_none());
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

    /// f32 (SIMD softmax) against f64 on the same values: several heads, a float mask
    /// broadcast over them, causal, and a boolean mask with a fully masked row (NaN in both).
    #[test]
    fn f32_matches_f64() {
        let (b, h, l, s, e) = (2, 3, 5, 7, 4);
        let vals = |n: usize, seed: usize| -> Vec<f64> {
            (0..n)
                .map(|i| ((i * 7919 + seed) % 61) as f64 / 20.0 - 1.5)
                .collect()
        };
        let (q, k, v) = (
            vals(b * h * l * e, 1),
            vals(b * h * s * e, 2),
            vals(b * h * s * e, 3),
        );
        let m = vals(l * s, 4);
        let mut bools: Vec<bool> = (0..l * s).map(|i| i % 3 != 0).collect();
        bools[s..2 * s].fill(false);
        let narrow32 = |shape: &[usize], v: &[f64]| {
            Tensor::from_f32(shape.to_vec(), v.iter().map(|&x| x as f32).collect()).unwrap()
        };
        let masks: [Option<(Tensor, Tensor)>; 3] = [
            None,
            Some((narrow32(&[l, s], &m), t(&[l, s], &m))),
            Some((
                Tensor::from_bool(vec![l, s], bools.clone()).unwrap(),
                Tensor::from_bool(vec![l, s], bools).unwrap(),
            )),
        ];
        for causal in [false, true] {
            for mask in &masks {
                let mut narrow = vec![
                    narrow32(&[b, h, l, e], &q),
                    narrow32(&[b, h, s, e], &k),
                    narrow32(&[b, h, s, e], &v),
                ];
                let mut wide = vec![
                    t(&[b, h, l, e], &q),
                    t(&[b, h, s, e], &k),
                    t(&[b, h, s, e], &v),
                ];
                if let Some((m32, m64)) = mask {
                    narrow.push(m32.clone());
                    wide.push(m64.clone());
                }
                let got = eval1(&Sdpa { causal }, narrow).unwrap();
                let want = eval1(&Sdpa { causal }, wide).unwrap();
                for (i, (&g, &w)) in got
                    .values::<f32>()
                    .unwrap()
                    .iter()
                    .zip(want.values::<f64>().unwrap())
                    .enumerate()
                {
                    let close = (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs());
                    assert!(
                        close || (g.is_nan() && w.is_nan()),
                        "causal={causal} element {i}: {g} vs {w}"
                    );
                }
            }
        }
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
