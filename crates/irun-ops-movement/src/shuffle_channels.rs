//! ShuffleChannels-1: the `axis` dim (default 1, negative allowed) seen as `[group, C /
//! group]`, transposed to `[C / group, group]` and flattened: output channel `j * group + i`
//! is input channel `i * (C / group) + j`. `group` (default 1) divides the dim. One strided
//! copy.

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::strided::Strided;
use crate::util::{norm_axis, output};

#[derive(Debug)]
pub struct ShuffleChannels {
    pub axis: i64,
    pub group: usize,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let g = a.i64_or("group", Some(1))?;
    let group = usize::try_from(g)
        .ok()
        .filter(|&g| g > 0)
        .ok_or_else(|| OpError::attribute("group", format!("group must be positive, got {g}")))?;
    Ok(Box::new(ShuffleChannels {
        axis: a.i64_or("axis", Some(1))?,
        group,
    }))
}

impl Op for ShuffleChannels {
    fn name(&self) -> &'static str {
        "ShuffleChannels-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let x = &inputs[0];
        if let Some(d) = x.shape.dims() {
            if d.is_empty() {
                return Err(OpError::input(
                    0,
                    codes::RANK,
                    format!("{}: data must have rank 1 or more", self.name()),
                ));
            }
            let a = norm_axis(self.axis, d.len(), None, self.name())?;
            if d[a]
                .get_static()
                .is_some_and(|c| c % self.group as u64 != 0)
            {
                return Err(OpError::input(
                    0,
                    codes::SHAPE,
                    format!(
                        "{}: dim {a} of {} does not split into {} groups",
                        self.name(),
                        x.shape,
                        self.group
                    ),
                ));
            }
        }
        Ok(vec![Fact::new(x.ty, x.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let s = x.shape();
        let a = norm_axis(self.axis, s.len(), None, self.name())?;
        if s[a] % self.group != 0 {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "{}: dim {a} of {s:?} does not split into {} groups",
                    self.name(),
                    self.group
                ),
            ));
        }
        let outer: usize = s[..a].iter().product();
        let inner: usize = s[a + 1..].iter().product();
        let view = [outer, self.group, s[a] / self.group, inner];
        let words = Strided::permuted(&view, &[0, 2, 1, 3]).apply(&x, self.name())?;
        Ok(vec![output(x.element_type(), s.to_vec(), words)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn interleaves_the_groups() {
        let op = ShuffleChannels { axis: 1, group: 2 };
        let x = i32s(&[1, 6, 1], &[0, 1, 2, 3, 4, 5]);
        assert_eq!(
            run(&op, vec![x]).unwrap()[0],
            i32s(&[1, 6, 1], &[0, 3, 1, 4, 2, 5])
        );
        let e = ShuffleChannels { axis: -1, group: 4 }
            .infer(&[fact(F32, "2,6")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
