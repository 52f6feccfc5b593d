//! LSTMSequence-5: an LSTM over `X [batch, steps, input]` from `H, C [batch, dirs, hidden]`
//! with `lengths [batch]`, `W [dirs, 4*hidden, input]`, `R [dirs, 4*hidden, hidden]`,
//! `B [dirs, 4*hidden]` (gates f, i, c, o); outputs `Y [batch, dirs, steps, hidden]`, `Ho`,
//! `Co`. Attributes: `hidden_size` (required), `direction` (forward, reverse,
//! bidirectional), `activations` (sigmoid, tanh, tanh), `clip` (0). See the module for the
//! rules the family shares.

use super::{Kind, Recurrent};
use crate::attrs::AttrReader;
use crate::op::{Op, OpError};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Recurrent::read(
        a,
        "LSTMSequence-5",
        Kind::Lstm,
        false,
    )?))
}

#[cfg(test)]
mod tests {
    use super::super::tests::built;
    use super::build;
    use crate::testing::eval_all;
    use crate::testing::prelude::*;

    /// A forward sequence is its cell applied step by step (LSTMCell-4 is checked against
    /// the equations in its own file); lengths of the whole sequence change nothing.
    #[test]
    fn a_sequence_is_its_cell_step_by_step() {
        let (batch, steps, input, hidden) = (2, 3, 2, 2);
        let vals = |n: usize, seed: usize| -> Vec<f64> {
            (0..n)
                .map(|i| ((i * 29 + seed * 7) % 23) as f64 / 11.0 - 1.0)
                .collect()
        };
        let x = vals(batch * steps * input, 1);
        let (h0, c0) = (vals(batch * hidden, 2), vals(batch * hidden, 3));
        let (w, r, b) = (
            vals(4 * hidden * input, 4),
            vals(4 * hidden * hidden, 5),
            vals(4 * hidden, 6),
        );
        let seq = built(build, "hidden_size=\"2\" direction=\"forward\"").unwrap();
        let out = eval_all(
            seq.as_ref(),
            vec![
                f64s(&[batch, steps, input], &x),
                f64s(&[batch, 1, hidden], &h0),
                f64s(&[batch, 1, hidden], &c0),
                i32s(&[batch], &[3, 3]),
                f64s(&[1, 4 * hidden, input], &w),
                f64s(&[1, 4 * hidden, hidden], &r),
                f64s(&[1, 4 * hidden], &b),
            ],
        )
        .unwrap();
        let cell = built(super::super::lstm_cell::build, "hidden_size=\"2\"").unwrap();
        let (mut h, mut c) = (f64s(&[batch, hidden], &h0), f64s(&[batch, hidden], &c0));
        let y = out[0].values::<f64>().unwrap();
        for t in 0..steps {
            let xt: Vec<f64> = (0..batch)
                .flat_map(|bi| x[(bi * steps + t) * input..][..input].to_vec())
                .collect();
            let next = eval_all(
                cell.as_ref(),
                vec![
                    f64s(&[batch, input], &xt),
                    h.clone(),
                    c.clone(),
                    f64s(&[4 * hidden, input], &w),
                    f64s(&[4 * hidden, hidden], &r),
                    f64s(&[4 * hidden], &b),
                ],
            )
            .unwrap();
            [h, c] = [next[0].clone(), next[1].clone()];
            for bi in 0..batch {
                assert_eq!(
                    &y[(bi * steps + t) * hidden..][..hidden],
                    &h.values::<f64>().unwrap()[bi * hidden..][..hidden],
                    "Y at batch {bi}, step {t}"
                );
            }
        }
        assert_eq!(out[1].values::<f64>(), h.values::<f64>());
        assert_eq!(out[2].values::<f64>(), c.values::<f64>());
    }
}
