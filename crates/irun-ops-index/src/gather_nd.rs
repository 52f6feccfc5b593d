//! GatherND-5 and -8: slices of `data` addressed by index tuples. With `batch_dims` b (>= 0,
//! default 0) and indices `[B1 .. Bb, I1 .. Im, k]` (i32/i64, `k <= rank(data) - b`, the
//! first b dims equal to the data's), each tuple picks `data[batch.., t1 .. tk, ...]`.
//! - v8 output: `indices.shape[:-1] + data.shape[b + k:]`;
//! - v5 output: the same with the b batch dims flattened into one.
//!
//! Negative indices count from the end (the reference and OpenVINO CPU do); one outside
//! `[-d, d-1]` is a run-time error naming its position. Copy-like: dispatched on width.

use irun_tensor::{with_words, Dim, ElementType, PartialShape, Word, WordVec};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::{count_from_end, try_zeroed, IndexValues};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::util::{no_strings, output};

#[derive(Debug)]
pub struct GatherNd {
    pub batch_dims: usize,
    pub v8: bool,
}

fn read(a: &AttrReader, v8: bool) -> Result<Box<dyn Op>, OpError> {
    let b = a.i64_or("batch_dims", Some(0))?;
    let batch_dims = usize::try_from(b).map_err(|_| {
        OpError::attribute("batch_dims", format!("batch_dims must be >= 0, got {b}"))
    })?;
    Ok(Box::new(GatherNd { batch_dims, v8 }))
}

pub fn build_v5(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, false)
}

pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, true)
}

impl GatherNd {
    fn name_str(&self) -> &'static str {
        if self.v8 {
            "GatherND-8"
        } else {
            "GatherND-5"
        }
    }

    fn bad(&self, code: &'static str, m: String) -> OpError {
        OpError::input(1, code, format!("{}: {m}", self.name_str()))
    }

    /// The output dims from the data's and the indices' (static or not).
    fn out_dims(&self, data: &[Dim], idx: &[Dim]) -> Result<Vec<Dim>, OpError> {
        let b = self.batch_dims;
        if idx.len() < b + 1 || data.len() < b {
            return Err(self.bad(
                codes::RANK,
                format!(
                    "indices of rank {} and data of rank {} for batch_dims {b}",
                    idx.len(),
                    data.len()
                ),
            ));
        }
        let mut batch = Vec::with_capacity(b);
        for i in 0..b {
            batch.push(data[i].intersect(idx[i]).ok_or_else(|| {
                self.bad(
                    codes::SHAPE,
                    format!("batch dim {i} differs between data and indices"),
                )
            })?);
        }
        let Some(k) = idx[idx.len() - 1].get_static() else {
            return Err(self.bad(codes::SHAPE, "the indices' last dim must be static".into()));
        };
        let k = k as usize;
        if k < 1 || b + k > data.len() {
            return Err(self.bad(
                codes::SHAPE,
                format!(
                    "tuples of {k} for data of rank {} with {b} batch dims",
                    data.len()
                ),
            ));
        }
        let mut out = if self.v8 {
            batch
        } else {
            let prod = batch
                .iter()
                .try_fold(1u64, |a, d| d.get_static().and_then(|v| a.checked_mul(v)));
            vec![prod.map_or(Dim::DYNAMIC, Dim::fixed)]
        };
        out.extend_from_slice(&idx[b..idx.len() - 1]);
        out.extend_from_slice(&data[b + k..]);
        Ok(out)
    }
}

