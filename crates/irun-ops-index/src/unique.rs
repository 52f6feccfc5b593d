//! Unique-10: the distinct elements of the flattened data, or with an `axis` input (a constant
//! i32/i64 scalar or one element) the distinct slices along it, compared element by element.
//! Outputs: the unique values (`shape[axis] = U`, or 1-D), `indices[U]` (first occurrence),
//! `rev_indices` (per element or slice, into output 1) and `counts[U]`. `sorted` (default
//! true): ascending, else in order of first occurrence. Equality is `==` (`-0.0` and `+0.0`
//! merge); NaN sorts last and each NaN is distinct (as `==` says; OpenVINO's result is
//! undefined there). `index_element_type` and `count_element_type`: i64 (default) or i32.

use std::cmp::Ordering;
use std::sync::Arc;

use irun_tensor::{with_any_scalar, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, take_inputs, Op, OpError, Value};
use crate::util::{ints, norm_axis};

#[derive(Debug)]
pub struct Unique {
    pub sorted: bool,
    pub index_type: ElementType,
    pub count_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let ty = |name: &'static str| -> Result<ElementType, OpError> {
        let t = match a.get(name) {
            None => ElementType::I64,
            Some(_) => a.element_type(name)?,
        };
        if !matches!(t, ElementType::I32 | ElementType::I64) {
            return Err(OpError::attribute(
                name,
                format!("Unique-10 {name} must be i32 or i64"),
            ));
        }
        Ok(t)
    };
    Ok(Box::new(Unique {
        sorted: a.bool_or("sorted", true)?,
        index_type: ty("index_element_type")?,
        count_type: ty("count_element_type")?,
    }))
}

