//! MVN-1 and MVN-6: mean-variance normalisation over a set of axes. `d = x - mean(x)`; with
//! `normalize_variance`, divided by `sqrt(v + eps)` (`eps_mode="inside_sqrt"`, and always in
//! MVN-1) or `sqrt(v) + eps` (`outside_sqrt`), `v = mean(d^2)` (the population variance, as
//! the reference and CPU compute it).
//! * MVN-6: axes are input 1 (negative allowed, any order); `normalize_variance`, `eps`,
//!   `eps_mode` are required by the spec and read as the loader does when omitted (false, 0,
//!   inside_sqrt).
//! * MVN-1 (written `opset2` in IR): axes `[1, r)` with `across_channels`, else `[2, r)`, or
//!   the `reduction_axes` list when given.
//!
//! Adjacent axes (LayerNorm, instance and group norm shapes) run as slices of a
//! `[outer, along, inner]` view; any other set gathers each group of elements first.

use std::sync::Arc;

use irun_tensor::ElementType;

use crate::along::{map_rows_f32, map_slices};
use crate::attrs::AttrReader;
use crate::axes::normalise;
use crate::fact::Fact;
use crate::op::{codes, Op, OpError, Value};
use crate::util::{expect_int_type, ints};

#[derive(Debug)]
pub struct Mvn {
    pub version: u32,
    pub normalize_variance: bool,
    pub eps: f64,
    pub inside_sqrt: bool,
    /// MVN-1's axes rule: `across_channels`, or an explicit `reduction_axes`.
    pub across_channels: bool,
    pub reduction_axes: Option<Vec<i64>>,
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let reduction_axes = match a.get("reduction_axes") {
        None => None,
        Some(v) if v.value.trim().is_empty() => None,
        Some(v) => Some(
            v.value
                .split(',')
                .map(|s| s.trim().parse::<i64>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    OpError::attribute(
                        "reduction_axes",
                        format!("`reduction_axes=\"{}\"` is not a list of integers", v.value),
                    )
                })?,
        ),
    };
    Ok(Box::new(Mvn {
        version: 1,
        normalize_variance: a.bool_or("normalize_variance", false)?,
        eps: a.f64_or("eps", 0.0)?,
        inside_sqrt: true,
        across_channels: a.bool_or("across_channels", false)?,
        reduction_axes,
    }))
}

pub fn build_v6(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Mvn {
        version: 6,
        normalize_variance: a.bool_or("normalize_variance", false)?,
        eps: a.f64_or("eps", 0.0)?,
        inside_sqrt: a.enum_or("eps_mode", &["inside_sqrt", "outside_sqrt"], "inside_sqrt")?
            == "inside_sqrt",
        across_channels: false,
        reduction_axes: None,
    }))
}

impl Mvn {
    fn axes(&self, rank: usize, given: Option<&[i64]>) -> Result<Vec<usize>, OpError> {
        let name = self.name();
        match (self.version, given, &self.reduction_axes) {
            (6, Some(axes), _) => normalise(axes, rank, 1, name),
            (_, _, Some(list)) => normalise(list, rank, 0, name),
            _ => Ok((if self.across_channels { 1 } else { 2 }..rank).collect()),
        }
    }

