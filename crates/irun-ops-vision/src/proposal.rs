//! Proposal-1 and -4, Faster R-CNN's region proposals: anchors at every feature-map cell,
//! moved by the predicted deltas, ranked by their foreground score and thinned by
//! non-maximum suppression.
//!
//! - Inputs: `class_probs [N, 2A, H, W]` (background scores, then the A foreground scores),
//!   `bbox_deltas [N, 4A, H, W]` (`dx, dy, dw, dh` per anchor), `image_shape [3 | 4]` (height,
//!   width, scale, and a separate width scale when there are four). A = `len(ratio) ·
//!   len(scale)`, anchor `ratio_index · len(scale) + scale_index`.
//! - Anchors (Caffe, `framework=""`): a `base_size` square reshaped per ratio (width
//!   `round(sqrt(base² / ratio))`, height `round(width · ratio)`) and scaled, centred on
//!   `(base_size - 1) / 2`, shifted by `feat_stride` per cell; widths count the end pixel
//!   (`x2 - x1 + 1`). `framework="tensorflow"`: no rounding, no +1, anchors centred on 0, the
//!   cell's x taken from its row and y from its column, the image's height and width read
//!   swapped, and each anchor first clipped to the image.
//! - Each anchor's box moves its centre by `dx·w, dy·h` and scales by `exp(dw), exp(dh)` (the
//!   deltas divided by `box_coordinate_scale` and `box_size_scale`); `clip_before_nms`
//!   clamps it to the image. A box narrower or lower than `min_size` times the image scale
//!   scores 0.
//! - The first `pre_nms_topn` boxes by score (ties: the lower cell, then anchor), then
//!   greedy suppression of every later box whose overlap (intersection over union) exceeds
//!   `nms_thresh`, up to `post_nms_topn` boxes.
//! - Outputs: `rois [N·post_nms_topn, 5]` rows `(image, x1, y1, x2, y2)`, clamped to the image
//!   with `clip_after_nms`, divided by its size with `normalize`; the rows after an image's
//!   last box are zero, the first of them with image -1. v4 adds `scores [N·post_nms_topn]`,
//!   zero after the last box.
//!
//! Computed in f32, as OpenVINO CPU runs it; its sort is not stable, so boxes of equal score
//! (those `min_size` zeroed, say) may come in another order there.

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError, Value};

#[derive(Debug, Clone)]
pub struct Proposal {
    pub v4: bool,
    pub base_size: u64,
    pub pre_nms_topn: usize,
    pub post_nms_topn: usize,
    pub nms_thresh: f32,
    pub feat_stride: u64,
    pub min_size: f32,
    pub ratios: Vec<f32>,
    pub scales: Vec<f32>,
    pub clip_before_nms: bool,
    pub clip_after_nms: bool,
    pub normalize: bool,
    pub box_size_scale: f32,
    pub box_coordinate_scale: f32,
    pub tensorflow: bool,
}

