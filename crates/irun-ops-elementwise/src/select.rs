//! Select-1: `cond ? then : else`, elementwise. `cond` must be boolean; `then` and `else` share
//! one type (boolean allowed). With numpy broadcasting the output is the three-way broadcast of
//! all inputs (what OpenVINO computes, though its spec says cond broadcasts one way).

use std::sync::Arc;

use irun_tensor::{with_any_scalar, ElementType, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::binary::{internal, same_element_type, values, AutoBroadcast};
use crate::fact::Fact;
use crate::kernel::{try_zeroed, PAR_MIN_ELEMENTS};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;

#[derive(Debug)]
pub struct Select {
    pub broadcast: AutoBroadcast,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Select {
        broadcast: AutoBroadcast::read(a)?,
    }))
}

impl Op for Select {
    fn name(&self) -> &'static str {
        "Select-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.name())?;
        let c = inputs[0].ty;
        if c != ElementType::Boolean && c != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("Select-1: the condition must be boolean, got {c}"),
            ));
        }
        let ty = same_element_type(inputs, &[1, 2], self.name())?;
        let shape =
            self.broadcast
                .infer(&[&inputs[0].shape, &inputs[1].shape, &inputs[2].shape])?;
        Ok(vec![Fact::new(ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [c, t, e] = take_inputs::<3>(inputs, self.name())?;
        let ty = t.element_type();
        if e.element_type() != ty {
            return Err(OpError::input(
                2,
                codes::ELEMENT_TYPE,
                "then and else differ in type",
            ));
        }
        let bc = self.broadcast.plan([c.shape(), t.shape(), e.shape()])?;
        let cv = values::<bool>(&c)?;
        let out = with_any_scalar!(ty, T => {
            let (tv, ev) = (values::<T>(&t)?, values::<T>(&e)?);
            let mut out = try_zeroed::<T>(bc.out_len())?;
            par::for_each_split_mut(&mut out, PAR_MIN_ELEMENTS, &|start, chunk| {
                bc.rows(start..start + chunk.len(), |pos, s, st, len| {
                    for (i, d) in chunk[pos - start..pos - start + len].iter_mut().enumerate() {
                        *d = if cv[s[0] + i * st[0]] {
                            tv[s[1] + i * st[1]]
                        } else {
                            ev[s[2] + i * st[2]]
                        };
                    }
                });
            });
            Tensor::new(ty, bc.out_shape().to_vec(), T::wrap(out)).map_err(internal)?
        }, else return Err(crate::unary::unsupported(self.name(), ty)));
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn select() -> Select {
        Select {
            broadcast: AutoBroadcast::Numpy,
        }
    }

    #[test]
    fn three_way_broadcast() {
        let cond = bools(&[2, 3], &[true, false, true, false, true, false]);
        let out = run(
            &select(),
            vec![cond, f32s(&[3], &[1., 2., 3.]), f32s(&[], &[0.])],
        )
        .unwrap();
        assert_eq!(out, f32s(&[2, 3], &[1., 0., 3., 0., 2., 0.]));
        let f = infer1(
            &select(),
            &[fact(Boolean, "2,1"), fact(I64, "3"), fact(I64, "")],
        )
        .unwrap();
        assert_eq!(f.to_string(), "i64 [2,3]");
    }

    #[test]
    fn condition_must_be_boolean() {
        let e = infer_err(&select(), &[fact(I32, "2"), fact(F32, "2"), fact(F32, "2")]);
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        assert_eq!(e.port, Some((irun_ir::PortDirection::Input, 0)));
    }
}
