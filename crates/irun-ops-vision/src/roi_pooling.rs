//! ROIPooling-2 (Fast and Faster R-CNN): each box of `rois [R, 5]` (`image, x1, y1, x2, y2`)
//! on `data [N, C, H, W]` pooled to `pooled_h x pooled_w` per channel: `[R, C, pooled_h,
//! pooled_w]`.
//!
//! - `max`: the box's corners times `spatial_scale`, rounded half away from zero, give a
//!   box of at least 1 x 1 cells (both ends included); bin `i` of `n` over a side of `L`
//!   cells covers `floor(i·L/n)` to `ceil((i+1)·L/n)` (exclusive) from the box's start,
//!   clipped to the map; the bin's maximum, or 0 for an empty bin.
//! - `bilinear`: corners normalized to [0, 1]; output `i` of `n` samples the map at `start +
//!   i·(end - start)/(n - 1)` of the side (the centre when `n` is 1, the end exactly for the
//!   last), in cells of `side - 1`; a sample outside the map gives 0.
//!
//! f32 arithmetic as OpenVINO's reference computes it; an image index outside `[0, N)` is
//! an error.

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct RoiPooling {
    pub pooled: [usize; 2],
    pub spatial_scale: f32,
    pub bilinear: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let size = |name: &'static str| -> Result<usize, OpError> {
        let v = a.i64_or(name, None)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| OpError::attribute(name, format!("{name} must be positive, got {v}")))
    };
    // The serializer writes `output_size` (and `output_roi`) beside `pooled_h`/`pooled_w`;
    // the pair is what the op reads.
    a.get("output_size");
    a.get("output_roi");
    let spatial_scale = a.f64_or("spatial_scale", 0.0)? as f32;
    if spatial_scale.is_nan() || spatial_scale <= 0.0 {
        return Err(OpError::attribute(
            "spatial_scale",
            format!("spatial_scale must be positive, got {spatial_scale}"),
        ));
    }
    Ok(Box::new(RoiPooling {
        pooled: [size("pooled_h")?, size("pooled_w")?],
        spatial_scale,
        bilinear: a.enum_or("method", &["max", "bilinear"], "max")? == "bilinear",
    }))
}

impl RoiPooling {
    /// One box's `pooled_h x pooled_w` outputs of plane `x` (`[h, w]`), by max pooling.
    fn max_bins(&self, x: &[f32], [h, w]: [usize; 2], roi: &[f32], out: &mut [f32]) {
        let corner = |v: f32| (v * self.spatial_scale).round() as i64;
        let (x1, y1, x2, y2) = (
            corner(roi[0]),
            corner(roi[1]),
            corner(roi[2]),
            corner(roi[3]),
        );
        let (rh, rw) = ((y2 - y1 + 1).max(1), (x2 - x1 + 1).max(1));
        let [ph, pw] = self.pooled;
        let (bin_h, bin_w) = (rh as f32 / ph as f32, rw as f32 / pw as f32);
        let clip = |v: i64, len: usize| v.clamp(0, len as i64) as usize;
        for i in 0..ph {
            let y0 = clip((i as f32 * bin_h).floor() as i64 + y1, h);
            let y1e = clip(((i + 1) as f32 * bin_h).ceil() as i64 + y1, h);
            for j in 0..pw {
                let x0 = clip((j as f32 * bin_w).floor() as i64 + x1, w);
                let x1e = clip(((j + 1) as f32 * bin_w).ceil() as i64 + x1, w);
                out[i * pw + j] = if y1e <= y0 || x1e <= x0 {
                    0.0
                } else {
                    (y0..y1e)
                        .flat_map(|y| x[y * w + x0..y * w + x1e].iter().copied())
                        .fold(f32::MIN, f32::max)
                };
            }
        }
    }

    /// One box's outputs of plane `x`, by bilinear sampling.
    fn bilinear_bins(&self, x: &[f32], [h, w]: [usize; 2], roi: &[f32], out: &mut [f32]) {
        let [ph, pw] = self.pooled;
        // Where output `i` of `n` samples a side of `len` cells from `a` to `b` (normalized).
        let at = |i: usize, n: usize, a: f32, b: f32, len: usize| -> f32 {
            let span = (len - 1) as f32;
            if n == 1 {
                0.5 * (a + b) * span
            } else if i == n - 1 {
                span * b
            } else {
                i as f32 * ((b - a) * span / (n - 1) as f32) + a * span
            }
        };
        for i in 0..ph {
            let y = at(i, ph, roi[1], roi[3], h);
            for j in 0..pw {
                let xx = at(j, pw, roi[0], roi[2], w);
                out[i * pw + j] =
                    if y < 0.0 || y > (h - 1) as f32 || xx < 0.0 || xx > (w - 1) as f32 {
                        0.0
                    } else {
                        let (top, left) = (y.floor() as usize, xx.floor() as usize);
                        let bottom = (y.ceil() as usize).min(h - 1);
                        let right = (xx.ceil() as usize).min(w - 1);
                        let v = |r: usize, c: usize| x[r * w + c];
                        let (dx, dy) = (xx - left as f32, y - top as f32);
                        let upper = v(top, left) + (v(top, right) - v(top, left)) * dx;
                        let lower = v(bottom, left) + (v(bottom, right) - v(bottom, left)) * dx;
                        upper + (lower - upper) * dy
                    };
            }
        }
    }
}

