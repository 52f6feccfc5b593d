//! RNNCell-0 (opset1): one step `Ho = f(X W^T + H R^T + B)`, `X [batch, input]`,
//! `H [batch, hidden]`, `W [hidden, input]`, `R [hidden, hidden]`, `B [hidden]`. Attributes:
//! `hidden_size` (required), `activations` (tanh), `clip` (0).

use super::{Kind, Recurrent};
use crate::attrs::AttrReader;
use crate::op::{Op, OpError};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Recurrent::read(a, "RNNCell-0", Kind::Rnn, true)?))
}

#[cfg(test)]
mod tests {
    use super::super::tests::built;
    use super::build;
    use crate::testing::eval_all;
    use crate::testing::prelude::*;

    /// Two units, two inputs, two batch rows: `tanh(x W^T + h R^T + B)` written out.
    #[test]
    fn two_units_by_the_equation() {
        let op = built(build, "hidden_size=\"2\"").unwrap();
        let x = [[0.5, -1.0], [2.0, 0.25]];
        let h = [[0.1, 0.2], [-0.3, 0.4]];
        let w = [[0.3, 0.7], [-0.6, 0.2]];
        let r = [[1.0, -0.5], [0.25, 0.75]];
        let b = [0.05, -0.1];
        let mut want = Vec::new();
        for row in 0..2 {
            for unit in 0..2 {
                let pre = (0..2).map(|k| x[row][k] * w[unit][k]).sum::<f64>()
                    + (0..2).map(|k| h[row][k] * r[unit][k]).sum::<f64>()
                    + b[unit];
                want.push(pre.tanh());
            }
        }
        let flat = |m: [[f64; 2]; 2]| m.concat();
        let out = eval_all(
            op.as_ref(),
            vec![
                f64s(&[2, 2], &flat(x)),
                f64s(&[2, 2], &flat(h)),
                f64s(&[2, 2], &flat(w)),
                f64s(&[2, 2], &flat(r)),
                f64s(&[2], &b),
            ],
        )
        .unwrap();
        for (g, w) in out[0].values::<f64>().unwrap().iter().zip(&want) {
            assert!((g - w).abs() < 1e-15, "{g} vs {w}");
        }
    }
}
