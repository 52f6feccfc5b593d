//! PriorBox-1 and PriorBox-8 (SSD anchors): inputs `output_size [H, W]` and `image_size
//! [IH, IW]`, integers; output f32 `[2, 4·H·W·P]`, row 0 the boxes `(x1, y1, x2, y2)` divided
//! by the image size, row 1 the variances (0, 1 or 4 values; none means 0.1).
//!
//! As OpenVINO's reference, in f32, for each position (row-major), the boxes in this order:
//! - for each `fixed_size` f (with `density` d: a d x d grid of centres `shift = f div d` apart
//!   around the cell's): the f x f box (with `fixed_ratio`s instead: a box per ratio), then a
//!   box per aspect ratio other than 1, all clipped to [0, 1] as they are made;
//! - for each `min_size` m: the m x m box; then, with `min_max_aspect_ratios_order` (v8;
//!   always in v1), the `sqrt(m·M)` box of the matching `max_size` M before the aspect-ratio
//!   boxes `m·√ar x m/√ar` (after them otherwise). Without `scale_all_sizes` (mxnet) only the
//!   last min size gets aspect-ratio boxes, made from the first min size; the sizes and the
//!   step are scaled by IH, and a step of -1 means IH / H.
//!
//! The aspect ratios are 1 and each given ratio not yet present (within 1e-6), followed by its
//! reciprocal with `flip`. A step of 0 centres boxes at `(w + 0.5)·IW/W` (offset ignored),
//! else at `(offset + w)·step`. `clip` clamps every box value at the end. The prior count
//! is the boxes this walk makes for a cell, so the shape and the values always agree.

use std::sync::Arc;

use irun_tensor::Tensor;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug, Clone)]
pub struct PriorBox {
    pub version: u32,
    pub min_size: Vec<f32>,
    pub max_size: Vec<f32>,
    pub aspect_ratios: Vec<f32>,
    pub clip: bool,
    pub step: f32,
    pub offset: f32,
    pub variances: Vec<f32>,
    pub scale_all_sizes: bool,
    pub fixed_ratio: Vec<f32>,
    pub fixed_size: Vec<f32>,
    pub density: Vec<f32>,
    pub min_max_aspect_ratios_order: bool,
}

fn build(a: &AttrReader, version: u32) -> Result<Box<dyn Op>, OpError> {
    let floats = |name: &'static str| -> Result<Vec<f32>, OpError> {
        Ok(a.f64_list_or(name, Some(Vec::new()))?
            .into_iter()
            .map(|v| v as f32)
            .collect())
    };
    let flip = a.bool_or("flip", false)?;
    let mut aspect_ratios = vec![1.0f32];
    for ar in floats("aspect_ratio")? {
        if !aspect_ratios.iter().any(|&e| (ar - e).abs() < 1e-6) {
            aspect_ratios.push(ar);
            if flip {
                aspect_ratios.push(1.0 / ar);
            }
        }
    }
    let mut variances = floats("variance")?;
    if !matches!(variances.len(), 0 | 1 | 4) {
        return Err(OpError::attribute(
            "variance",
            format!(
                "PriorBox: variance takes 0, 1 or 4 values, got {}",
                variances.len()
            ),
        ));
    }
    if variances.is_empty() {
        variances.push(0.1);
    }
    let (fixed_size, density) = (floats("fixed_size")?, floats("density")?);
    if !fixed_size.is_empty() && density.len() < fixed_size.len() {
        return Err(OpError::attribute(
            "density",
            format!(
                "PriorBox: {} densities for {} fixed sizes",
                density.len(),
                fixed_size.len()
            ),
        ));
    }
    if !fixed_size.is_empty() && !a.f64_list_or("min_size", Some(Vec::new()))?.is_empty() {
        // OpenVINO counts 2 x fixed sizes + density boxes per cell for the output's shape
        // but its reference then writes the min-size boxes too, past the end.
        return Err(OpError::attribute(
            "fixed_size",
            "PriorBox: fixed_size together with min_size is not supported (OpenVINO's output shape does not hold the boxes its reference makes)",
        ));
    }
    if density.iter().any(|&d| d < 1.0) {
        return Err(OpError::attribute(
            "density",
            "PriorBox: densities must be at least 1",
        ));
    }
    Ok(Box::new(PriorBox {
        version,
        min_size: floats("min_size")?,
        max_size: floats("max_size")?,
        aspect_ratios,
        clip: a.bool_or("clip", false)?,
        step: a.f64_or("step", 0.0)? as f32,
        offset: a.f64_or("offset", 0.0)? as f32,
        variances,
        scale_all_sizes: a.bool_or("scale_all_sizes", true)?,
        fixed_ratio: floats("fixed_ratio")?,
        fixed_size,
        density,
        min_max_aspect_ratios_order: version == 1
            || a.bool_or("min_max_aspect_ratios_order", true)?,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 1)
}

pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 8)
}