impl Op for RoiPooling {
    fn name(&self) -> &'static str {
        "ROIPooling-2"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let name = self.name();
        expect_inputs(inputs, 2, name)?;
        let ty = crate::layout::float_inputs(inputs, &[(0, 4), (1, 2)], name)?;
        let rois = inputs[1].shape.dims();
        if rois.is_some_and(|d| d[1].get_static().is_some_and(|v| v != 5)) {
            return Err(OpError::input(
                1,
                codes::SHAPE,
                format!("{name}: rois {} must be [R, 5]", inputs[1].shape),
            ));
        }
        let r = rois.map_or(Dim::DYNAMIC, |d| d[0]);
        let c = inputs[0].shape.dims().map_or(Dim::DYNAMIC, |d| d[1]);
        let [ph, pw] = self.pooled.map(|v| Dim::fixed(v as u64));
        Ok(vec![Fact::new(ty, PartialShape::new(vec![r, c, ph, pw]))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let name = self.name();
        let [data, rois] = take_inputs::<2>(inputs, name)?;
        let (ds, rs) = (data.shape(), rois.shape());
        if ds.len() != 4 || rs.len() != 2 || rs[1] != 5 {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("{name}: data {ds:?} and rois {rs:?}"),
            ));
        }
        let (n, c, h, w) = (ds[0], ds[1], ds[2], ds[3]);
        let ty = data.element_type();
        let (x, boxes) = (
            crate::layout::f32_values(&data, name)?,
            crate::layout::f32_values(&rois, name)?,
        );
        let bins = self.pooled[0] * self.pooled[1];
        for (i, b) in boxes.chunks(5).enumerate() {
            if !(b[0] >= 0.0 && (b[0] as usize) < n) {
                return Err(OpError::input(
                    1,
                    codes::INDEX_OUT_OF_RANGE,
                    format!("{name}: image index {} of roi {i} is not in [0, {n})", b[0]),
                ));
            }
        }
        let plane = h * w;
        let mut y = vec![0f32; rs[0] * c * bins];
        if h > 0 && w > 0 {
            irun_opkit::par::for_each_split_mut(&mut y, bins.max(1), &|at, chunk| {
                for (k, out) in chunk.chunks_mut(bins).enumerate() {
                    let (r, ch) = ((at / bins + k) / c, (at / bins + k) % c);
                    let b = &boxes[r * 5..r * 5 + 5];
                    let src = &x[(b[0] as usize * c + ch) * plane..][..plane];
                    if self.bilinear {
                        self.bilinear_bins(src, [h, w], &b[1..], out);
                    } else {
                        self.max_bins(src, [h, w], &b[1..], out);
                    }
                }
            });
        }
        let shape = vec![rs[0], c, self.pooled[0], self.pooled[1]];
        Ok(vec![crate::layout::float_tensor(ty, shape, y, name)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::prelude::*;
    use irun_opkit::testing::{eval1, fact};

    fn plane() -> Tensor {
        f32s(
            &[1, 1, 4, 5],
            &(0..20).map(|v| v as f32).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn max_bins_cover_the_rounded_box() {
        let op = RoiPooling {
            pooled: [2, 2],
            spatial_scale: 0.5,
            bilinear: false,
        };
        // Corners (2, 1.2, 7, 5.8) x 0.5 -> (1, 1, 4, 3) after rounding (3.5 up): 3 rows by
        // 4 columns, bins of 1.5 rows and 2 columns: rows [1, 3) and [2, 4), columns [1, 3)
        // and [3, 5).
        let out = eval1(
            &op,
            vec![plane(), f32s(&[1, 5], &[0.0, 2.0, 1.2, 7.0, 5.8])],
        )
        .unwrap();
        assert_eq!(out, f32s(&[1, 1, 2, 2], &[12.0, 14.0, 17.0, 19.0]));
        // A box past the map: its bins beyond the edge are empty, so 0.
        let out = eval1(
            &op,
            vec![plane(), f32s(&[1, 5], &[0.0, 8.0, 6.0, 20.0, 20.0])],
        )
        .unwrap();
        assert_eq!(out, f32s(&[1, 1, 2, 2], &[19.0, 0.0, 0.0, 0.0]));
    }

    #[test]
    fn bilinear_samples_span_the_normalized_box() {
        let op = RoiPooling {
            pooled: [2, 3],
            spatial_scale: 1.0,
            bilinear: true,
        };
        // The whole map: rows 0 and 3, columns 0, 2 and 4 exactly.
        let out = eval1(
            &op,
            vec![plane(), f32s(&[1, 5], &[0.0, 0.0, 0.0, 1.0, 1.0])],
        )
        .unwrap();
        assert_eq!(out, f32s(&[1, 1, 2, 3], &[0.0, 2.0, 4.0, 15.0, 17.0, 19.0]));
        // A box from (0.125, 0) to (0.375, 0.5): x 0.5, 1.0, 1.5; y 0 and 1.5.
        let out = eval1(
            &op,
            vec![plane(), f32s(&[1, 5], &[0.0, 0.125, 0.0, 0.375, 0.5])],
        )
        .unwrap();
        assert_eq!(out, f32s(&[1, 1, 2, 3], &[0.5, 1.0, 1.5, 8.0, 8.5, 9.0]));
    }

    #[test]
    fn shapes_and_image_indices_are_checked() {
        let op = RoiPooling {
            pooled: [7, 7],
            spatial_scale: 0.0625,
            bilinear: false,
        };
        let f = op
            .infer(&[fact(F32, "2,256,?,?"), fact(F32, "300,5")])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[300,256,7,7]");
        let e = op
            .infer(&[fact(F32, "2,256,9,9"), fact(F32, "300,4")])
            .unwrap_err();
        assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(1)));
        let e = eval1(
            &op,
            vec![plane(), f32s(&[1, 5], &[1.0, 0.0, 0.0, 1.0, 1.0])],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
    }
}
