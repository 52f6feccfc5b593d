//! GRUCell-3: one GRU step, `X [batch, input]`, `H [batch, hidden]`, `W [3*hidden, input]`,
//! `R [3*hidden, hidden]` (gates z, r, h), `B [3*hidden]` (`[4*hidden]` with
//! `linear_before_reset`) to `Ho [batch, hidden]`. Attributes: `hidden_size` (required),
//! `activations` (sigmoid, tanh), `clip` (0), `linear_before_reset` (false).

use super::{Kind, Recurrent};
use crate::attrs::AttrReader;
use crate::op::{Op, OpError};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let kind = Kind::Gru {
        linear_before_reset: a.bool_or("linear_before_reset", false)?,
    };
    Ok(Box::new(Recurrent::read(a, "GRUCell-3", kind, true)?))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{built, sigmoid};
    use super::build;
    use crate::testing::eval_all;
    use crate::testing::prelude::*;

    /// Two units, so that the reset gate multiplying `h` before `R_h` (the default) and
    /// after it (`linear_before_reset`) give different results; both written out from the
    /// spec's equations.
    #[test]
    fn both_reset_orders_by_the_equations() {
        let x = [0.8, -0.3];
        let h = [0.5, -0.6];
        // Rows z0 z1 r0 r1 h0 h1.
        let w = [
            [0.2, 0.4],
            [-0.5, 0.1],
            [0.3, -0.7],
            [0.6, 0.2],
            [-0.4, 0.9],
            [0.1, 0.3],
        ];
        let r = [
            [0.5, -0.2],
            [0.3, 0.8],
            [-0.6, 0.4],
            [0.2, 0.1],
            [0.7, -0.9],
            [0.4, 0.6],
        ];
        // Wb+Rb for z and r, Wb_h, and (linear_before_reset) Rb_h.
        let b = [0.1, -0.1, 0.2, 0.05, -0.3, 0.15, 0.25, -0.35];
        let dot = |a: &[f64], m: &[f64; 2]| a[0] * m[0] + a[1] * m[1];
        let xw = |row: usize| dot(&x, &w[row]);
        let z: Vec<f64> = (0..2)
            .map(|j| sigmoid(xw(j) + dot(&h, &r[j]) + b[j]))
            .collect();
        let rg: Vec<f64> = (0..2)
            .map(|j| sigmoid(xw(2 + j) + dot(&h, &r[2 + j]) + b[2 + j]))
            .collect();
        let reset_h = [rg[0] * h[0], rg[1] * h[1]];
        for lbr in [false, true] {
            let cand: Vec<f64> = (0..2)
                .map(|j| {
                    let rec = if lbr {
                        rg[j] * (dot(&h, &r[4 + j]) + b[6 + j])
                    } else {
                        dot(&reset_h, &r[4 + j])
                    };
                    (xw(4 + j) + rec + b[4 + j]).tanh()
                })
                .collect();
            let want: Vec<f64> = (0..2)
                .map(|j| (1.0 - z[j]) * cand[j] + z[j] * h[j])
                .collect();
            let op = built(
                build,
                &format!("hidden_size=\"2\" linear_before_reset=\"{lbr}\""),
            )
            .unwrap();
            let bias = if lbr { &b[..] } else { &b[..6] };
            let out = eval_all(
                op.as_ref(),
                vec![
                    f64s(&[1, 2], &x),
                    f64s(&[1, 2], &h),
                    f64s(&[6, 2], &w.concat()),
                    f64s(&[6, 2], &r.concat()),
                    f64s(&[bias.len()], bias),
                ],
            )
            .unwrap();
            for (g, w) in out[0].values::<f64>().unwrap().iter().zip(&want) {
                assert!(
                    (g - w).abs() < 1e-15,
                    "linear_before_reset={lbr}: {g} vs {w}"
                );
            }
        }
    }
}