    /// Axes that are not adjacent: each group of elements sharing the kept coordinates is
    /// gathered, normalised as a slice and put back.
    fn over_any_axes(&self, x: &Value, axes: &[usize]) -> Result<Vec<Value>, OpError> {
        let v = crate::floats::values(x, 0, self.name())?;
        let slots = crate::floats::reduced_slots(x.shape(), axes);
        let groups = slots.iter().max().map_or(0, |m| m + 1);
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); groups];
        for (i, &s) in slots.iter().enumerate() {
            members[s].push(i);
        }
        let mut y = vec![0.0; v.len()];
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for m in &members {
            a.clear();
            a.extend(m.iter().map(|&i| v[i]));
            b.resize(a.len(), 0.0);
            self.normalise_slice(&a, &mut b);
            for (&i, &r) in m.iter().zip(&b) {
                y[i] = r;
            }
        }
        crate::floats::like(x, y)
    }

    fn normalise_slice(&self, x: &[f64], y: &mut [f64]) {
        let n = x.len().max(1) as f64;
        let mean = x.iter().sum::<f64>() / n;
        for (d, &v) in y.iter_mut().zip(x) {
            *d = v - mean;
        }
        if self.normalize_variance {
            let var = y.iter().map(|d| d * d).sum::<f64>() / n;
            let div = if self.inside_sqrt {
                (var + self.eps).sqrt()
            } else {
                var.sqrt() + self.eps
            };
            for d in y.iter_mut() {
                *d /= div;
            }
        }
    }
}

impl Mvn {
    /// One f32 row (the normalised axes last and contiguous: LayerNorm), in place; the
    /// statistics in f64 as [`Mvn::normalise_slice`] computes them, summed in lanes.
    ///
    /// Compiled for the widest vector unit: at the build's SSE2 width, with a division an
    /// element, a BERT block's [128, 256] LayerNorm took 38 us (OpenVINO's f32 MVN: 8).
    fn normalise_row_f32(&self, row: &mut [f32]) {
        crate::simd::widest(
            #[inline(always)]
            || {
                let n = row.len().max(1) as f64;
                let mean = crate::floats::lane_sum(row, |v| v) / n;
                if !self.normalize_variance {
                    row.iter_mut().for_each(|v| *v = (*v as f64 - mean) as f32);
                    return;
                }
                let var = crate::floats::lane_sum(row, |v| (v - mean) * (v - mean)) / n;
                let div = if self.inside_sqrt {
                    (var + self.eps).sqrt()
                } else {
                    var.sqrt() + self.eps
                };
                // A multiply by the f64 reciprocal: within an f64 ulp or two of the
                // quotient, so the f32 result differs from the divided one only where the
                // quotient lies within 2^-52 of an f32 rounding point (a 0/0 row is NaN
                // either way). f64 divisions cost 10 cycles a vector on Zen 4.
                let inv = 1.0 / div;
                row.iter_mut()
                    .for_each(|v| *v = ((*v as f64 - mean) * inv) as f32);
            },
        )
    }
}

