//! Interpolate-1, -4 and -11: resizing along some axes.
//!
//! - v4 inputs: data, `sizes` (integers), `scales` (floats), optional `axes`; v11 merges
//!   the two middle inputs into one `scales_or_sizes`; `shape_calculation_mode` (required)
//!   says which is used. v1 takes the axes as an attribute and the sizes as input 1.
//! - Default axes are all of them; axes lie in `[0, rank)`, in any order, and name which
//!   sizes or scales entry goes where.
//! - The data is first zero-padded by `pads_begin` / `pads_end` (a padded dim `p`). An axis
//!   in `sizes` mode becomes `sizes[i]` with scale `out / p` (f32); in `scales` mode
//!   `trunc(p * (scale + 1e-6))` (f32, no epsilon for a scale of exactly 1) with the given
//!   scale.
//! - `mode`: `nearest` (any type: a copy), `linear` (triangle filter, antialiased by the
//!   scale when `antialias` is set and some scale is below 1), `linear_onnx`, `cubic`
//!   (`cube_coeff`), `bilinear_pillow` / `bicubic_pillow` (v11, exactly two axes, H then W;
//!   the W pass runs first and its result is stored in the element type). Integer results
//!   of `linear` and the pillow modes round half away from zero, those of `linear_onnx`
//!   and `cubic` truncate, as OpenVINO's reference does.
//! - v1 runs as v4: `nearest` with `simple` rounding, `linear` as `linear_onnx` below rank
//!   5, `cubic` with -0.75; `align_corners` picks that transform, otherwise asymmetric
//!   (half-pixel for the linear modes when there are no pads, except 4-D data resized over
//!   axes 2 and 3). Its `area` mode is refused.
//!
//! OpenVINO CPU ignores `antialias`; the reference and the specification apply it, and so
//! does irun.

use irun_opkit::number::Number;
use irun_ops_movement::axis_map::AxisMap;
use irun_tensor::{with_number, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, Op, OpError, Value};
use crate::resample::{pass, Axis, Coord, Nearest, Taps};
use crate::util::{ints, known_ints};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Nearest,
    Linear,
    LinearOnnx,
    Cubic,
    BilinearPillow,
    BicubicPillow,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Version {
    V1,
    V4,
    V11,
}

#[derive(Debug)]
pub struct Interpolate {
    version: Version,
    mode: Mode,
    /// Whether the output dims come from scales (else from sizes).
    by_scales: bool,
    coord: Coord,
    nearest: Nearest,
    antialias: bool,
    pads_begin: Vec<i64>,
    pads_end: Vec<i64>,
    cube_coeff: f64,
    /// v1's `axes` attribute.
    v1_axes: Vec<i64>,
    /// v1's `align_corners`.
    align_corners: bool,
}

fn pads(a: &AttrReader) -> Result<(Vec<i64>, Vec<i64>), OpError> {
    Ok((
        a.i64_list_or("pads_begin", Some(vec![0]))?,
        a.i64_list_or("pads_end", Some(vec![0]))?,
    ))
}

