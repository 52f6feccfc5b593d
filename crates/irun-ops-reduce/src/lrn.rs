//! LRN-1: local response normalisation. For each element, `sum` is the sum of `x^2` over the
//! window `[i - h, i + h]`, `h = (size - 1) / 2` (so an even `size` acts as `size - 1`), on
//! every axis of input 1 (1-D integers, usually `[1]`: across channels), clipped to the
//! tensor; `y = x / (bias + alpha / size^n * sum)^beta` with n the number of axes. `alpha`,
//! `beta`, `bias`, `size` are required. Computed in f64, rounded once.

use crate::attrs::AttrReader;
use crate::axes::normalise;
use crate::fact::Fact;
use crate::floats::{like, values};
use crate::op::{take_inputs, Op, OpError, Value};
use crate::strided::row_major_strides;
use crate::util::ints;

#[derive(Debug)]
pub struct Lrn {
    pub alpha: f64,
    pub beta: f64,
    pub bias: f64,
    pub size: usize,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    for name in ["alpha", "beta", "bias", "size"] {
        a.required(name)?;
    }
    let size = a.i64_or("size", None)?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| OpError::attribute("size", format!("size must be positive, got {size}")))?;
    Ok(Box::new(Lrn {
        alpha: a.f64_or("alpha", 0.0)?,
        beta: a.f64_or("beta", 0.0)?,
        bias: a.f64_or("bias", 0.0)?,
        size,
    }))
}

impl Op for Lrn {
    fn name(&self) -> &'static str {
        "LRN-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        crate::floats::infer_over_axes(inputs, self.name())
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, axes] = take_inputs::<2>(inputs, self.name())?;
        let shape = x.shape().to_vec();
        let axes = normalise(&ints(&axes, 1)?, shape.len(), 1, self.name())?;
        let v = values(&x, 0, self.name())?;
        let strides = row_major_strides(&shape);
        let h = (self.size as i64 - 1) / 2;
        let scale = self.alpha / (self.size as f64).powi(axes.len() as i32);
        let mut y = vec![0.0; v.len()];
        let squares: Vec<f64> = v.iter().map(|a| a * a).collect();
        crate::par::for_each_split_mut(&mut y, 4096, &|at, chunk| {
            // Per listed axis: (axis, first, last) of the window; and the walk through it.
            // Buffers of the task, refilled for each element.
            let mut ranges: Vec<(usize, usize, usize)> = Vec::with_capacity(axes.len());
            let mut idx: Vec<usize> = Vec::with_capacity(axes.len());
            for (i, o) in chunk.iter_mut().enumerate() {
                let p = at + i;
                let mut base = p;
                ranges.clear();
                for &a in &axes {
                    let c = p / strides[a] as usize % shape[a];
                    base -= c * strides[a] as usize;
                    let lo = (c as i64 - h).max(0) as usize;
                    let hi = (c as i64 + h).min(shape[a] as i64 - 1) as usize;
                    ranges.push((a, lo, hi));
                }
                idx.clear();
                idx.extend(ranges.iter().map(|r| r.1));
                let mut sum = 0.0;
                'window: loop {
                    let q = base
                        + ranges
                            .iter()
                            .zip(&idx)
                            .map(|(&(a, _, _), &k)| k * strides[a] as usize)
                            .sum::<usize>();
                    sum += squares[q];
                    for d in (0..idx.len()).rev() {
                        idx[d] += 1;
                        if idx[d] <= ranges[d].2 {
                            continue 'window;
                        }
                        idx[d] = ranges[d].1;
                    }
                    break;
                }
                *o = v[p] / (self.bias + scale * sum).powf(self.beta);
            }
        });
        like(&x, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// Across 4 channels with size 3 (window c-1..c+1): y = x / (1 + 1/3 * sum)^0.5.
    #[test]
    fn across_channels() {
        let op = Lrn {
            alpha: 1.0,
            beta: 0.5,
            bias: 1.0,
            size: 3,
        };
        let y = run(
            &op,
            vec![f32s(&[1, 4, 1, 1], &[1., 2., 3., 4.]), i64s(&[1], &[1])],
        );
        let want = [(1., 5.), (2., 14.), (3., 29.), (4., 25.)]
            .map(|(x, s): (f32, f32)| x / (1. + s / 3.).sqrt());
        let got = y.values::<f32>().unwrap();
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
        }
        // An even size acts as one less (window c-0..c+0 for size 2), divided by size 2.
        let op = Lrn {
            alpha: 2.0,
            beta: 1.0,
            bias: 0.0,
            size: 2,
        };
        let y = run(&op, vec![f32s(&[1, 2], &[2., 4.]), i64s(&[1], &[1])]);
        assert_eq!(y, f32s(&[1, 2], &[0.5, 0.25]));
    }
}
