//! VariadicSplit-1: parts of the given lengths (input 2) along `axis` (input 1, rank 0). At
//! most one length is -1 and takes the remainder; zeros give empty parts; the lengths must add
//! up to the axis dim.

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::split::{cut, split_axis};
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug)]
pub struct VariadicSplit;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(VariadicSplit))
}

/// The lengths with a -1 resolved against `dim` (when known); errors for bad lengths.
fn lengths(spec: &[i64], dim: Option<u64>) -> Result<Vec<Option<u64>>, OpError> {
    let bad = |m: String| OpError::input(2, codes::BAD_VALUE, format!("VariadicSplit-1: {m}"));
    if spec.iter().filter(|&&v| v == -1).count() > 1 {
        return Err(bad(format!("more than one -1 in split_lengths {spec:?}")));
    }
    if spec.iter().any(|&v| v < -1) {
        return Err(bad(format!("a negative length in split_lengths {spec:?}")));
    }
    let known: u64 = spec.iter().filter(|&&v| v >= 0).map(|&v| v as u64).sum();
    let minus_one = spec.contains(&-1);
    if let Some(d) = dim {
        if (minus_one && known > d) || (!minus_one && known != d) {
            return Err(bad(format!(
                "split_lengths {spec:?} do not add up to the axis dim {d}"
            )));
        }
    }
    Ok(spec
        .iter()
        .map(|&v| {
            if v == -1 {
                dim.map(|d| d - known)
            } else {
                Some(v as u64)
            }
        })
        .collect())
}

impl Op for VariadicSplit {
    fn name(&self) -> &'static str {
        "VariadicSplit-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.name())?;
        expect_int_type(inputs, 2, self.name())?;
        let data = &inputs[0];
        let axis = split_axis(inputs, self.name())?;
        let Some(spec) = known_ints(&inputs[2]) else {
            // The number of outputs is the layer's; inference cannot size them.
            let n = inputs[2]
                .shape
                .to_static()
                .and_then(|s| s.first().copied())
                .unwrap_or(1);
            return Ok(vec![Fact::new(data.ty, PartialShape::dynamic_rank()); n]);
        };
        let outs = match (data.shape.dims(), axis) {
            (Some(dims), Some(a)) => {
                let k = norm_axis(a, dims.len(), Some(1), self.name())?;
                lengths(&spec, dims[k].get_static())?
                    .into_iter()
                    .map(|len| {
                        let mut d = dims.to_vec();
                        d[k] = len.map_or(Dim::DYNAMIC, Dim::fixed);
                        PartialShape::new(d)
                    })
                    .collect()
            }
            (Some(dims), None) => vec![PartialShape::dynamic_of_rank(dims.len()); spec.len()],
            _ => vec![PartialShape::dynamic_rank(); spec.len()],
        };
        Ok(outs.into_iter().map(|s| Fact::new(data.ty, s)).collect())
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, axis, spec] = take_inputs::<3>(inputs, self.name())?;
        let a = *ints(&axis, 1)?
            .first()
            .ok_or_else(|| OpError::input(1, codes::RUN_SHAPE, "empty axis"))?;
        let k = norm_axis(a, data.shape().len(), Some(1), self.name())?;
        let lens: Vec<usize> = lengths(&ints(&spec, 2)?, Some(data.shape()[k] as u64))?
            .into_iter()
            .map(|l| l.unwrap_or(0) as usize)
            .collect();
        cut(&data, k, &lens, self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn lengths_with_a_remainder() {
        let x = i32s(&[5], &[1, 2, 3, 4, 5]);
        let out = run(
            &VariadicSplit,
            vec![x, i64s(&[], &[0]), i64s(&[3], &[1, -1, 0])],
        )
        .unwrap();
        assert_eq!(
            out,
            vec![i32s(&[1], &[1]), i32s(&[4], &[2, 3, 4, 5]), i32s(&[0], &[])]
        );
        let f = VariadicSplit
            .infer(&[fact(F32, "2,?"), i64_scalar(1), i64_value(&[2, -1])])
            .unwrap();
        assert_eq!(f[1].shape.to_string(), "[2,?]");
        let e = VariadicSplit
            .infer(&[fact(F32, "2,6"), i64_scalar(1), i64_value(&[2, 2])])
            .unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
        let e = VariadicSplit
            .infer(&[fact(F32, "2,6"), i64_scalar(1), i64_value(&[-1, -1])])
            .unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
    }
}
