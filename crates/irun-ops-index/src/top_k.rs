//! TopK-1, -3 and -11: the K largest (`mode="max"`) or smallest (`min`) values along `axis`
//! and their indices. `axis`, `mode` and `sort` are required (omitted, reference and CPU
//! disagree); K is a rank-0 integer input in `0..=d` (past the dim is an error; the reference
//! corrupts its heap there). Order: by value, ties to the lower index (the reference, so
//! always "stable"); `sort="index"` re-sorts the K by index; `sort="none"` keeps value order.
//! NaN counts as larger than every number (torch's topk; OpenVINO's comparator breaks).
//! Outputs: values (data's type), indices (`index_element_type`, i32 default).

use std::cmp::Ordering;
use std::sync::Arc;

use irun_tensor::{with_number, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::try_zeroed;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug)]
pub struct TopK {
    pub version: u32,
    pub axis: i64,
    pub largest: bool,
    pub sort_by_index: bool,
    pub index_type: ElementType,
}

fn build(a: &AttrReader, version: u32) -> Result<Box<dyn Op>, OpError> {
    let axis = a.i64_or("axis", None)?;
    a.required("mode")?;
    let largest = a.enum_or("mode", &["max", "min"], "max")? == "max";
    a.required("sort")?;
    let sort_by_index = a.enum_or("sort", &["value", "index", "none"], "value")? == "index";
    let index_type = if version == 1 {
        ElementType::I32
    } else {
        match a.get("index_element_type") {
            None => ElementType::I32,
            Some(_) => a.element_type("index_element_type")?,
        }
    };
    if !matches!(index_type, ElementType::I32 | ElementType::I64) {
        return Err(OpError::attribute(
            "index_element_type",
            "TopK index_element_type must be i32 or i64",
        ));
    }
    if version == 11 {
        // Ties always go to the lower index, which is what `stable` asks for.
        a.bool_or("stable", false)?;
    }
    Ok(Box::new(TopK {
        version,
        axis,
        largest,
        sort_by_index,
        index_type,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 1)
}
pub fn build_v3(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 3)
}
pub fn build_v11(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 11)
}

/// A total order for selection: NaN above every number.
fn order<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    match a.partial_cmp(b) {
        Some(o) => o,
        #[allow(clippy::eq_op)]
        None => (a == a).cmp(&(b == b)).reverse(),
    }
}

impl TopK {
    fn run<T: Scalar + PartialOrd>(
        &self,
        x: &Tensor,
        axis: usize,
        k: usize,
    ) -> Result<(Tensor, Vec<i64>), OpError> {
        let v = x
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let s = x.shape();
        let (outer, d, inner): (usize, usize, usize) = (
            s[..axis].iter().product(),
            s[axis],
            s[axis + 1..].iter().product(),
        );
        let mut slices: Vec<Vec<(T, usize)>> = (0..outer * inner).map(|_| Vec::new()).collect();
        par::for_each_mut(&mut slices, &|p, best| {
            let (o, i) = (p / inner, p % inner);
            let mut all: Vec<(T, usize)> =
                (0..d).map(|j| (v[(o * d + j) * inner + i], j)).collect();
            all.sort_by(|a, b| {
                let by_value = order(&a.0, &b.0);
                (if self.largest {
                    by_value.reverse()
                } else {
                    by_value
                })
                .then(a.1.cmp(&b.1))
            });
            all.truncate(k);
            if self.sort_by_index {
                all.sort_by_key(|e| e.1);
            }
            *best = all;
        });
        let mut shape = s.to_vec();
        shape[axis] = k;
        let n = outer * k * inner;
        let (mut vals, mut idx) = (try_zeroed::<T>(n)?, vec![0i64; n]);
        for (p, best) in slices.iter().enumerate() {
            let (o, i) = (p / inner, p % inner);
            for (r, &(val, j)) in best.iter().enumerate() {
                vals[(o * k + r) * inner + i] = val;
                idx[(o * k + r) * inner + i] = j as i64;
            }
        }
        let values = Tensor::new(x.element_type(), shape, T::wrap(vals))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok((values, idx))
    }
}

