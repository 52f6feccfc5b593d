//! SoftMax-1 and SoftMax-8: `e^(x - max) / sum e^(x - max)` along `axis`. v1: axis in
//! `[0, r-1]`, and omitted in the IR it is 0 (what OpenVINO's loader reads, though the spec
//! says 1); v8: axis in `[-r, r-1]`, omitted 1. A slice holding +inf or NaN becomes all NaN
//! (the reference; OpenVINO CPU puts NaN at that position only); `[1000, 0]` gives `[1, 0]`.

use std::sync::Arc;

use irun_tensor::ElementType;

use crate::along::{map_rows_f32, map_slices};
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::norm_axis;

#[derive(Debug)]
pub struct Softmax {
    pub axis: i64,
    pub version: u32,
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Softmax {
        axis: a.i64_or("axis", Some(0))?,
        version: 1,
    }))
}

pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Softmax {
        axis: a.i64_or("axis", Some(1))?,
        version: 8,
    }))
}

/// The softmax of one slice.
pub fn softmax(x: &[f64], y: &mut [f64]) {
    let max = x.iter().fold(f64::NEG_INFINITY, |m, &v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    });
    let mut sum = 0.0;
    for (d, &v) in y.iter_mut().zip(x) {
        *d = (v - max).exp();
        sum += *d;
    }
    for d in y.iter_mut() {
        *d /= sum;
    }
}

/// `axis` of a rank-`rank` input under the rules of SoftMax-1 (no negatives) or later.
pub fn softmax_axis(axis: i64, rank: usize, version: u32, name: &str) -> Result<usize, OpError> {
    if version == 1 && axis < 0 {
        return Err(OpError::attribute(
            "axis",
            format!("{name}: axis {axis} must be in [0, {}]", rank as i64 - 1),
        )
        .with_code(codes::AXIS));
    }
    norm_axis(axis, rank, None, name)
}

/// The shared inference of SoftMax and LogSoftmax: a float input, its own fact out.
pub fn infer_along(
    inputs: &[Fact],
    axis: i64,
    version: u32,
    name: &str,
) -> Result<Vec<Fact>, OpError> {
    expect_inputs(inputs, 1, name)?;
    let x = &inputs[0];
    if !x.ty.is_real() && x.ty != ElementType::Dynamic {
        return Err(OpError::input(
            0,
            codes::ELEMENT_TYPE,
            format!("{name}: input must be a floating-point type, got {}", x.ty),
        ));
    }
    if let Some(r) = x.rank() {
        softmax_axis(axis, r, version, name)?;
    }
    Ok(vec![Fact::new(x.ty, x.shape.clone())])
}

impl Op for Softmax {
    fn name(&self) -> &'static str {
        if self.version == 1 {
            "SoftMax-1"
        } else {
            "SoftMax-8"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        infer_along(inputs, self.axis, self.version, self.name())
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let s = x.shape();
        let k = softmax_axis(self.axis, s.len(), self.version, self.name())?;
        let (outer, along, inner): (usize, usize, usize) =
            (s[..k].iter().product(), s[k], s[k + 1..].iter().product());
        if inner == 1 && x.element_type() == ElementType::F32 {
            let out = map_rows_f32(x, along, &|row| {
                rten_simd::SimdOp::dispatch(rten_vecmath::Softmax::new_mut(row));
            })?;
            return Ok(vec![Arc::new(out)]);
        }
        if x.element_type() == ElementType::F32 && along > 0 {
            let mut own = crate::kernel::take_or_copy(x);
            let y = own
                .values_mut::<f32>()
                .ok_or_else(|| OpError::new(codes::INTERNAL, "f32 storage"))?;
            across_columns_f32(y, outer, along, inner, &softmax_columns);
            return Ok(vec![Arc::new(own)]);
        }
        let out = map_slices(&x, outer, along, inner, &softmax)?;
        Ok(vec![Arc::new(out)])
    }
}

/// Columns of a `[.., along, inner]` block this wide are one task: `along` rows of them
/// stay in L2 across the passes over them.
const COLUMNS: usize = 1024;

/// What a column kernel gets: the rows of its columns, which it rewrites in place.
pub type ColumnsFn<'a> = &'a (dyn Fn(&mut [&mut [f32]]) + Sync);

/// `f` over `y` viewed as `[outer, along, inner]` (inner > 1), in place, a task per block
/// and run of `COLUMNS` columns: every pass of `f` runs along a row, across the columns, so
/// a non-innermost axis is as vectorisable as the innermost one (a slice at a time would
/// stride through memory `along` times per element). In place: a new output, zeroed first,
/// was a tenth of a [1, 21, 128, 128] SoftMax.
pub fn across_columns_f32(y: &mut [f32], outer: usize, along: usize, inner: usize, f: ColumnsFn) {
    // Each task's pieces of the rows, split at the column runs: disjoint by construction.
    let runs = inner.div_ceil(COLUMNS);
    let mut tasks: Vec<Vec<&mut [f32]>> = (0..outer * runs)
        .map(|_| Vec::with_capacity(along))
        .collect();
    for (r, row) in y.chunks_mut(inner).enumerate() {
        let block = r / along;
        let mut rest = row;
        for c in 0..runs {
            let (piece, tail) = rest.split_at_mut(COLUMNS.min(rest.len()));
            tasks[block * runs + c].push(piece);
            rest = tail;
        }
    }
    crate::par::for_each_mut(&mut tasks, &|_, pieces| f(pieces));
}

