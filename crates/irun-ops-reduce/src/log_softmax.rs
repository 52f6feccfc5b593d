//! LogSoftmax-5: `x - max - ln(sum e^(x - max))` along `axis` (default 1, negative allowed);
//! a -inf input stays -inf, a slice with a NaN is all NaN. f32 rows along the last axis use
//! rten-vecmath's SIMD kernel (as SoftMax does); everything else computes in f64.

use std::sync::Arc;

use irun_tensor::ElementType;

use crate::along::{map_rows_f32, map_slices};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, take_inputs, Op, OpError, Value};
use crate::softmax::{across_columns_f32, column_max, exp_shifted, infer_along, softmax_axis};

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

/// LogSoftmax down each column of `rows` into `out`: `x - max - ln(sum e^(x - max))`.
fn log_softmax_columns(rows: &mut [&mut [f32]]) {
    let max = column_max(rows);
    crate::simd::widest(
        #[inline(always)]
        || {
            // The exponentials only feed the sums: a row's worth of scratch.
            let (mut sum, mut scratch) = (vec![0f32; max.len()], vec![0f32; max.len()]);
            for r in rows.iter() {
                scratch.copy_from_slice(r);
                exp_shifted(&mut scratch, &max, &mut sum);
            }
            let shift: Vec<f32> = max.iter().zip(&sum).map(|(&m, &s)| m + s.ln()).collect();
            for r in rows.iter_mut() {
                for (d, &c) in r.iter_mut().zip(&shift) {
                    *d -= c;
                }
            }
        },
    )
}

impl Op for LogSoftmax {
    fn name(&self) -> &'static str {
        "LogSoftmax-5"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        infer_along(inputs, self.axis, 5, self.name())
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let s = x.shape().to_vec();
        let k = softmax_axis(self.axis, s.len(), 5, self.name())?;
        if k + 1 == s.len() && x.element_type() == ElementType::F32 {
            let out = map_rows_f32(x, s[k], &|row| {
                if row.iter().any(|v| v.is_nan()) {
                    row.fill(f32::NAN);
                } else {
                    rten_simd::SimdOp::dispatch(rten_vecmath::LogSoftmax::new_mut(row));
                }
            })?;
            return Ok(vec![Arc::new(out)]);
        }
        let (outer, along, inner): (usize, usize, usize) =
            (s[..k].iter().product(), s[k], s[k + 1..].iter().product());
        if x.element_type() == ElementType::F32 && along > 0 {
            let mut own = crate::kernel::take_or_copy(x);
            let y = own
                .values_mut::<f32>()
                .ok_or_else(|| OpError::new(codes::INTERNAL, "f32 storage"))?;
            across_columns_f32(y, outer, along, inner, &log_softmax_columns);
            return Ok(vec![Arc::new(own)]);
        }
        let out = map_slices(&x, outer, along, inner, &log_softmax)?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// The column kernel of a non-innermost f32 axis against the f64 slice kernel.
    #[test]
    fn columns_match_slices() {
        let (outer, along, inner) = (2, 7, 1030);
        let mut x: Vec<f32> = (0..outer * along * inner)
            .map(|i| ((i * 7919 % 1000) as f32 / 50.0) - 10.0)
            .collect();
        x[9] = f32::NAN;
        let mut y = x.clone();
        across_columns_f32(&mut y, outer, along, inner, &log_softmax_columns);
        let t = f32s(&[outer, along, inner], &x);
        let want = map_slices(&t, outer, along, inner, &log_softmax).unwrap();
        for (i, (g, w)) in y.iter().zip(want.values::<f32>().unwrap()).enumerate() {
            let same = (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-5 * w.abs().max(1.0);
            assert!(same, "[{i}]: {g} vs {w}");
        }
        assert!(y[9].is_nan() && y[inner + 9].is_nan());
    }

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

    #[test]
    fn f32_rows_match_the_f64_kernel() {
        let (rows, along) = (37, 100);
        let x: Vec<f32> = (0..rows * along)
            .map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 12.0)
            .collect();
        let mut x = x;
        x[5] = f32::NEG_INFINITY;
        x[along + 3] = f32::NAN;
        let got = run(&LogSoftmax { axis: -1 }, vec![f32s(&[rows, along], &x)]);
        let got = got.values::<f32>().unwrap();
        let wide: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let want = run(&LogSoftmax { axis: 1 }, vec![f64s(&[rows, along], &wide)]);
        for (i, (&g, &w)) in got.iter().zip(want.values::<f64>().unwrap()).enumerate() {
            let close =
                (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()) || (g.is_nan() && w.is_nan());
            assert!(close || g as f64 == w, "element {i}: {g} vs {w}");
        }
        assert_eq!(got[5], f32::NEG_INFINITY);
        assert!(
            got[along..2 * along].iter().all(|v| v.is_nan()),
            "a NaN row is all NaN"
        );
    }
}
