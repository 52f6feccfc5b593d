//! GatherElements-6: `out[..., k, ...] = data[..., indices[..., k, ...], ...]` along `axis`
//! (required). Indices (i32/i64) have data's rank and dims except along the axis; the output
//! has the indices' shape. A negative index counts from the end (as OpenVINO CPU accepts;
//! the reference throws); one outside `[-d, d-1]` is a run-time error naming its position.
//! Copy-like: dispatched on element width.

use irun_tensor::{with_words, Dim, PartialShape, Word, WordVec};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::{coordinates, count_from_end, try_zeroed, IndexValues};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::util::{no_strings, norm_axis, output};

#[derive(Debug)]
pub struct GatherElements {
    pub axis: i64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let axis = a.i64_or("axis", None)?;
    Ok(Box::new(GatherElements { axis }))
}

impl Op for GatherElements {
    fn name(&self) -> &'static str {
        "GatherElements-6"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        let (data, idx) = (&inputs[0], &inputs[1]);
        if !matches!(
            idx.ty,
            irun_tensor::ElementType::I32
                | irun_tensor::ElementType::I64
                | irun_tensor::ElementType::Dynamic
        ) {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!(
                    "GatherElements-6: indices must be i32 or i64, got {}",
                    idx.ty
                ),
            ));
        }
        let shape = match (data.shape.dims(), idx.shape.dims()) {
            (Some(d), Some(i)) => {
                if d.len() != i.len() {
                    return Err(OpError::input(
                        1,
                        codes::RANK,
                        format!(
                            "GatherElements-6: data {} and indices {} differ in rank",
                            data.shape, idx.shape
                        ),
                    ));
                }
                let axis = norm_axis(self.axis, d.len(), None, self.name())?;
                let mut out: Vec<Dim> = Vec::with_capacity(d.len());
                for k in 0..d.len() {
                    out.push(if k == axis {
                        i[k]
                    } else {
                        d[k].intersect(i[k]).ok_or_else(|| {
                            OpError::input(
                                1,
                                codes::SHAPE,
                                format!(
                                    "GatherElements-6: data {} and indices {} differ in dim {k}",
                                    data.shape, idx.shape
                                ),
                            )
                        })?
                    });
                }
                PartialShape::new(out)
            }
            (_, Some(i)) => PartialShape::new(i.to_vec()),
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, indices] = take_inputs::<2>(inputs, self.name())?;
        let (ds, is) = (data.shape(), indices.shape());
        let axis = norm_axis(self.axis, ds.len(), None, self.name())?;
        if ds.len() != is.len() || (0..ds.len()).any(|k| k != axis && ds[k] != is[k]) {
            return Err(OpError::input(
                1,
                codes::RUN_SHAPE,
                format!("GatherElements-6: indices {is:?} do not fit data {ds:?}"),
            ));
        }
        let idx = IndexValues::of(&indices)
            .ok_or_else(|| OpError::input(1, codes::ELEMENT_TYPE, "indices must be integers"))?
            .to_vec();
        let (inner, along_in, along_out): (usize, usize, usize) =
            (ds[axis + 1..].iter().product(), ds[axis], is[axis]);
        let words = data.words().ok_or_else(|| no_strings(self.name()))?;
        let out = with_words!(words, w => gather(w, &idx, inner, along_in, along_out, is)?);
        Ok(vec![output(data.element_type(), is.to_vec(), out)?])
    }
}

fn gather<W: Word>(
    src: &[W],
    idx: &[i64],
    inner: usize,
    along_in: usize,
    along_out: usize,
    ishape: &[usize],
) -> Result<WordVec, OpError> {
    let mut out = try_zeroed::<W>(idx.len())?;
    let d = along_in as i64;
    let bad: std::sync::Mutex<Option<usize>> = std::sync::Mutex::new(None);
    par::for_each_split_mut(
        &mut out,
        crate::kernel::PAR_MIN_ELEMENTS,
        &|start, chunk| {
            for (k, o) in chunk.iter_mut().enumerate() {
                let p = start + k;
                let v = idx[p];
                let v = count_from_end(v, d);
                if !(0..d).contains(&v) {
                    let mut b = bad.lock().unwrap_or_else(|e| e.into_inner());
                    if b.is_none_or(|q| p < q) {
                        *b = Some(p);
                    }
                    continue;
                }
                let (outer, i) = (p / (along_out * inner), p % inner);
                *o = src[(outer * along_in + v as usize) * inner + i];
            }
        },
    );
    if let Some(p) = bad.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(OpError::input(1, codes::INDEX_OUT_OF_RANGE, format!(
            "GatherElements-6: index {} at position {:?} of input 1 (indices) is out of range [{}, {}]",
            idx[p], coordinates(ishape, p), -d, d - 1)));
    }
    Ok(W::into_word_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn spec_example_and_negative_indices() {
        let data = i32s(&[2, 2], &[1, 2, 3, 4]);
        let out = run(
            &GatherElements { axis: 1 },
            vec![data.clone(), i64s(&[2, 2], &[0, 0, 1, 0])],
        )
        .unwrap();
        assert_eq!(out[0], i32s(&[2, 2], &[1, 1, 4, 3]));
        let out = run(
            &GatherElements { axis: 0 },
            vec![data.clone(), i64s(&[1, 2], &[-1, 0])],
        )
        .unwrap();
        assert_eq!(out[0], i32s(&[1, 2], &[3, 2]));
        let e = run(
            &GatherElements { axis: 0 },
            vec![data, i64s(&[1, 2], &[0, 2])],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
        assert!(
            e.message.contains("index 2 at position [0, 1]"),
            "{}",
            e.message
        );
    }
}