impl Op for TopK {
    fn name(&self) -> &'static str {
        match self.version {
            1 => "TopK-1",
            3 => "TopK-3",
            _ => "TopK-11",
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        expect_int_type(inputs, 1, self.name())?;
        if let Some(r) = inputs[1].rank().filter(|&r| r != 0) {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("{}: K must be a scalar (rank 0), got rank {r}", self.name()),
            ));
        }
        let k = known_ints(&inputs[1]).and_then(|v| v.first().copied());
        let shape = match inputs[0].shape.dims() {
            Some(d) => {
                let axis = norm_axis(self.axis, d.len(), None, self.name())?;
                let mut out = d.to_vec();
                out[axis] = match k {
                    Some(k) if k < 0 || d[axis].max().is_some_and(|m| k as u64 > m) => {
                        return Err(OpError::input(
                            1,
                            codes::BAD_VALUE,
                            format!("{}: K = {k} is outside 0..={}", self.name(), d[axis]),
                        ))
                    }
                    Some(k) => Dim::fixed(k as u64),
                    None => Dim::DYNAMIC,
                };
                PartialShape::new(out)
            }
            None => PartialShape::dynamic_rank(),
        };
        Ok(vec![
            Fact::new(inputs[0].ty, shape.clone()),
            Fact::new(self.index_type, shape),
        ])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, k] = take_inputs::<2>(inputs, self.name())?;
        let axis = norm_axis(self.axis, x.shape().len(), None, self.name())?;
        let d = x.shape()[axis];
        let k = ints(&k, 1)?.first().copied().unwrap_or(-1);
        if k < 0 || k as usize > d {
            return Err(OpError::input(
                1,
                codes::BAD_VALUE,
                format!("{}: K = {k} is outside 0..={d}", self.name()),
            ));
        }
        let ty = x.element_type();
        let (values, idx) = with_number!(ty, T => self.run::<T>(&x, axis, k as usize)?,
            else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{} on {ty}", self.name()))));
        let shape = values.shape().to_vec();
        let indices = if self.index_type == ElementType::I32 {
            Tensor::from_i32(shape, idx.iter().map(|&i| i as i32).collect())
        } else {
            Tensor::from_i64(shape, idx)
        }
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(values), Arc::new(indices)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn topk(largest: bool, by_index: bool) -> TopK {
        TopK {
            version: 11,
            axis: -1,
            largest,
            sort_by_index: by_index,
            index_type: ElementType::I32,
        }
    }

    #[test]
    fn orders_ties_and_sorting() {
        let x = f32s(&[5], &[1., 9., 3., 9., 5.]);
        let out = run(&topk(true, false), vec![x.clone(), i64s(&[], &[3])]).unwrap();
        assert_eq!(out[0], f32s(&[3], &[9., 9., 5.]));
        assert_eq!(out[1], i32s(&[3], &[1, 3, 4]), "ties to the lower index");
        let out = run(&topk(true, true), vec![x.clone(), i64s(&[], &[3])]).unwrap();
        assert_eq!(out[1], i32s(&[3], &[1, 3, 4]));
        let out = run(&topk(false, false), vec![x.clone(), i64s(&[], &[2])]).unwrap();
        assert_eq!(out[0], f32s(&[2], &[1., 3.]));
        let out = run(
            &topk(true, false),
            vec![f32s(&[3], &[1., f32::NAN, 2.]), i64s(&[], &[1])],
        )
        .unwrap();
        assert!(
            out[0].values::<f32>().unwrap()[0].is_nan(),
            "NaN is the largest"
        );
        let e = run(&topk(true, false), vec![x, i64s(&[], &[6])]).unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
    }

    #[test]
    fn along_an_inner_axis() {
        let op = TopK {
            version: 3,
            axis: 0,
            largest: true,
            sort_by_index: false,
            index_type: ElementType::I64,
        };
        let out = run(
            &op,
            vec![i32s(&[3, 2], &[1, 6, 5, 2, 3, 4]), i32s(&[], &[1])],
        )
        .unwrap();
        assert_eq!(out[0], i32s(&[1, 2], &[5, 6]));
        assert_eq!(out[1], i64s(&[1, 2], &[1, 0]));
    }
}