fn read_v4(a: &AttrReader, version: Version) -> Result<Box<dyn Op>, OpError> {
    let mut modes = vec!["nearest", "linear", "linear_onnx", "cubic"];
    if version == Version::V11 {
        modes.extend(["bilinear_pillow", "bicubic_pillow"]);
    }
    a.required("mode")?;
    let mode = match a.enum_or("mode", &modes, "nearest")? {
        "linear" => Mode::Linear,
        "linear_onnx" => Mode::LinearOnnx,
        "cubic" => Mode::Cubic,
        "bilinear_pillow" => Mode::BilinearPillow,
        "bicubic_pillow" => Mode::BicubicPillow,
        _ => Mode::Nearest,
    };
    a.required("shape_calculation_mode")?;
    let by_scales = a.enum_or("shape_calculation_mode", &["sizes", "scales"], "sizes")? == "scales";
    let coord = match a.enum_or(
        "coordinate_transformation_mode",
        &[
            "half_pixel",
            "pytorch_half_pixel",
            "asymmetric",
            "tf_half_pixel_for_nn",
            "align_corners",
        ],
        "half_pixel",
    )? {
        "pytorch_half_pixel" => Coord::PytorchHalfPixel,
        "asymmetric" => Coord::Asymmetric,
        "tf_half_pixel_for_nn" => Coord::TfHalfPixelForNn,
        "align_corners" => Coord::AlignCorners,
        _ => Coord::HalfPixel,
    };
    let nearest = match a.enum_or(
        "nearest_mode",
        &[
            "round_prefer_floor",
            "round_prefer_ceil",
            "floor",
            "ceil",
            "simple",
        ],
        "round_prefer_floor",
    )? {
        "round_prefer_ceil" => Nearest::RoundPreferCeil,
        "floor" => Nearest::Floor,
        "ceil" => Nearest::Ceil,
        "simple" => Nearest::Simple,
        _ => Nearest::RoundPreferFloor,
    };
    let (pads_begin, pads_end) = pads(a)?;
    Ok(Box::new(Interpolate {
        version,
        mode,
        by_scales,
        coord,
        nearest,
        antialias: a.bool_or("antialias", false)?,
        pads_begin,
        pads_end,
        cube_coeff: a.f64_or("cube_coeff", -0.75)?,
        v1_axes: Vec::new(),
        align_corners: false,
    }))
}

pub fn build_v4(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read_v4(a, Version::V4)
}

pub fn build_v11(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read_v4(a, Version::V11)
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("mode")?;
    let mode =
        match a.enum_or("mode", &["nearest", "linear", "cubic", "area"], "nearest")? {
            "area" => return Err(OpError::new(
                codes::UNSUPPORTED_OP,
                "Interpolate-1 in `area` mode is not implemented (OpenVINO's reference has none)",
            )),
            "linear" => Mode::Linear,
            "cubic" => Mode::Cubic,
            _ => Mode::Nearest,
        };
    let (pads_begin, pads_end) = pads(a)?;
    Ok(Box::new(Interpolate {
        version: Version::V1,
        mode,
        by_scales: false,
        coord: Coord::Asymmetric,
        nearest: Nearest::Simple,
        antialias: a.bool_or("antialias", false)?,
        pads_begin,
        pads_end,
        cube_coeff: -0.75,
        v1_axes: a.i64_list_or("axes", None)?,
        align_corners: a.bool_or("align_corners", false)?,
    }))
}

/// What one run resizes: the padded shape, the output shape, the listed axes and their
/// scales (f32, as OpenVINO computes coordinates).
struct Plan {
    padded: Vec<usize>,
    out: Vec<usize>,
    axes: Vec<usize>,
    scales: Vec<f32>,
}