impl Op for GatherNd {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        let (data, idx) = (&inputs[0], &inputs[1]);
        if !matches!(
            idx.ty,
            ElementType::I32 | ElementType::I64 | ElementType::Dynamic
        ) {
            return Err(self.bad(
                codes::ELEMENT_TYPE,
                format!("indices must be i32 or i64, got {}", idx.ty),
            ));
        }
        let shape = match (data.shape.dims(), idx.shape.dims()) {
            (Some(d), Some(i)) => PartialShape::new(self.out_dims(d, i)?),
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, indices] = take_inputs::<2>(inputs, self.name())?;
        let (ds, is) = (data.shape(), indices.shape());
        let fixed = |s: &[usize]| s.iter().map(|&d| Dim::fixed(d as u64)).collect::<Vec<_>>();
        let out_shape: Vec<usize> = self
            .out_dims(&fixed(ds), &fixed(is))?
            .iter()
            .map(|d| d.get_static().unwrap_or(0) as usize)
            .collect();
        let b = self.batch_dims;
        let k = is[is.len() - 1];
        let batches: usize = is[..b].iter().product();
        let tuples_per_batch: usize = is[b..is.len() - 1].iter().product();
        let slice: usize = ds[b + k..].iter().product();
        let batch_stride: usize = ds[b..].iter().product();
        let idx = IndexValues::of(&indices)
            .ok_or_else(|| self.bad(codes::ELEMENT_TYPE, "indices must be integers".into()))?
            .to_vec();
        // Each tuple's offset in its batch, checked.
        let mut offsets = Vec::with_capacity(batches * tuples_per_batch);
        for (t, tuple) in idx
            .chunks(k.max(1))
            .enumerate()
            .take(batches * tuples_per_batch)
        {
            let mut off = 0usize;
            for (j, &v) in tuple.iter().enumerate() {
                let d = ds[b + j] as i64;
                let v2 = count_from_end(v, d);
                if !(0..d).contains(&v2) {
                    return Err(OpError::input(
                        1,
                        codes::INDEX_OUT_OF_RANGE,
                        format!(
                            "{}: index {v} at position {:?} of input 1 (indices) is out of range [{}, {}]",
                            self.name(),
                            crate::kernel::coordinates(is, t * k + j),
                            -d,
                            d - 1
                        ),
                    ));
                }
                off = off * ds[b + j] + v2 as usize;
            }
            offsets.push((t / tuples_per_batch.max(1)) * batch_stride + off * slice);
        }
        let words = data.words().ok_or_else(|| no_strings(self.name()))?;
        let out = with_words!(words, w => copy_slices(w, &offsets, slice)?);
        Ok(vec![output(data.element_type(), out_shape, out)?])
    }
}

fn copy_slices<W: Word>(src: &[W], offsets: &[usize], slice: usize) -> Result<WordVec, OpError> {
    let mut out = try_zeroed::<W>(offsets.len() * slice)?;
    if slice > 0 {
        par::for_each_split_mut(&mut out, slice, &|at, chunk| {
            for (i, dst) in chunk.chunks_mut(slice).enumerate() {
                let o = offsets[at / slice + i];
                dst.copy_from_slice(&src[o..o + slice]);
            }
        });
    }
    Ok(W::into_word_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// ONNX's GatherND examples.
    #[test]
    fn onnx_examples() {
        let op = GatherNd {
            batch_dims: 0,
            v8: true,
        };
        let data = i32s(&[2, 2], &[0, 1, 2, 3]);
        let out = run(&op, vec![data.clone(), i64s(&[2, 2], &[0, 0, 1, 1])]).unwrap();
        assert_eq!(out[0], i32s(&[2], &[0, 3]));
        let out = run(&op, vec![data, i64s(&[2, 1], &[1, 0])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 2], &[2, 3, 0, 1]));
        let data = i32s(&[2, 2, 2], &[0, 1, 2, 3, 4, 5, 6, 7]);
        let out = run(&op, vec![data.clone(), i64s(&[2, 1, 2], &[0, 1, 1, 0])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 1, 2], &[2, 3, 4, 5]));
        // batch_dims 1: batch 0 takes row 1, batch 1 takes row 0.
        let op = GatherNd {
            batch_dims: 1,
            v8: true,
        };
        let out = run(&op, vec![data.clone(), i64s(&[2, 1], &[1, 0])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 2], &[2, 3, 4, 5]));
        // Negative indices count from the end.
        let out = run(&op, vec![data, i64s(&[2, 1], &[-1, -2])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 2], &[2, 3, 4, 5]));
    }

    /// The two versions' shapes: data [2, 3, 4, 5], indices [2, 3, 6, 1], batch_dims 2.
    #[test]
    fn v5_flattens_the_batch_dims() {
        let (d, i) = (fact(F32, "2,3,4,5"), fact(I64, "2,3,6,1"));
        let v8 = GatherNd {
            batch_dims: 2,
            v8: true,
        };
        assert_eq!(
            v8.infer(&[d.clone(), i.clone()]).unwrap()[0]
                .shape
                .to_string(),
            "[2,3,6,5]"
        );
        let v5 = GatherNd {
            batch_dims: 2,
            v8: false,
        };
        assert_eq!(v5.infer(&[d, i]).unwrap()[0].shape.to_string(), "[6,6,5]");
        let e = v8
            .infer(&[fact(F32, "2,3"), fact(I64, "2,3,2")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let e = run(
            &GatherNd {
                batch_dims: 0,
                v8: true,
            },
            vec![i32s(&[2], &[1, 2]), i64s(&[1, 1], &[2])],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
    }
}