/// The column maxima of `rows` (NaN passed over: it reaches the sums after, making its
/// column NaN).
///
/// Compiled for the widest vector unit, as the other column passes of SoftMax and
/// LogSoftmax are (`crate::simd::widest`): their max, subtract, add and divide give the same
/// bits at any width, and at the build's SSE2 width they took half of a [1, 21, 128, 128]
/// SoftMax's time.
pub fn column_max(rows: &[&mut [f32]]) -> Vec<f32> {
    crate::simd::widest(
        #[inline(always)]
        || {
            let w = rows.first().map_or(0, |r| r.len());
            let mut max = vec![f32::NEG_INFINITY; w];
            for r in rows {
                for (m, &v) in max.iter_mut().zip(r.iter()) {
                    *m = m.max(v);
                }
            }
            max
        },
    )
}

/// `values = e^(values - max)` in place, each added to its column's sum in `sum`: the
/// shared pass of SoftMax (on its rows) and LogSoftmax (on a copy of each row).
#[inline(always)]
pub fn exp_shifted(values: &mut [f32], max: &[f32], sum: &mut [f32]) {
    for (d, &m) in values.iter_mut().zip(max) {
        *d -= m;
    }
    rten_simd::SimdUnaryOp::map_mut(&rten_vecmath::Exp {}, values);
    for (s, &d) in sum.iter_mut().zip(values.iter()) {
        *s += d;
    }
}

/// Softmax down each column of `rows`, in place.
fn softmax_columns(rows: &mut [&mut [f32]]) {
    let max = column_max(rows);
    crate::simd::widest(
        #[inline(always)]
        || {
            let mut sum = vec![0f32; max.len()];
            for r in rows.iter_mut() {
                exp_shifted(r, &max, &mut sum);
            }
            for r in rows.iter_mut() {
                for (d, &s) in r.iter_mut().zip(&sum) {
                    *d /= s;
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// A non-innermost f32 axis (the column kernel) against the f64 slice kernel: blocks,
    /// more columns than one task takes, and columns holding NaN, +inf and all -inf.
    #[test]
    fn columns_match_slices() {
        let (outer, along, inner) = (2, 5, COLUMNS + 3);
        let mut x: Vec<f32> = (0..outer * along * inner)
            .map(|i| ((i * 7919 % 1000) as f32 / 100.0) - 5.0)
            .collect();
        x[3] = f32::NAN;
        x[inner + 4] = f32::INFINITY;
        for a in 0..along {
            x[a * inner + 5] = f32::NEG_INFINITY;
        }
        let mut y = x.clone();
        across_columns_f32(&mut y, outer, along, inner, &softmax_columns);
        let t = f32s(&[outer, along, inner], &x);
        let want = map_slices(&t, outer, along, inner, &softmax).unwrap();
        for (i, (g, w)) in y.iter().zip(want.values::<f32>().unwrap()).enumerate() {
            let same =
                (g.is_nan() && w.is_nan()) || (g - w).abs() <= 2e-6 * w.abs().max(1e-30) + 1e-7;
            assert!(same, "[{i}]: {g} vs {w}");
        }
        assert!(y[3].is_nan() && y[inner + 3].is_nan() && y[4].is_nan() && y[5].is_nan());
    }

    #[test]
    fn stable_and_along_the_axis() {
        let op = Softmax {
            axis: -1,
            version: 8,
        };
        let out = run(&op, vec![f32s(&[2, 2], &[1000., 0., 1., 1.])]);
        assert_eq!(out, f32s(&[2, 2], &[1., 0., 0.5, 0.5]));
        let op = Softmax {
            axis: 0,
            version: 1,
        };
        let out = run(&op, vec![f64s(&[2, 1], &[0., 2f64.ln()])]);
        let v = out.values::<f64>().unwrap();
        assert!((v[0] - 1. / 3.).abs() < 1e-15 && (v[1] - 2. / 3.).abs() < 1e-15);
        let out = run(
            &Softmax {
                axis: 0,
                version: 8,
            },
            vec![f32s(&[2], &[f32::INFINITY, 1.])],
        );
        assert!(out.values::<f32>().unwrap().iter().all(|v| v.is_nan()));
    }

    #[test]
    fn v1_rejects_negative_axes() {
        let e = infer1(
            &Softmax {
                axis: -1,
                version: 1,
            },
            &[fact(F32, "2,3")],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::AXIS);
        assert!(infer1(
            &Softmax {
                axis: -1,
                version: 8
            },
            &[fact(F32, "2,3")]
        )
        .is_ok());
        let e = infer1(
            &Softmax {
                axis: 1,
                version: 8,
            },
            &[fact(I32, "2,3")],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
    }
}