fn read(a: &AttrReader, v4: bool) -> Result<Box<dyn Op>, OpError> {
    let count = |name: &'static str, least: i64| -> Result<u64, OpError> {
        let v = a.i64_or(name, None)?;
        if v < least {
            return Err(OpError::attribute(
                name,
                format!("{name} must be at least {least}, got {v}"),
            ));
        }
        Ok(v as u64)
    };
    let floats = |name: &'static str| -> Result<Vec<f32>, OpError> {
        let v: Vec<f32> = a
            .f64_list_or(name, None)?
            .into_iter()
            .map(|x| x as f32)
            .collect();
        if v.is_empty() {
            return Err(OpError::attribute(
                name,
                format!("{name} must hold at least one value"),
            ));
        }
        Ok(v)
    };
    let framework = a.enum_or("framework", &["", "tensorflow"], "")?;
    Ok(Box::new(Proposal {
        v4,
        base_size: count("base_size", 1)?,
        pre_nms_topn: count("pre_nms_topn", 1)? as usize,
        post_nms_topn: count("post_nms_topn", 1)? as usize,
        nms_thresh: a.f64_or("nms_thresh", 0.0)? as f32,
        feat_stride: count("feat_stride", 1)?,
        min_size: count("min_size", 1)? as f32,
        ratios: floats("ratio")?,
        scales: floats("scale")?,
        clip_before_nms: a.bool_or("clip_before_nms", true)?,
        clip_after_nms: a.bool_or("clip_after_nms", false)?,
        normalize: a.bool_or("normalize", false)?,
        box_size_scale: a.f64_or("box_size_scale", 1.0)? as f32,
        box_coordinate_scale: a.f64_or("box_coordinate_scale", 1.0)? as f32,
        tensorflow: framework == "tensorflow",
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("nms_thresh")?;
    read(a, false)
}

pub fn build_v4(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("nms_thresh")?;
    read(a, true)
}

/// A box `[x1, y1, x2, y2]`.
type Corners = [f32; 4];

/// `b` moved inside `[0, right] x [0, bottom]` as OpenVINO CPU clips, `max(0, min(v, edge))`:
/// an edge below 0 (an image under one pixel, less Caffe's end pixel) gives 0, where
/// `f32::clamp` would panic, and NaN gives 0.
fn clip(b: Corners, right: f32, bottom: f32) -> Corners {
    let to = |v: f32, edge: f32| {
        let low = if edge < v { edge } else { v };
        if 0.0 < low {
            low
        } else {
            0.0
        }
    };
    [
        to(b[0], right),
        to(b[1], bottom),
        to(b[2], right),
        to(b[3], bottom),
    ]
}

impl Proposal {
    fn anchors_per_cell(&self) -> usize {
        self.ratios.len() * self.scales.len()
    }

    /// 1 when widths count the end pixel (Caffe), else 0.
    fn offset(&self) -> f32 {
        if self.tensorflow {
            0.0
        } else {
            1.0
        }
    }

    /// The anchors around cell (0, 0), in anchor order.
    fn anchors(&self) -> Vec<Corners> {
        let base = self.base_size as f32;
        let off = self.offset();
        let centre = 0.5 * (base - off);
        let mut out = Vec::with_capacity(self.anchors_per_cell());
        for &ratio in &self.ratios {
            let mut w = (base * base / ratio).sqrt();
            let mut h = w * ratio;
            if !self.tensorflow {
                w = w.round();
                h = (w * ratio).round();
            }
            for &scale in &self.scales {
                let (hw, hh) = (0.5 * (w * scale - off), 0.5 * (h * scale - off));
                let mut a = [centre - hw, centre - hh, centre + hw, centre + hh];
                if self.tensorflow {
                    a = a.map(|v| v - 0.5 * base);
                }
                out.push(a);
            }
        }
        out
    }

    /// One image's proposals `(box, score)`, in cell-then-anchor order.
    fn enumerate(
        &self,
        scores: &[f32],
        deltas: &[f32],
        [h, w]: [usize; 2],
        image: [f32; 4],
    ) -> Vec<(Corners, f32)> {
        let [img_h, img_w, scale_h, scale_w] = image;
        let off = self.offset();
        let (min_w, min_h) = (self.min_size * scale_w, self.min_size * scale_h);
        let anchors = self.anchors();
        let area = h * w;
        let mut out = Vec::with_capacity(area * anchors.len());
        for y in 0..h {
            for x in 0..w {
                let (sx, sy) = if self.tensorflow { (y, x) } else { (x, y) };
                let (sx, sy) = (
                    (sx as u64 * self.feat_stride) as f32,
                    (sy as u64 * self.feat_stride) as f32,
                );
                let cell = y * w + x;
                for (k, a) in anchors.iter().enumerate() {
                    let d = |j: usize| deltas[(k * 4 + j) * area + cell];
                    let mut b = [a[0] + sx, a[1] + sy, a[2] + sx, a[3] + sy];
                    if self.tensorflow {
                        b = clip(b, img_w, img_h);
                    }
                    let (bw, bh) = (b[2] - b[0] + off, b[3] - b[1] + off);
                    let (cx, cy) = (b[0] + 0.5 * bw, b[1] + 0.5 * bh);
                    let cx = d(0) / self.box_coordinate_scale * bw + cx;
                    let cy = d(1) / self.box_coordinate_scale * bh + cy;
                    let pw = (d(2) / self.box_size_scale).exp() * bw;
                    let ph = (d(3) / self.box_size_scale).exp() * bh;
                    let mut b = [cx - 0.5 * pw, cy - 0.5 * ph, cx + 0.5 * pw, cy + 0.5 * ph];
                    if self.clip_before_nms {
                        b = clip(b, img_w - off, img_h - off);
                    }
                    let big = min_w <= b[2] - b[0] + off && min_h <= b[3] - b[1] + off;
                    let score = if big { scores[k * area + cell] } else { 0.0 };
                    out.push((b, score));
                }
            }
        }
        out
    }

    /// Intersection over union with widths counting the end pixel (Caffe); 0 for boxes
    /// that do not touch.
    fn overlap(&self, a: &Corners, b: &Corners) -> f32 {
        if !(a[0] <= b[2] && a[1] <= b[3] && b[0] <= a[2] && b[1] <= a[3]) {
            return 0.0;
        }
        let off = self.offset();
        let w = (a[2].min(b[2]) - a[0].max(b[0]) + off).max(0.0);
        let h = (a[3].min(b[3]) - a[1].max(b[1]) + off).max(0.0);
        let inter = w * h;
        let area = |c: &Corners| (c[2] - c[0] + off) * (c[3] - c[1] + off);
        inter / (area(a) + area(b) - inter)
    }

    /// The kept proposals of one image, best first.
    fn select(&self, mut boxes: Vec<(Corners, f32)>) -> Vec<(Corners, f32)> {
        // Stable: equal scores keep the cell-then-anchor order.
        boxes.sort_by(|a, b| b.1.total_cmp(&a.1));
        boxes.truncate(self.pre_nms_topn);
        let mut dead = vec![false; boxes.len()];
        let mut kept = Vec::new();
        for i in 0..boxes.len() {
            if dead[i] {
                continue;
            }
            kept.push(boxes[i]);
            if kept.len() == self.post_nms_topn {
                break;
            }
            for j in i + 1..boxes.len() {
                if self.overlap(&boxes[i].0, &boxes[j].0) > self.nms_thresh {
                    dead[j] = true;
                }
            }
        }
        kept
    }
}

impl Op for Proposal {
    fn name(&self) -> &'static str {
        if self.v4 {
            "Proposal-4"
        } else {
            "Proposal-1"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let name = self.name();
        expect_inputs(inputs, 3, name)?;
        let ty = crate::layout::float_inputs(inputs, &[(0, 4), (1, 4), (2, 1)], name)?;
        let len = inputs[2].shape.dims().and_then(|d| d[0].get_static());
        if len.is_some_and(|l| l != 3 && l != 4) {
            return Err(OpError::input(
                2,
                codes::SHAPE,
                format!(
                    "{name}: image_shape {} must hold 3 or 4 values",
                    inputs[2].shape
                ),
            ));
        }
        let (probs, deltas) = (inputs[0].shape.dims(), inputs[1].shape.dims());
        let a = self.anchors_per_cell() as u64;
        if let Some(p) = probs {
            if p[1].get_static().is_some_and(|c| c != 2 * a) {
                return Err(OpError::input(
                    0,
                    codes::SHAPE,
                    format!(
                        "{name}: class_probs {} must have 2 x {a} anchors channels",
                        inputs[0].shape
                    ),
                ));
            }
        }
        if let Some(d) = deltas {
            if d[1].get_static().is_some_and(|c| c != 4 * a) {
                return Err(OpError::input(
                    1,
                    codes::SHAPE,
                    format!(
                        "{name}: bbox_deltas {} must have 4 x {a} anchors channels",
                        inputs[1].shape
                    ),
                ));
            }
        }
        if let (Some(p), Some(d)) = (probs, deltas) {
            for axis in [0, 2, 3] {
                if !p[axis].compatible(d[axis]) {
                    return Err(OpError::input(
                        1,
                        codes::SHAPE,
                        format!(
                            "{name}: bbox_deltas {} do not match class_probs {} in dim {axis}",
                            inputs[1].shape, inputs[0].shape
                        ),
                    ));
                }
            }
        }
        let batch = probs
            .and_then(|p| p[0].get_static())
            .or_else(|| deltas.and_then(|d| d[0].get_static()));
        let rows = batch.map_or(Dim::DYNAMIC, |n| Dim::fixed(n * self.post_nms_topn as u64));
        let mut out = vec![Fact::new(ty, PartialShape::new(vec![rows, Dim::fixed(5)]))];
        if self.v4 {
            out.push(Fact::new(ty, PartialShape::new(vec![rows])));
        }
        Ok(out)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let name = self.name();
        let facts: Vec<Fact> = inputs
            .iter()
            .map(|t| Fact::of_static(t.element_type(), t.shape()))
            .collect();
        self.infer(&facts)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.message))?;
        let ty = inputs[0].element_type();
        let floats = |slot: usize| crate::layout::f32_values(&inputs[slot], name);
        let (probs, deltas, info) = (floats(0)?, floats(1)?, floats(2)?);
        let &[n, _, h, w] = inputs[0].shape() else {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("{name}: class_probs"),
            ));
        };
        let (img_h, img_w) = if self.tensorflow {
            (info[1], info[0])
        } else {
            (info[0], info[1])
        };
        if !(img_h.is_normal() && img_w.is_normal() && img_h > 0.0 && img_w > 0.0) {
            return Err(OpError::input(
                2,
                codes::BAD_VALUE,
                format!(
                    "{name}: the image height and width must be positive, got {img_h} and {img_w}"
                ),
            ));
        }
        let scale_h = info[2];
        let scale_w = *info.get(3).unwrap_or(&scale_h);
        if !(scale_h.is_finite() && scale_w.is_finite() && scale_h >= 0.0 && scale_w >= 0.0) {
            return Err(OpError::input(
                2,
                codes::BAD_VALUE,
                format!("{name}: the image scales must be finite and not negative, got {scale_h} and {scale_w}"),
            ));
        }
        let a = self.anchors_per_cell();
        let post = self.post_nms_topn;
        let mut rois = vec![0f32; n * post * 5];
        let mut scores = vec![0f32; n * post];
        for image in 0..n {
            let fg = &probs[(image * 2 * a + a) * h * w..][..a * h * w];
            let d = &deltas[image * 4 * a * h * w..][..4 * a * h * w];
            let boxes = self.enumerate(fg, d, [h, w], [img_h, img_w, scale_h, scale_w]);
            let kept = self.select(boxes);
            let rows = &mut rois[image * post * 5..][..post * 5];
            for (i, (b, s)) in kept.iter().enumerate() {
                let mut b = *b;
                if self.clip_after_nms {
                    b = clip(b, img_w, img_h);
                }
                if self.normalize {
                    b = [b[0] / img_w, b[1] / img_h, b[2] / img_w, b[3] / img_h];
                }
                rows[i * 5..i * 5 + 5].copy_from_slice(&[image as f32, b[0], b[1], b[2], b[3]]);
                scores[image * post + i] = *s;
            }
            if kept.len() < post {
                rows[kept.len() * 5] = -1.0;
            }
        }
        let tensor = |shape, v| crate::layout::float_tensor(ty, shape, v, name);
        let mut out = vec![tensor(vec![n * post, 5], rois)?];
        if self.v4 {
            out.push(tensor(vec![n * post], scores)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::prelude::*;
    use irun_opkit::testing::{eval_all, fact};

    fn caffe() -> Proposal {
        Proposal {
            v4: true,
            base_size: 16,
            pre_nms_topn: 100,
            post_nms_topn: 4,
            nms_thresh: 0.7,
            feat_stride: 16,
            min_size: 1.0,
            ratios: vec![0.5, 1.0, 2.0],
            scales: vec![8.0],
            clip_before_nms: true,
            clip_after_nms: false,
            normalize: false,
            box_size_scale: 1.0,
            box_coordinate_scale: 1.0,
            tensorflow: false,
        }
    }

    #[test]
    fn caffe_anchors_are_the_rounded_ratio_boxes_around_the_base_centre() {
        // Faster R-CNN's well-known first anchors for base 16, ratios 0.5/1/2, scale 8:
        // widths round(sqrt(512)) = 23 and heights 12, 16 x 16, 11 x 22; times 8.
        let a = caffe().anchors();
        assert_eq!(a[0], [-84.0, -40.0, 99.0, 55.0]);
        assert_eq!(a[1], [-56.0, -56.0, 71.0, 71.0]);
        assert_eq!(a[2], [-36.0, -80.0, 51.0, 95.0]);
    }

    #[test]
    fn boxes_are_ranked_suppressed_clipped_and_ended_with_minus_one() {
        let op = Proposal {
            ratios: vec![1.0],
            scales: vec![1.0],
            post_nms_topn: 3,
            ..caffe()
        };
        // A 1 x 2 map, one anchor of 16 x 16 per cell at x 0 and 16: (0,0,15,15), (16,0,31,15).
        let probs = f32s(&[1, 2, 1, 2], &[0.0, 0.0, 0.6, 0.9]);
        let deltas = f32s(&[1, 4, 1, 2], &[0.0; 8]);
        let info = f32s(&[3], &[20.0, 24.0, 1.0]);
        let out = eval_all(&op, vec![probs, deltas, info]).unwrap();
        let rois = out[0].values::<f32>().unwrap();
        // Decoded with zero deltas, an anchor (x1, x2) becomes (x1, x2 + 1): Caffe's widths
        // count the end pixel, its corners do not. The second cell first (0.9), clipped to
        // x 24 - 1; the boxes touch in one column, far below the threshold.
        assert_eq!(rois[..5], [0.0, 16.0, 0.0, 23.0, 16.0]);
        assert_eq!(rois[5..10], [0.0, 0.0, 0.0, 16.0, 16.0]);
        assert_eq!(rois[10..], [-1.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(out[1].values::<f32>().unwrap(), &[0.9, 0.6, 0.0]);
    }

    #[test]
    fn deltas_move_the_centre_and_scale_the_size_and_small_boxes_score_zero() {
        let op = Proposal {
            ratios: vec![1.0],
            scales: vec![1.0],
            post_nms_topn: 1,
            clip_before_nms: false,
            min_size: 20.0,
            ..caffe()
        };
        let probs = f32s(&[1, 2, 1, 1], &[0.0, 0.8]);
        // Move right by half a width, double the width; keep the height 16 < 20.
        let deltas = f32s(&[1, 4, 1, 1], &[0.5, 0.0, 2f32.ln(), 0.0]);
        let info = f32s(&[3], &[100.0, 100.0, 1.0]);
        let out = eval_all(&op, vec![probs, deltas, info]).unwrap();
        // Centre 8 + 8 = 16, width 32: x from 0 to 32; y from 0 to 16, 17 pixels < 20.
        assert_eq!(
            out[0].values::<f32>().unwrap(),
            &[0.0, 0.0, 0.0, 32.0, 16.0]
        );
        assert_eq!(out[1].values::<f32>().unwrap(), &[0.0]);
    }

    #[test]
    fn overlapping_boxes_above_the_threshold_are_dropped() {
        let op = caffe();
        let a = [0.0, 0.0, 9.0, 9.0];
        let b = [0.0, 0.0, 9.0, 8.0];
        // 90 / 100 with the +1 widths.
        assert!((op.overlap(&a, &b) - 0.9).abs() < 1e-6);
        let kept = op.select(vec![(a, 0.5), (b, 0.6), ([50.0, 50.0, 60.0, 60.0], 0.1)]);
        assert_eq!(kept.iter().map(|k| k.1).collect::<Vec<_>>(), [0.6, 0.1]);
    }

    #[test]
    fn shapes_are_checked_and_the_outputs_sized_by_post_nms_topn() {
        let op = caffe();
        let outs = op
            .infer(&[fact(F32, "2,6,5,7"), fact(F32, "2,12,5,7"), fact(F32, "4")])
            .unwrap();
        assert_eq!(outs[0].shape.to_string(), "[8,5]");
        assert_eq!(outs[1].shape.to_string(), "[8]");
        let v1 = Proposal {
            v4: false,
            ..caffe()
        };
        assert_eq!(
            v1.infer(&[fact(F32, "1,6,5,7"), fact(F32, "1,12,5,7"), fact(F32, "3")])
                .unwrap()
                .len(),
            1
        );
        let e = op
            .infer(&[fact(F32, "1,4,5,7"), fact(F32, "1,12,5,7"), fact(F32, "3")])
            .unwrap_err();
        assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(0)));
        let e = op
            .infer(&[fact(F32, "1,6,5,7"), fact(F32, "1,12,5,6"), fact(F32, "3")])
            .unwrap_err();
        assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(1)));
        let e = op
            .infer(&[fact(F32, "1,6,5,7"), fact(F32, "1,12,5,7"), fact(F32, "5")])
            .unwrap_err();
        assert!(e.message.contains("3 or 4 values"), "{}", e.message);
    }

    /// An image under one pixel: Caffe's clip edge, the size less its end pixel, is
    /// negative, so every corner clips to 0 (it panicked in `f32::clamp`).
    #[test]
    fn an_image_under_one_pixel_clips_every_corner_to_zero() {
        let op = Proposal {
            ratios: vec![1.0],
            scales: vec![1.0],
            post_nms_topn: 2,
            ..caffe()
        };
        let out = eval_all(
            &op,
            vec![
                f32s(&[1, 2, 1, 1], &[0.0, 0.8]),
                f32s(&[1, 4, 1, 1], &[0.0; 4]),
                f32s(&[3], &[0.5, 0.5, 1.0]),
            ],
        )
        .unwrap();
        assert_eq!(
            out[0].values::<f32>().unwrap(),
            &[0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(
            clip([f32::NAN, -3.0, 9.0, 2.0], 4.0, 5.0),
            [0.0, 0.0, 4.0, 2.0]
        );
    }

    #[test]
    fn a_zero_image_size_is_a_run_time_error() {
        let info = f32s(&[3], &[0.0, 24.0, 1.0]);
        let e = eval_all(
            &caffe(),
            vec![
                f32s(&[1, 6, 1, 1], &[0.0; 6]),
                f32s(&[1, 12, 1, 1], &[0.0; 12]),
                info,
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
    }
}
