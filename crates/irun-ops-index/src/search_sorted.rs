//! SearchSorted-15: for each value, where it would be inserted in `sorted_sequence` to keep
//! it sorted: the first position with `seq >= v` (the lower bound), or with `right_mode` the
//! first with `seq > v`. The sequence is 1-D (shared by every value) or has the values'
//! leading dims, sorted along its last dim, each row serving the values' row. `output_type`
//! i64 (default) or i32.

use irun_tensor::ElementType;

use crate::attrs::AttrReader;
use crate::bucketize::{index_type, indices, numbers};
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct SearchSorted {
    pub right: bool,
    pub output_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(SearchSorted {
        right: a.bool_or("right_mode", false)?,
        output_type: index_type(a)?,
    }))
}

impl SearchSorted {
    fn rows(&self, seq: &[usize], values: &[usize]) -> Result<(), OpError> {
        let fits = seq.len() == 1
            || (!seq.is_empty()
                && seq.len() == values.len()
                && seq[..seq.len() - 1] == values[..values.len() - 1]);
        if fits {
            return Ok(());
        }
        Err(OpError::input(
            1,
            codes::SHAPE,
            format!(
                "{}: sorted sequence {seq:?} does not fit values {values:?}",
                self.name()
            ),
        ))
    }
}

impl Op for SearchSorted {
    fn name(&self) -> &'static str {
        "SearchSorted-15"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        if let (Some(s), Some(v)) = (inputs[0].shape.to_static(), inputs[1].shape.to_static()) {
            self.rows(&s, &v)?;
        }
        Ok(vec![Fact::new(self.output_type, inputs[1].shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [seq, vals] = take_inputs::<2>(inputs, self.name())?;
        self.rows(seq.shape(), vals.shape())?;
        let (s, v) = (
            numbers(&seq, 0, self.name())?,
            numbers(&vals, 1, self.name())?,
        );
        let n = *seq.shape().last().unwrap_or(&0);
        let per_row = vals.shape().last().copied().unwrap_or(1).max(1);
        let shared = seq.shape().len() == 1;
        let out = v
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let row = if shared {
                    &s[..]
                } else {
                    &s[i / per_row * n..][..n]
                };
                if self.right {
                    row.partition_point(|&e| e <= x)
                } else {
                    row.partition_point(|&e| e < x)
                }
            })
            .collect();
        Ok(vec![indices(self.output_type, vals.shape().to_vec(), out)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn lower_and_upper_bounds_per_row() {
        let op = SearchSorted {
            right: false,
            output_type: ElementType::I64,
        };
        let v = f32s(&[5], &[0.5, 1., 1.5, 3., 4.]);
        assert_eq!(
            run(&op, vec![f32s(&[3], &[1., 2., 3.]), v.clone()]).unwrap()[0],
            i64s(&[5], &[0, 0, 1, 2, 3])
        );
        let op = SearchSorted {
            right: true,
            output_type: ElementType::I64,
        };
        assert_eq!(
            run(&op, vec![f32s(&[3], &[1., 2., 3.]), v]).unwrap()[0],
            i64s(&[5], &[0, 1, 1, 3, 3])
        );
        let seq = f32s(&[2, 2], &[0., 10., 100., 200.]);
        let out = run(&op, vec![seq, f32s(&[2, 1], &[5., 150.])]).unwrap();
        assert_eq!(out[0], i64s(&[2, 1], &[1, 1]));
        let e = op.infer(&[fact(F32, "2,3"), fact(F32, "3,1")]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