impl Op for Mvn {
    fn name(&self) -> &'static str {
        if self.version == 1 {
            "MVN-1"
        } else {
            "MVN-6"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let want = if self.version == 6 { 2 } else { 1 };
        if inputs.len() != want {
            return Err(OpError::new(
                codes::ARITY,
                format!(
                    "{} takes {want} input(s), got {}",
                    self.name(),
                    inputs.len()
                ),
            ));
        }
        if self.version == 6 {
            expect_int_type(inputs, 1, self.name())?;
        }
        let x = &inputs[0];
        if !x.ty.is_real() && x.ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!(
                    "{}: input must be a floating-point type, got {}",
                    self.name(),
                    x.ty
                ),
            ));
        }
        if let (Some(r), Some(axes)) = (x.rank(), inputs.get(1).and_then(crate::util::known_ints)) {
            self.axes(r, Some(&axes))?;
        }
        Ok(vec![Fact::new(x.ty, x.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let x = inputs
            .first()
            .ok_or_else(|| OpError::new(codes::ARITY, "MVN needs data"))?
            .clone();
        let given = match inputs.get(1) {
            Some(a) => Some(ints(a, 1)?),
            None => None,
        };
        let s = x.shape();
        let axes = self.axes(s.len(), given.as_deref())?;
        let adjacent = axes.windows(2).all(|w| w[1] == w[0] + 1);
        if !adjacent {
            return self.over_any_axes(&x, &axes);
        }
        let (first, last) = (
            axes.first().copied().unwrap_or(s.len()),
            axes.last().map_or(s.len(), |l| l + 1),
        );
        if last == s.len() && first < last && x.element_type() == ElementType::F32 {
            let along = s[first..].iter().product();
            drop(inputs);
            let out = map_rows_f32(x, along, &|row| self.normalise_row_f32(row))?;
            return Ok(vec![Arc::new(out)]);
        }
        let out = map_slices(
            &x,
            s[..first].iter().product(),
            s[first..last].iter().product(),
            s[last..].iter().product(),
            &|a, b| self.normalise_slice(a, b),
        )?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn v6(normalize_variance: bool, eps: f64, inside_sqrt: bool) -> Mvn {
        Mvn {
            version: 6,
            normalize_variance,
            eps,
            inside_sqrt,
            across_channels: false,
            reduction_axes: None,
        }
    }

    /// Axes 0 and 2 of [2, 2, 2]: each middle index is a group of four values.
    #[test]
    fn non_adjacent_axes() {
        let x = f32s(&[2, 2, 2], &(0..8).map(|v| v as f32).collect::<Vec<_>>());
        let y = run(&v6(false, 0.0, true), vec![x, i64s(&[2], &[0, 2])]);
        assert_eq!(
            y,
            f32s(&[2, 2, 2], &[-2.5, -1.5, -2.5, -1.5, 1.5, 2.5, 1.5, 2.5])
        );
    }

    #[test]
    fn f32_rows_match_the_f64_path() {
        let (rows, along) = (40, 131);
        let x: Vec<f32> = (0..rows * along)
            .map(|i| ((i * 7919) % 997) as f32 / 31.0 - 16.0)
            .collect();
        let wide: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for (nv, eps, inside) in [(true, 1e-5, true), (true, 1e-3, false), (false, 0.0, true)] {
            let op = v6(nv, eps, inside);
            let axes = i64s(&[1], &[-1]);
            let got = run(&op, vec![f32s(&[rows, along], &x), axes.clone()]);
            let want = run(&op, vec![f64s(&[rows, along], &wide), axes]);
            for (i, (&g, &w)) in got
                .values::<f32>()
                .unwrap()
                .iter()
                .zip(want.values::<f64>().unwrap())
                .enumerate()
            {
                assert!(
                    (g as f64 - w).abs() <= 1e-6 * (1.0 + w.abs()),
                    "{nv} {eps} {inside} element {i}: {g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn layer_norm_shape() {
        let x = f64s(&[2, 2], &[1., 3., 2., 4.]);
        let out = run(&v6(true, 0.0, true), vec![x.clone(), i64s(&[1], &[-1])]);
        assert_eq!(out, f64s(&[2, 2], &[-1., 1., -1., 1.]));
        let out = run(&v6(false, 0.0, true), vec![x, i64s(&[1], &[0])]);
        assert_eq!(out, f64s(&[2, 2], &[-0.5, -0.5, 0.5, 0.5]));
    }

    #[test]
    fn eps_modes() {
        let x = f64s(&[2], &[0., 2.]);
        let inside = run(&v6(true, 1.0, true), vec![x.clone(), i64s(&[1], &[0])]);
        assert_eq!(inside, f64s(&[2], &[-1. / 2f64.sqrt(), 1. / 2f64.sqrt()]));
        let outside = run(&v6(true, 1.0, false), vec![x, i64s(&[1], &[0])]);
        assert_eq!(outside, f64s(&[2], &[-0.5, 0.5]));
    }

    #[test]
    fn mvn1_axes_rule() {
        let op = Mvn {
            version: 1,
            normalize_variance: false,
            eps: 0.0,
            inside_sqrt: true,
            across_channels: true,
            reduction_axes: None,
        };
        let out = run(&op, vec![f32s(&[1, 2, 2], &[1., 2., 3., 6.])]);
        assert_eq!(out, f32s(&[1, 2, 2], &[-2., -1., 0., 3.]));
    }
}
