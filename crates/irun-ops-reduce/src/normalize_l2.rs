//! NormalizeL2-1: `y = x / sqrt(f(sum of x^2 over axes))`, `f(v) = v + eps` (`eps_mode`
//! `add`) or `max(v, eps)` (`max`); axes (input 1, 1-D integers, negative allowed) may be
//! any set. With no axes each element is its own norm: `y` is 0 where `x` is 0, else 1.
//! `eps` and `eps_mode` are required. Computed in f64, rounded once.

use crate::attrs::AttrReader;
use crate::axes::normalise;
use crate::fact::Fact;
use crate::floats::{like, reduced_slots, values};
use crate::op::{take_inputs, Op, OpError, Value};
use crate::util::ints;

#[derive(Debug)]
pub struct NormalizeL2 {
    pub eps: f64,
    pub add: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("eps")?;
    a.required("eps_mode")?;
    Ok(Box::new(NormalizeL2 {
        eps: a.f64_or("eps", 0.0)?,
        add: a.enum_or("eps_mode", &["add", "max"], "add")? == "add",
    }))
}

impl Op for NormalizeL2 {
    fn name(&self) -> &'static str {
        "NormalizeL2-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        crate::floats::infer_over_axes(inputs, self.name())
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, axes] = take_inputs::<2>(inputs, self.name())?;
        let axes = normalise(&ints(&axes, 1)?, x.shape().len(), 1, self.name())?;
        let v = values(&x, 0, self.name())?;
        if axes.is_empty() {
            return like(
                &x,
                v.iter()
                    .map(|&a| if a == 0.0 { 0.0 } else { 1.0 })
                    .collect(),
            );
        }
        let slots = reduced_slots(x.shape(), &axes);
        let mut sums = vec![0.0f64; slots.iter().max().map_or(0, |m| m + 1)];
        for (&s, &a) in slots.iter().zip(&v) {
            sums[s] += a * a;
        }
        let norms: Vec<f64> = sums
            .iter()
            .map(|&s| {
                if self.add {
                    s + self.eps
                } else {
                    s.max(self.eps)
                }
                .sqrt()
            })
            .collect();
        like(
            &x,
            v.iter().zip(&slots).map(|(&a, &s)| a / norms[s]).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn normalises_over_the_axes() {
        let op = NormalizeL2 {
            eps: 1e-12,
            add: false,
        };
        let y = run(
            &op,
            vec![f32s(&[2, 2], &[3., 4., 0., 5.]), i64s(&[1], &[-1])],
        );
        assert_eq!(y, f32s(&[2, 2], &[0.6, 0.8, 0., 1.]));
        let y = run(&op, vec![f32s(&[2, 2], &[3., 4., 0., 5.]), i64s(&[0], &[])]);
        assert_eq!(y, f32s(&[2, 2], &[1., 1., 0., 1.]));
        // eps `add` inside the root: 3 / sqrt(9 + 16) with eps 0 equals 0.6 too; max keeps
        // an all-zero row at 0 / sqrt(eps).
        let y = run(
            &NormalizeL2 {
                eps: 0.25,
                add: true,
            },
            vec![f32s(&[1, 1], &[0.]), i64s(&[1], &[1])],
        );
        assert_eq!(y, f32s(&[1, 1], &[0.]));
        let e = op.infer(&[fact(F32, "2,2"), i64_value(&[2])]).unwrap_err();
        assert_eq!(e.code, codes::AXIS);
    }
}