fn below(x: f32, t: f32) -> f32 {
    if x < t {
        x
    } else {
        t
    }
}

fn above(x: f32, t: f32) -> f32 {
    if x > t {
        x
    } else {
        t
    }
}

impl PriorBox {
    /// Every box of the map `[h, w]` on the image `[ih, iw]`, four values each, unclipped by
    /// `clip` (the fixed-size boxes clip themselves).
    fn boxes(&self, [lh, lw]: [i64; 2], [ih, iw]: [i64; 2]) -> Vec<f32> {
        let mut step = self.step;
        let mut min_size = self.min_size.clone();
        if !self.scale_all_sizes {
            step = if step == -1.0 {
                ih as f32 / lh as f32
            } else {
                step * ih as f32
            };
            for m in &mut min_size {
                *m *= ih as f32;
            }
        }
        let (iwi, ihi) = (1.0 / iw as f32, 1.0 / ih as f32);
        let (step_x, step_y) = if step == 0.0 {
            (iw as f32 / lw as f32, ih as f32 / lh as f32)
        } else {
            (step, step)
        };
        let mut out = Vec::new();
        let mut push = |cx: f32, cy: f32, bw: f32, bh: f32, clip: bool| {
            if clip {
                out.extend([
                    above((cx - bw) * iwi, 0.0),
                    above((cy - bh) * ihi, 0.0),
                    below((cx + bw) * iwi, 1.0),
                    below((cy + bh) * ihi, 1.0),
                ]);
            } else {
                out.extend([
                    (cx - bw) * iwi,
                    (cy - bh) * ihi,
                    (cx + bw) * iwi,
                    (cy + bh) * ihi,
                ]);
            }
        };
        let ratios: Vec<f32> = self
            .aspect_ratios
            .iter()
            .copied()
            .filter(|&ar| (ar - 1.0).abs() >= 1e-6)
            .collect();
        for h in 0..lh {
            for w in 0..lw {
                let (cx, cy) = if step == 0.0 {
                    ((w as f32 + 0.5) * step_x, (h as f32 + 0.5) * step_y)
                } else {
                    (
                        (self.offset + w as f32) * step,
                        (self.offset + h as f32) * step,
                    )
                };
                for (s, &fixed) in self.fixed_size.iter().enumerate() {
                    let whole = fixed as u64;
                    let density = self.density[s] as i64;
                    let shift = (fixed / density as f32) as i64;
                    // Centres of the density grid: `whole / 2` is an integer division.
                    let grid = |mut emit: Box<dyn FnMut(f32, f32) + '_>| {
                        for r in 0..density {
                            for c in 0..density {
                                let x = cx - (whole / 2) as f32
                                    + shift as f32 / 2.0
                                    + (c * shift) as f32;
                                let y = cy - (whole / 2) as f32
                                    + shift as f32 / 2.0
                                    + (r * shift) as f32;
                                emit(x, y);
                            }
                        }
                    };
                    if !self.fixed_ratio.is_empty() {
                        for &ar in &self.fixed_ratio {
                            let ar = ar.sqrt();
                            let (bw, bh) = (fixed * 0.5 * ar, fixed * 0.5 / ar);
                            grid(Box::new(|x, y| push(x, y, bw, bh, true)));
                        }
                    } else {
                        let bw = whole as f32 * 0.5;
                        grid(Box::new(|x, y| push(x, y, bw, bw, true)));
                        for &ar in &ratios {
                            let ar = ar.sqrt();
                            let (bw, bh) = (fixed * 0.5 * ar, fixed * 0.5 / ar);
                            grid(Box::new(|x, y| push(x, y, bw, bh, true)));
                        }
                    }
                }
                for (i, &m) in min_size.iter().enumerate() {
                    let half = m * 0.5;
                    push(cx, cy, half, half, false);
                    let with_ratios = self.scale_all_sizes || i == min_size.len() - 1;
                    let base = if self.scale_all_sizes { m } else { min_size[0] };
                    let max_box = |push: &mut dyn FnMut(f32, f32, f32, f32, bool)| {
                        if let Some(&big) = self.max_size.get(i) {
                            let side = (m * big).sqrt() * 0.5;
                            push(cx, cy, side, side, false);
                        }
                    };
                    if self.min_max_aspect_ratios_order {
                        max_box(&mut push);
                    }
                    if with_ratios {
                        for &ar in &ratios {
                            let ar = ar.sqrt();
                            push(cx, cy, base * 0.5 * ar, base * 0.5 / ar, false);
                        }
                    }
                    if !self.min_max_aspect_ratios_order {
                        max_box(&mut push);
                    }
                }
            }
        }
        out
    }

    /// Boxes per position: what [`Self::boxes`] makes for one cell.
    fn priors(&self) -> u64 {
        self.boxes([1, 1], [1, 1]).len() as u64 / 4
    }
}

