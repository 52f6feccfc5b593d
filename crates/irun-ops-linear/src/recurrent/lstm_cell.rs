//! LSTMCell-4: one LSTM step, `X [batch, input]`, `H, C [batch, hidden]`,
//! `W [4*hidden, input]`, `R [4*hidden, hidden]`, `B [4*hidden]` (gates f, i, c, o) to `Ho`
//! and `Co [batch, hidden]`. Attributes: `hidden_size` (required), `activations` (sigmoid,
//! tanh, tanh), `clip` (0). LSTMCell-1 (peepholes, other weight layouts) is not this op.

use super::{Kind, Recurrent};
use crate::attrs::AttrReader;
use crate::op::{Op, OpError};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Recurrent::read(
        a,
        "LSTMCell-4",
        Kind::Lstm,
        true,
    )?))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{built, sigmoid};
    use super::build;
    use crate::testing::eval_all;
    use crate::testing::prelude::*;

    /// One hidden unit, one input: each gate is `x w + h r + b` with its own w, r, b, in the
    /// order f, i, c, o, worked out from the spec's equations.
    #[test]
    fn one_unit_by_the_equations() {
        let op = built(build, "hidden_size=\"1\"").unwrap();
        let (x, h, c) = (0.7, -0.4, 0.9);
        let w = [0.5, -1.0, 0.8, 0.3];
        let r = [0.2, 0.6, -0.5, 1.1];
        let b = [0.1, -0.2, 0.3, 0.05];
        let gate = |k: usize| x * w[k] + h * r[k] + b[k];
        let (f, i, g, o) = (
            sigmoid(gate(0)),
            sigmoid(gate(1)),
            gate(2).tanh(),
            sigmoid(gate(3)),
        );
        let c_new = f * c + i * g;
        let h_new = o * c_new.tanh();
        let out = eval_all(
            op.as_ref(),
            vec![
                f64s(&[1, 1], &[x]),
                f64s(&[1, 1], &[h]),
                f64s(&[1, 1], &[c]),
                f64s(&[4, 1], &w),
                f64s(&[4, 1], &r),
                f64s(&[4], &b),
            ],
        )
        .unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-15;
        assert!(close(out[0].values::<f64>().unwrap()[0], h_new));
        assert!(close(out[1].values::<f64>().unwrap()[0], c_new));
    }
}