impl Interpolate {
    fn name_str(&self) -> &'static str {
        match self.version {
            Version::V1 => "Interpolate-1",
            Version::V4 => "Interpolate-4",
            Version::V11 => "Interpolate-11",
        }
    }

    fn bad(&self, slot: usize, code: &'static str, m: String) -> OpError {
        OpError::input(slot, code, format!("{}: {m}", self.name_str()))
    }

    /// The slot of the sizes or scales input in use, and of the axes input.
    fn slots(&self) -> (usize, Option<usize>) {
        match (self.version, self.by_scales) {
            (Version::V1, _) => (1, None),
            (Version::V4, false) => (1, Some(3)),
            (Version::V4, true) => (2, Some(3)),
            (Version::V11, _) => (1, Some(2)),
        }
    }

    fn arity(&self) -> (usize, usize) {
        match self.version {
            Version::V1 => (2, 2),
            Version::V4 => (3, 4),
            Version::V11 => (2, 3),
        }
    }

    /// The axes, checked against the rank; `None` while an axes input is unknown.
    fn axes(
        &self,
        rank: usize,
        axes_input: Option<Option<Vec<i64>>>,
    ) -> Result<Option<Vec<usize>>, OpError> {
        let (slot, raw) = match (self.version, axes_input) {
            (Version::V1, _) => (0, self.v1_axes.clone()),
            (_, None) => return Ok(Some((0..rank).collect())),
            (_, Some(None)) => return Ok(None),
            (_, Some(Some(v))) => (self.slots().1.unwrap_or(0), v),
        };
        let mut axes = Vec::with_capacity(raw.len());
        for &a in &raw {
            if a < 0 || a as usize >= rank || axes.contains(&(a as usize)) {
                let m = format!("axes {raw:?} must be distinct and in [0, {rank})");
                return Err(match self.version {
                    Version::V1 => OpError::attribute("axes", m).with_code(codes::AXIS),
                    _ => self.bad(slot, codes::AXIS, m),
                });
            }
            axes.push(a as usize);
        }
        Ok(Some(axes))
    }

    /// The pads of each dim (missing entries 0, extra ones ignored) and the padded dim.
    fn padded(&self, d: u64, i: usize) -> Result<u64, OpError> {
        let b = self.pads_begin.get(i).copied().unwrap_or(0);
        let e = self.pads_end.get(i).copied().unwrap_or(0);
        let p = d as i128 + b as i128 + e as i128;
        u64::try_from(p).map_err(|_| {
            OpError::attribute(
                "pads_begin",
                format!(
                    "{}: dim {i} of {d} padded by {b} and {e} is negative",
                    self.name_str()
                ),
            )
        })
    }

    /// The output dims of the listed axes from the sizes or scales values, and the scales.
    fn resize(
        &self,
        padded: &[u64],
        axes: &[usize],
        values: &Tensor,
    ) -> Result<(Vec<u64>, Vec<f32>), OpError> {
        let slot = self.slots().0;
        let n = axes.len();
        if self.by_scales {
            let s: Vec<f32> = float_values(values).ok_or_else(|| {
                self.bad(
                    slot,
                    codes::ELEMENT_TYPE,
                    "the scales must be floats".into(),
                )
            })?;
            if s.len() < n {
                return Err(self.bad(
                    slot,
                    codes::SHAPE,
                    format!("{} scales for {n} axes", s.len()),
                ));
            }
            let mut dims = Vec::with_capacity(n);
            for (i, &a) in axes.iter().enumerate() {
                let p = padded[a] as f32;
                let scaled = if s[i] == 1.0 { p } else { p * (s[i] + 1.0e-6) };
                if !(scaled >= 0.0 && scaled < u32::MAX as f32) {
                    return Err(self.bad(
                        slot,
                        codes::BAD_VALUE,
                        format!("scale {} gives dim {scaled}", s[i]),
                    ));
                }
                dims.push(scaled.trunc() as u64);
            }
            Ok((dims, s[..n].to_vec()))
        } else {
            let v = ints(values, slot)?;
            if v.len() < n {
                return Err(self.bad(
                    slot,
                    codes::SHAPE,
                    format!("{} sizes for {n} axes", v.len()),
                ));
            }
            let mut dims = Vec::with_capacity(n);
            let mut scales = Vec::with_capacity(n);
            for (i, &a) in axes.iter().enumerate() {
                let d = u64::try_from(v[i]).map_err(|_| {
                    self.bad(slot, codes::BAD_VALUE, format!("size {} is negative", v[i]))
                })?;
                dims.push(d);
                scales.push(d as f32 / padded[a] as f32);
            }
            Ok((dims, scales))
        }
    }

    fn plan(&self, shape: &[usize], inputs: &[Value]) -> Result<Plan, OpError> {
        let rank = shape.len();
        let (slot, axes_slot) = self.slots();
        let axes_input = axes_slot
            .and_then(|s| inputs.get(s))
            .map(|t| ints(t, axes_slot.unwrap_or(0)).map(Some))
            .transpose()?;
        let axes = self.axes(rank, axes_input)?.unwrap_or_default();
        let padded: Vec<u64> = shape
            .iter()
            .enumerate()
            .map(|(i, &d)| self.padded(d as u64, i))
            .collect::<Result<_, _>>()?;
        let values = inputs
            .get(slot)
            .ok_or_else(|| OpError::new(codes::ARITY, "missing input"))?;
        let (dims, scales) = self.resize(&padded, &axes, values)?;
        let mut out: Vec<usize> = padded.iter().map(|&p| p as usize).collect();
        for (&a, &d) in axes.iter().zip(&dims) {
            out[a] = d as usize;
        }
        Ok(Plan {
            padded: padded.iter().map(|&p| p as usize).collect(),
            out,
            axes,
            scales,
        })
    }

    /// v1's mode, transform and rounding as v4 runs them.
    fn effective(&self, rank: usize) -> (Mode, Coord) {
        if self.version != Version::V1 {
            return (self.mode, self.coord);
        }
        let mode = match self.mode {
            Mode::Linear if rank < 5 => Mode::LinearOnnx,
            m => m,
        };
        let coord = if self.align_corners {
            Coord::AlignCorners
        } else {
            let no_pads = self
                .pads_begin
                .iter()
                .chain(&self.pads_end)
                .all(|&p| p == 0);
            let spatial_4d = rank == 4 && {
                let mut a = self.v1_axes.clone();
                a.sort();
                a == [2, 3]
            };
            if matches!(mode, Mode::Linear | Mode::LinearOnnx) && no_pads && !spatial_4d {
                Coord::HalfPixel
            } else {
                Coord::Asymmetric
            }
        };
        (mode, coord)
    }
}

