//! BatchNormInference-5 (inputs data, gamma, beta, mean, variance) and -0 (written opset1:
//! gamma, beta, data, mean, variance): `y = gamma (x - mean) / sqrt(variance + epsilon) +
//! beta` per channel (axis 1, the four parameters `[C]`). `epsilon` is required. Computed in
//! f64, rounded once.

use irun_tensor::ElementType;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::floats::{like, values};
use crate::op::{codes, expect_inputs, same_element_type, Op, OpError, Value};

#[derive(Debug)]
pub struct BatchNormInference {
    pub epsilon: f64,
    /// Where the data is among the inputs (2 in v0, 0 in v5).
    pub data_slot: usize,
}

pub fn build_v0(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("epsilon")?;
    Ok(Box::new(BatchNormInference {
        epsilon: a.f64_or("epsilon", 0.0)?,
        data_slot: 2,
    }))
}

pub fn build_v5(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("epsilon")?;
    Ok(Box::new(BatchNormInference {
        epsilon: a.f64_or("epsilon", 0.0)?,
        data_slot: 0,
    }))
}

impl BatchNormInference {
    /// Slots of gamma, beta, mean, variance.
    fn params(&self) -> [usize; 4] {
        if self.data_slot == 0 {
            [1, 2, 3, 4]
        } else {
            [0, 1, 3, 4]
        }
    }
}

impl Op for BatchNormInference {
    fn name(&self) -> &'static str {
        if self.data_slot == 0 {
            "BatchNormInference-5"
        } else {
            "BatchNormInference-0"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 5, self.name())?;
        let ty = same_element_type(inputs, &[0, 1, 2, 3, 4], self.name())?;
        if ty != ElementType::Dynamic && !ty.is_real() {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("{}: inputs must be floating-point, got {ty}", self.name()),
            ));
        }
        let x = &inputs[self.data_slot];
        crate::floats::expect_channel_params(inputs, self.data_slot, &self.params(), self.name())?;
        Ok(vec![Fact::new(ty, x.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        if inputs.len() != 5 {
            return Err(OpError::new(
                codes::ARITY,
                format!("{} takes 5 inputs", self.name()),
            ));
        }
        let x = &inputs[self.data_slot];
        let s = x.shape();
        let c = s.get(1).copied().unwrap_or(0);
        let [g, b, m, var] = self
            .params()
            .map(|slot| values(&inputs[slot], slot, self.name()));
        let (g, b, m, var) = (g?, b?, m?, var?);
        if s.len() < 2 || [&g, &b, &m, &var].iter().any(|p| p.len() != c) {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("{}: parameters do not fit data {s:?}", self.name()),
            ));
        }
        let spatial: usize = s[2..].iter().product();
        let scale: Vec<f64> = (0..c)
            .map(|k| g[k] / (var[k] + self.epsilon).sqrt())
            .collect();
        let v = values(x, self.data_slot, self.name())?;
        let y = v
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let k = i / spatial.max(1) % c.max(1);
                (a - m[k]) * scale[k] + b[k]
            })
            .collect();
        like(x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn per_channel_and_both_orders() {
        let (x, g, b, m, v) = (
            f32s(&[1, 2, 2], &[1., 3., 10., 20.]),
            f32s(&[2], &[2., 1.]),
            f32s(&[2], &[0., 1.]),
            f32s(&[2], &[2., 10.]),
            f32s(&[2], &[4., 25.]),
        );
        let want = f32s(&[1, 2, 2], &[-1., 1., 1., 3.]);
        let v5 = BatchNormInference {
            epsilon: 0.0,
            data_slot: 0,
        };
        assert_eq!(
            run(
                &v5,
                vec![x.clone(), g.clone(), b.clone(), m.clone(), v.clone()]
            ),
            want
        );
        let v0 = BatchNormInference {
            epsilon: 0.0,
            data_slot: 2,
        };
        assert_eq!(run(&v0, vec![g, b, x, m, v]), want);
    }
}