impl Op for PriorBox {
    fn name(&self) -> &'static str {
        if self.version == 1 {
            "PriorBox-1"
        } else {
            "PriorBox-8"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[0]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        crate::layout::prior_boxes(inputs, self.name(), self.priors())
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [layer, image] = take_inputs::<2>(inputs, self.name())?;
        let (map, img) = (
            crate::layout::size_pair(&layer, 0, self.name())?,
            crate::layout::size_pair(&image, 1, self.name())?,
        );
        let mut out = self.boxes(map, img);
        if self.clip {
            for v in &mut out {
                *v = v.clamp(0.0, 1.0);
            }
        }
        let half = out.len();
        let k = self.variances.len();
        out.extend((0..half).map(|i| self.variances[i % 4 % k]));
        let t = Tensor::from_f32(vec![2, half], out)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssd() -> PriorBox {
        PriorBox {
            version: 8,
            min_size: vec![30.0],
            max_size: vec![60.0],
            aspect_ratios: vec![1.0, 2.0, 0.5],
            clip: false,
            step: 8.0,
            offset: 0.5,
            variances: vec![0.1, 0.1, 0.2, 0.2],
            scale_all_sizes: true,
            fixed_ratio: vec![],
            fixed_size: vec![],
            density: vec![],
            min_max_aspect_ratios_order: true,
        }
    }

    fn ints(v: &[i64]) -> Value {
        Arc::new(Tensor::from_i64(vec![v.len()], v.to_vec()).unwrap())
    }

    /// SSD300's conv4_3-like layer: min 30, max 60, ratios 2 and 1/2: four priors per cell.
    #[test]
    fn min_max_and_ratio_boxes_in_order() {
        let op = ssd();
        assert_eq!(op.priors(), 4);
        let out = op.eval(vec![ints(&[2, 2]), ints(&[300, 300])]).unwrap();
        assert_eq!(out[0].shape(), &[2, 64]);
        let v = out[0].values::<f32>().unwrap();
        let (c, i) = (4.0f32, 1.0f32 / 300.0);
        assert_eq!(
            &v[..4],
            &[
                (c - 15.0) * i,
                (c - 15.0) * i,
                (c + 15.0) * i,
                (c + 15.0) * i
            ]
        );
        let side = (30.0f32 * 60.0).sqrt() * 0.5;
        assert_eq!(v[4], (c - side) * i, "the max box second");
        let order_flipped = PriorBox {
            min_max_aspect_ratios_order: false,
            ..ssd()
        };
        let w = order_flipped
            .eval(vec![ints(&[2, 2]), ints(&[300, 300])])
            .unwrap();
        assert_eq!(
            w[0].values::<f32>().unwrap()[12],
            (c - side) * i,
            "the max box last"
        );
        assert_eq!(&v[64..68], &[0.1, 0.1, 0.2, 0.2]);
    }

    #[test]
    fn sizes_must_be_two_integers() {
        use irun_opkit::testing::fact;
        use irun_tensor::ElementType;
        let op = ssd();
        let e = op
            .infer(&[fact(ElementType::I64, "3"), fact(ElementType::I64, "2")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        assert!(e.message.contains("input 0 must be [2]"), "{}", e.message);
        let e = op
            .infer(&[fact(ElementType::F32, "2"), fact(ElementType::I64, "2")])
            .unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        let e = op.eval(vec![ints(&[0, 2]), ints(&[300, 300])]).unwrap_err();
        assert!(e.message.contains("two positive sizes"), "{}", e.message);
    }
}