/// The values of a float tensor as f32.
fn float_values(t: &Tensor) -> Option<Vec<f32>> {
    if !t.element_type().is_real() {
        return None;
    }
    Some(
        irun_opkit::number::f64_values(t)?
            .into_iter()
            .map(|v| v as f32)
            .collect(),
    )
}

impl Op for Interpolate {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    fn value_inputs(&self) -> &'static [usize] {
        match self.version {
            Version::V1 => &[1],
            Version::V4 => &[1, 2, 3],
            Version::V11 => &[1, 2],
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let (lo, hi) = self.arity();
        crate::op::expect_inputs_between(inputs, lo, hi, self.name())?;
        let data = &inputs[0];
        if matches!(data.ty, ElementType::Boolean | ElementType::String)
            && self.mode != Mode::Nearest
        {
            return Err(self.bad(
                0,
                codes::ELEMENT_TYPE,
                format!("data of {} cannot be filtered", data.ty),
            ));
        }
        for (slot, f) in inputs.iter().enumerate().skip(1) {
            if f.rank().is_some_and(|r| r != 1) {
                return Err(self.bad(
                    slot,
                    codes::RANK,
                    format!("input {slot} {} must be 1-D", f.shape),
                ));
            }
        }
        let (slot, axes_slot) = self.slots();
        let want_float = self.by_scales;
        let ty = inputs[slot].ty;
        if ty != ElementType::Dynamic && ty.is_real() != want_float {
            let what = if want_float {
                "scales must be floats"
            } else {
                "sizes must be integers"
            };
            return Err(self.bad(slot, codes::ELEMENT_TYPE, format!("the {what}, got {ty}")));
        }
        let Some(dims) = data.shape.dims() else {
            return Ok(vec![Fact::new(data.ty, PartialShape::dynamic_rank())]);
        };
        let rank = dims.len();
        let axes_input = axes_slot.and_then(|s| inputs.get(s)).map(known_ints);
        let Some(axes) = self.axes(rank, axes_input)? else {
            return Ok(vec![Fact::new(
                data.ty,
                PartialShape::dynamic_of_rank(rank),
            )]);
        };
        if matches!(self.mode, Mode::BilinearPillow | Mode::BicubicPillow) && axes.len() != 2 {
            return Err(self.bad(
                axes_slot.unwrap_or(0),
                codes::AXIS,
                format!("the pillow modes resize exactly 2 axes, got {}", axes.len()),
            ));
        }
        let mut out: Vec<Dim> = Vec::with_capacity(rank);
        let mut padded = Vec::with_capacity(rank);
        for (i, d) in dims.iter().enumerate() {
            let p = d.get_static().map(|d| self.padded(d, i)).transpose()?;
            padded.push(p);
            out.push(p.map_or(Dim::DYNAMIC, Dim::fixed));
        }
        match inputs[slot].value.as_ref() {
            Some(v) if padded.iter().all(Option::is_some) || !self.by_scales => {
                let p: Vec<u64> = padded.iter().map(|p| p.unwrap_or(1)).collect();
                let (new, _) = self.resize(&p, &axes, v)?;
                for (&a, &n) in axes.iter().zip(&new) {
                    out[a] = Dim::fixed(n);
                }
            }
            _ => axes.iter().for_each(|&a| out[a] = Dim::DYNAMIC),
        }
        Ok(vec![Fact::new(data.ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let data = &inputs[0];
        let shape = data.shape().to_vec();
        let plan = self.plan(&shape, &inputs)?;
        let padded = self.pad(data, &shape, &plan.padded)?;
        let (mode, coord) = self.effective(shape.len());
        if plan
            .out
            .iter()
            .zip(&plan.padded)
            .any(|(&o, &p)| o > 0 && p == 0)
        {
            return Err(OpError::new(
                codes::RUN_VALUE,
                format!(
                    "{}: an empty dim cannot be resized to a non-empty one",
                    self.name()
                ),
            ));
        }
        let axis = |a: usize, scale: f32| Axis {
            coord,
            scale,
            li: plan.padded[a],
            lo: plan.out[a],
        };
        if mode == Mode::Nearest {
            let mut all_scales = vec![1.0f32; shape.len()];
            for (&a, &s) in plan.axes.iter().zip(&plan.scales) {
                all_scales[a] = s;
            }
            let tables = (0..shape.len())
                .map(|a| axis(a, all_scales[a]).nearest(self.nearest))
                .collect();
            let map = AxisMap::new(tables, &plan.padded, self.name())?;
            return Ok(vec![map.apply(&padded, None, self.name())?]);
        }
        // The filtered modes: one pass per listed axis.
        let antialias = self.antialias && plan.scales.iter().any(|&s| s < 1.0);
        let mut steps: Vec<(usize, Vec<Taps>)> = Vec::new();
        for (&a, &s) in plan.axes.iter().zip(&plan.scales) {
            let ax = axis(a, s);
            let taps = match mode {
                Mode::Linear => ax.linear(if antialias { s } else { 1.0 }),
                Mode::LinearOnnx => ax.linear_onnx(),
                Mode::Cubic => ax.cubic(self.cube_coeff),
                Mode::BilinearPillow => ax.pillow(1.0, &|x| (1.0 - x.abs()).max(0.0)),
                Mode::BicubicPillow => {
                    let c = self.cube_coeff;
                    ax.pillow(2.0, &|x| crate::resample::keys(x, c))
                }
                Mode::Nearest => unreachable!("handled above"),
            };
            steps.push((a, taps));
        }
        let pillow = matches!(mode, Mode::BilinearPillow | Mode::BicubicPillow);
        if pillow {
            // W (the second axis) first.
            steps.reverse();
        }
        let ty = padded.element_type();
        let r = shape.len();
        if let ([(h, th), (w, tw)], ElementType::F32, false) = (&steps[..], ty, pillow) {
            if *h + 2 == r && *w + 1 == r {
                let v = padded
                    .values::<f32>()
                    .ok_or_else(|| OpError::new(codes::INTERNAL, "storage"))?;
                let y = crate::resample::last_two_f32(v, &plan.padded, th, tw)?;
                let out = Tensor::from_f32(plan.out.clone(), y)
                    .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
                return Ok(vec![std::sync::Arc::new(out)]);
            }
        }
        let round = match mode {
            Mode::Linear | Mode::BilinearPillow | Mode::BicubicPillow => Rounding::HalfAway,
            _ => Rounding::Truncate,
        };
        let out = with_number!(ty, T => {
            let v = padded.values::<T>().ok_or_else(|| OpError::new(codes::INTERNAL, "storage"))?;
            let mut cur: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
            let mut cur_shape = plan.padded.clone();
            let last = steps.len();
            for (i, (a, taps)) in steps.iter().enumerate() {
                cur = pass(&cur, &cur_shape, *a, taps);
                cur_shape[*a] = taps.len();
                if pillow && i + 1 < last {
                    // Pillow keeps the first pass's result in the element type.
                    cur.iter_mut().for_each(|x| *x = to_type::<T>(*x, round).to_f64());
                }
            }
            let y: Vec<T> = cur.iter().map(|&x| to_type::<T>(x, round)).collect();
            Tensor::new(ty, plan.out.clone(), T::wrap(y))
        }, else return Err(self.bad(0, codes::UNSUPPORTED_TYPE, format!("filtering {ty} data"))));
        let out = out.map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![std::sync::Arc::new(out)])
    }
}

#[derive(Clone, Copy)]
enum Rounding {
    HalfAway,
    Truncate,
}

/// `x` in `T`: floats round to nearest; integers by `round`, saturating.
fn to_type<T: Number>(x: f64, round: Rounding) -> T {
    let x = if T::IS_INTEGER {
        match round {
            Rounding::HalfAway => x.round(),
            Rounding::Truncate => x.trunc(),
        }
    } else {
        x
    };
    T::from_f64(x)
}

impl Interpolate {
    /// The data zero-padded to `padded` (the input itself without pads).
    fn pad(&self, data: &Value, shape: &[usize], padded: &[usize]) -> Result<Value, OpError> {
        if shape == padded && self.pads_begin.iter().all(|&p| p == 0) {
            return Ok(data.clone());
        }
        AxisMap::shifted(shape, &self.pads_begin, padded, self.name())?.apply(
            data,
            None,
            self.name(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::eval1;
    use irun_opkit::testing::prelude::*;

    fn v11(mode: Mode, coord: Coord, by_scales: bool) -> Interpolate {
        Interpolate {
            version: Version::V11,
            mode,
            by_scales,
            coord,
            nearest: Nearest::RoundPreferFloor,
            antialias: false,
            pads_begin: vec![0],
            pads_end: vec![0],
            cube_coeff: -0.75,
            v1_axes: Vec::new(),
            align_corners: false,
        }
    }

    fn grid() -> Tensor {
        f32s(
            &[1, 1, 4, 4],
            &(1..=16).map(|v| v as f32).collect::<Vec<_>>(),
        )
    }

    fn close(got: &Tensor, want: &[f32]) {
        let got = got.values::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "[{i}]: {g} != {w}"
            );
        }
    }

    /// ONNX's cubic example (4x4 of 1..16, scales 2, a = -0.75, half-pixel); the values are
    /// onnx.reference's.
    #[test]
    fn cubic_upsampling() {
        let op = v11(Mode::Cubic, Coord::HalfPixel, true);
        let y = eval1(&op, vec![grid(), f32s(&[4], &[1., 1., 2., 2.])]).unwrap();
        assert_eq!(y.shape(), &[1, 1, 8, 8]);
        let v = y.values::<f32>().unwrap();
        close(
            &f32s(&[8], &v[..8]),
            &[
                0.47265625, 0.76953125, 1.2460938, 1.875, 2.28125, 2.9101562, 3.3867188, 3.6835938,
            ],
        );
        close(
            &f32s(&[8], &v[56..]),
            &[
                13.316406, 13.613281, 14.089844, 14.71875, 15.125, 15.753906, 16.230469, 16.527344,
            ],
        );
    }

    /// linear_onnx down to 3x3 by sizes, and nearest (asymmetric, floor) to 3x2, with axes.
    #[test]
    fn linear_and_nearest_by_sizes() {
        let op = v11(Mode::LinearOnnx, Coord::HalfPixel, false);
        let y = eval1(&op, vec![grid(), i64s(&[2], &[3, 3]), i64s(&[2], &[2, 3])]).unwrap();
        close(
            &y,
            &[
                1.8333334, 3.1666667, 4.5, 7.1666665, 8.5, 9.833333, 12.5, 13.833333, 15.166667,
            ],
        );
        let mut op = v11(Mode::Nearest, Coord::Asymmetric, false);
        op.nearest = Nearest::Floor;
        let y = eval1(&op, vec![grid(), i64s(&[2], &[3, 2]), i64s(&[2], &[2, 3])]).unwrap();
        assert_eq!(y, f32s(&[1, 1, 3, 2], &[1., 3., 5., 7., 9., 11.]));
    }

    /// ONNX's linear example with align_corners: [[1, 2], [3, 4]] to 4x4.
    #[test]
    fn align_corners() {
        let op = v11(Mode::LinearOnnx, Coord::AlignCorners, true);
        let x = f32s(&[1, 1, 2, 2], &[1., 2., 3., 4.]);
        let y = eval1(&op, vec![x, f32s(&[4], &[1., 1., 2., 2.])]).unwrap();
        let t = 1.0 / 3.0;
        #[rustfmt::skip]
        let want = [
            1., 1. + t, 1. + 2. * t, 2.,
            1. + 2. * t, 2., 2. + t, 2. + 2. * t,
            2. + t, 2. + 2. * t, 3., 3. + t,
            3., 3. + t, 3. + 2. * t, 4.,
        ];
        close(&y, &want.map(|v| v as f32));
    }

    /// `linear` (the triangle filter) on integers rounds half away from zero; `cubic`
    /// truncates.
    #[test]
    fn integer_results_round_per_mode() {
        let x = i32s(&[1, 2], &[0, 3]);
        let op = v11(Mode::Linear, Coord::HalfPixel, false);
        // Half-pixel 2 -> 4: coordinates -0.25, 0.25, 0.75, 1.25; at 0.25: 0.75*0 + 0.25*3.
        let y = eval1(&op, vec![x.clone(), i64s(&[1], &[4]), i64s(&[1], &[1])]).unwrap();
        assert_eq!(y, i32s(&[1, 4], &[0, 1, 2, 3]));
        let op = v11(Mode::LinearOnnx, Coord::HalfPixel, false);
        let y = eval1(&op, vec![x, i64s(&[1], &[4]), i64s(&[1], &[1])]).unwrap();
        assert_eq!(y, i32s(&[1, 4], &[0, 0, 2, 3]));
    }

    /// Shapes: scales with the epsilon (5 x 0.6 = 3, 5 x 1.4 = 7), pads, unknown sizes.
    #[test]
    fn shapes_and_errors() {
        let op = v11(Mode::Nearest, Coord::HalfPixel, true);
        let scales = Fact::of_static(F32, &[2]).with_value(f32s(&[2], &[0.6, 1.4]));
        let f = op
            .infer(&[fact(F32, "1,5,5"), scales, i64_value(&[1, 2])])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[1,3,7]");
        let mut padded = v11(Mode::Nearest, Coord::HalfPixel, false);
        padded.pads_begin = vec![0, 1];
        padded.pads_end = vec![0, 1];
        let f = padded
            .infer(&[fact(F32, "2,3"), fact(I64, "1"), i64_value(&[0])])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[?,5]");
        let e = op
            .infer(&[fact(F32, "1,5"), fact(F32, "1"), i64_value(&[2])])
            .unwrap_err();
        assert_eq!(e.code, codes::AXIS);
        let e = op.infer(&[fact(F32, "1,5"), fact(I64, "1")]).unwrap_err();
        assert!(e.message.contains("scales must be floats"), "{}", e.message);
    }
}
