//! LogSoftmax-5: `x - max - ln(sum e^(x - max))` along `axis` (default 1, negative allowed);
//! a -inf input stays -inf.

use std::sync::Arc;

use crate::along::map_slices;
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{take_inputs, Op, OpError, Value};
use crate::softmax::{infer_along, softmax_axis};

#[derive(Debug)]
pub struct LogSoftmax {
    pub axis: i64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(LogSoftmax {
        axis: a.i64_or("axis", Some(1))?,
    }))
}

fn log_softmax(x: &[f64], y: &mut [f64]) {
    let max = x.iter().fold(f64::NEG_INFINITY, |m, &v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    });
    let sum: f64 = x.iter().map(|&v| (v - max).exp()).sum();
    let log_sum = sum.ln();
    for (d, &v) in y.iter_mut().zip(x) {
        *d = v - max - log_sum;
    }
}

impl Op for LogSoftmax {
    fn name(&self) -> &'static str {
        "LogSoftmax-5"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        infer_along(inputs, self.axis, 5, self.name())
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let s = x.shape();
        let k = softmax_axis(self.axis, s.len(), 5, self.name())?;
        let out = map_slices(
            &x,
            s[..k].iter().product(),
            s[k],
            s[k + 1..].iter().product(),
            &log_softmax,
        )?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn log_of_softmax() {
        let out = run(
            &LogSoftmax { axis: 1 },
            vec![f64s(&[1, 3], &[0., 0., f64::NEG_INFINITY])],
        );
        let v = out.values::<f64>().unwrap();
        assert!((v[0] - 0.5f64.ln()).abs() < 1e-15);
        assert_eq!(v[2], f64::NEG_INFINITY);
    }
}