/// Lexicographic order of two slices, NaN after every number.
fn cmp_slices<T: PartialOrd>(a: &[T], b: &[T]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match x.partial_cmp(y) {
            Some(o) => o,
            #[allow(clippy::eq_op)]
            None => (x != x).cmp(&(y != y)),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn ints_tensor(ty: ElementType, v: Vec<i64>) -> Result<Value, OpError> {
    let n = v.len();
    let t = if ty == ElementType::I32 {
        Tensor::from_i32(vec![n], v.into_iter().map(|x| x as i32).collect())
    } else {
        Tensor::from_i64(vec![n], v)
    };
    t.map(Arc::new)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

impl Unique {
    fn run<T: Scalar + PartialOrd>(
        &self,
        x: &Tensor,
        axis: Option<usize>,
    ) -> Result<Vec<Value>, OpError> {
        let v = x
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let s = x.shape();
        // Slices as (outer, along, inner): a slice k is the elements with axis coordinate k.
        let (outer, along, inner): (usize, usize, usize) = match axis {
            Some(a) => (s[..a].iter().product(), s[a], s[a + 1..].iter().product()),
            None => (1, v.len(), 1),
        };
        let slice = |k: usize| -> Vec<T> {
            (0..outer)
                .flat_map(|o| (0..inner).map(move |i| (o, i)))
                .map(|(o, i)| v[(o * along + k) * inner + i])
                .collect()
        };
        let slices: Vec<Vec<T>> = (0..along).map(slice).collect();
        // Groups in order of first occurrence.
        let mut firsts: Vec<usize> = Vec::new();
        let mut rev = vec![0usize; along];
        let mut counts: Vec<i64> = Vec::new();
        let mut order: Vec<usize> = (0..along).collect();
        order.sort_by(|&a, &b| cmp_slices(&slices[a], &slices[b]).then(a.cmp(&b)));
        let mut group_of = vec![0usize; along];
        let mut g = 0;
        for (n, &k) in order.iter().enumerate() {
            let same = n > 0 && {
                let p = order[n - 1];
                slices[p].iter().zip(&slices[k]).all(|(a, b)| a == b)
            };
            if !same {
                firsts.push(k);
                counts.push(0);
                g = firsts.len() - 1;
            }
            group_of[k] = g;
            counts[g] += 1;
        }
        // Groups are in sorted order now; with sorted=false, renumber by first occurrence.
        let mut rank: Vec<usize> = (0..firsts.len()).collect();
        if !self.sorted {
            rank.sort_by_key(|&g| firsts[g]);
        }
        let mut position = vec![0usize; firsts.len()];
        for (p, &g) in rank.iter().enumerate() {
            position[g] = p;
        }
        for k in 0..along {
            rev[k] = position[group_of[k]];
        }
        let u = firsts.len();
        let out_shape = match axis {
            Some(a) => {
                let mut shape = s.to_vec();
                shape[a] = u;
                shape
            }
            None => vec![u],
        };
        let mut vals = vec![T::default(); outer * u * inner];
        for (p, &g) in rank.iter().enumerate() {
            let src = &slices[firsts[g]];
            for o in 0..outer {
                for i in 0..inner {
                    vals[(o * u + p) * inner + i] = src[o * inner + i];
                }
            }
        }
        let values = Tensor::new(x.element_type(), out_shape, T::wrap(vals))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![
            Arc::new(values),
            ints_tensor(
                self.index_type,
                rank.iter().map(|&g| firsts[g] as i64).collect(),
            )?,
            ints_tensor(self.index_type, rev.iter().map(|&r| r as i64).collect())?,
            ints_tensor(self.count_type, rank.iter().map(|&g| counts[g]).collect())?,
        ])
    }
}

impl Op for Unique {
    fn name(&self) -> &'static str {
        "Unique-10"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 1, 2, "Unique-10")?;
        let x = &inputs[0];
        let total = x
            .shape
            .to_static()
            .map(|s| s.iter().product::<usize>() as u64);
        let upto = |n: Option<u64>| Dim::interval(0, n).unwrap_or(Dim::DYNAMIC);
        let axis = inputs
            .get(1)
            .and_then(crate::util::known_ints)
            .and_then(|v| v.first().copied());
        let (values, along) = match (inputs.len(), x.shape.dims(), axis) {
            (1, _, _) => (PartialShape::new(vec![upto(total)]), total),
            (_, Some(d), Some(a)) => {
                let k = norm_axis(a, d.len(), Some(1), self.name())?;
                let mut out = d.to_vec();
                out[k] = upto(d[k].max());
                (PartialShape::new(out), d[k].get_static())
            }
            _ => (PartialShape::dynamic_rank(), None),
        };
        let u = upto(total);
        Ok(vec![
            Fact::new(x.ty, values),
            Fact::new(self.index_type, PartialShape::new(vec![u])),
            Fact::new(
                self.index_type,
                PartialShape::new(vec![along.map_or(Dim::DYNAMIC, Dim::fixed)]),
            ),
            Fact::new(self.count_type, PartialShape::new(vec![u])),
        ])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let (x, axis) = match inputs.len() {
            1 => (take_inputs::<1>(inputs, self.name())?[0].clone(), None),
            _ => {
                let [x, a] = take_inputs::<2>(inputs, self.name())?;
                let a = *ints(&a, 1)?
                    .first()
                    .ok_or_else(|| OpError::input(1, codes::RUN_SHAPE, "empty axis"))?;
                let k = norm_axis(a, x.shape().len(), Some(1), self.name())?;
                (x, Some(k))
            }
        };
        let ty = x.element_type();
        with_any_scalar!(ty, T => self.run::<T>(&x, axis), else Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("Unique-10 on {ty}"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn unique(sorted: bool) -> Unique {
        Unique {
            sorted,
            index_type: ElementType::I64,
            count_type: ElementType::I64,
        }
    }

    #[test]
    fn sorted_and_first_occurrence_orders() {
        let x = i32s(&[6], &[3, 1, 3, 2, 1, 3]);
        let out = run(&unique(true), vec![x.clone()]).unwrap();
        assert_eq!(out[0], i32s(&[3], &[1, 2, 3]));
        assert_eq!(out[1], i64s(&[3], &[1, 3, 0]));
        assert_eq!(out[2], i64s(&[6], &[2, 0, 2, 1, 0, 2]));
        assert_eq!(out[3], i64s(&[3], &[2, 1, 3]));
        let out = run(&unique(false), vec![x]).unwrap();
        assert_eq!(out[0], i32s(&[3], &[3, 1, 2]));
        assert_eq!(out[2], i64s(&[6], &[0, 1, 0, 2, 1, 0]));
        let out = run(&unique(true), vec![f32s(&[2], &[-0., 0.])]).unwrap();
        assert_eq!(out[0].len(), 1, "-0 and +0 merge");
    }

    #[test]
    fn slices_along_an_axis() {
        let x = i32s(&[2, 3], &[1, 0, 1, 2, 5, 2]);
        let out = run(&unique(true), vec![x, i64s(&[], &[1])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 2], &[0, 1, 5, 2]));
        assert_eq!(out[2], i64s(&[3], &[1, 0, 1]));
    }
}
