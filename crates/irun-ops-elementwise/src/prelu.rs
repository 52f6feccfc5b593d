//! PReLU-1: `x >= 0 ? x : slope * x`, output of data's shape. A 1-D slope as long as data's
//! channel dim (axis 1) applies per channel; any other slope broadcasts numpy-style onto the
//! data (one way). Float types; f16/bf16 computed in f32.

use std::sync::Arc;

use irun_tensor::{with_float, ElementType, Tensor};

use crate::attrs::AttrReader;
use crate::binary::{internal, same_element_type, values, zip};
use crate::broadcast::Broadcast;
use crate::fact::Fact;
use crate::num::Number;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::unary::unsupported;

#[derive(Debug)]
pub struct Prelu;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Prelu))
}

/// The slope's shape as it broadcasts onto data: `[C, 1, ...]` for a per-channel slope.
fn slope_shape(data: &[usize], slope: &[usize]) -> Vec<usize> {
    if slope.len() == 1 && data.len() >= 2 && slope[0] == data[1] && data[1] != 1 {
        let mut s = vec![slope[0]];
        s.resize(data.len() - 1, 1);
        return s;
    }
    slope.to_vec()
}

impl Op for Prelu {
    fn name(&self) -> &'static str {
        "PReLU-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        let ty = same_element_type(inputs, &[0, 1], self.name())?;
        if !ty.is_real() && ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("PReLU-1: inputs must be a floating-point type, got {ty}"),
            ));
        }
        if let (Some(d), Some(s)) = (inputs[0].shape.to_static(), inputs[1].shape.to_static()) {
            let bc = Broadcast::<2>::new([&d, &slope_shape(&d, &s)])
                .map_err(|e| OpError::input(1, codes::SHAPE, e.message))?;
            if bc.out_shape() != d.as_slice() {
                return Err(OpError::input(
                    1,
                    codes::SHAPE,
                    format!(
                        "PReLU-1: slope {:?} does not broadcast onto data {:?}",
                        s, d
                    ),
                ));
            }
        }
        Ok(vec![Fact::new(ty, inputs[0].shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, slope] = take_inputs::<2>(inputs, self.name())?;
        let ss = slope_shape(x.shape(), slope.shape());
        let bc = Broadcast::<2>::new([x.shape(), &ss])?;
        if bc.out_shape() != x.shape() {
            return Err(OpError::input(
                1,
                codes::RUN_SHAPE,
                "PReLU-1: the slope does not broadcast onto the data",
            ));
        }
        let ty = x.element_type();
        let out = with_float!(ty, T => {
            let f = |v: T, s: T| if v < T::default() { s.mul(v) } else { v };
            let out = zip(&bc, values::<T>(&x)?, values::<T>(&slope)?, f)?;
            Tensor::new(ty, x.shape().to_vec(), irun_tensor::Scalar::wrap(out)).map_err(internal)?
        }, else return Err(unsupported(self.name(), ty)));
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn per_channel_and_broadcast_slopes() {
        let x = f32s(&[1, 2, 2], &[-1., 2., -3., 4.]);
        let out = run(&Prelu, vec![x.clone(), f32s(&[2], &[0.5, 0.25])]).unwrap();
        assert_eq!(
            out,
            f32s(&[1, 2, 2], &[-0.5, 2., -0.75, 4.]),
            "per channel (axis 1)"
        );
        let out = run(
            &Prelu,
            vec![
                f32s(&[2, 3], &[-1., -1., -1., 1., 1., 1.]),
                f32s(&[3], &[1., 2., 3.]),
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            f32s(&[2, 3], &[-1., -2., -3., 1., 1., 1.]),
            "along the last axis"
        );
        let e = infer1(&Prelu, &[fact(F32, "2,3"), fact(F32, "4")]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
