//! ROIAlign-3 and -9: each box of `rois [R, 4]` (`x1, y1, x2, y2` in input pixels, scaled
//! by `spatial_scale`) on image `batch_indices[r]` of `data [N, C, H, W]` is cut into
//! `pooled_h x pooled_w` bins, each bin sampled on a grid and pooled: `[R, C, pooled_h,
//! pooled_w]`.
//!
//! - Box corners: `asymmetric` (v3's only mode) `v * s`, `half_pixel_for_nn` `v * s - 0.5`,
//!   `half_pixel` `(v + 0.5) * s - 0.5`; the box is at least 1 x 1 in `asymmetric` mode only.
//! - Each bin holds `sampling_ratio` x `sampling_ratio` samples (0: `ceil` of the bin size
//!   per axis) at the centres of equal sub-bins, bilinearly interpolated. A sample more than
//!   one pixel outside the image reads 0; otherwise its coordinate is clamped to 0 and to
//!   the last pixel.
//! - `avg` averages the samples (those outside count); `max` takes their maximum starting
//!   from 0, as OpenVINO's reference and CPU do (so it is never negative).
//!
//! Coordinates and weights are f32, as the reference computes them; sums are f64.

use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{with_float, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::IndexValues;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Prepared, Value};
use crate::pixels::{weighted_sums, GROUP};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aligned {
    Asymmetric,
    HalfPixelForNn,
    HalfPixel,
}

#[derive(Debug, Clone)]
pub struct RoiAlign {
    pub v9: bool,
    pub pooled_h: usize,
    pub pooled_w: usize,
    pub sampling_ratio: usize,
    pub spatial_scale: f32,
    pub max: bool,
    pub aligned: Aligned,
}

fn read(a: &AttrReader, v9: bool) -> Result<Box<dyn Op>, OpError> {
    let positive = |name: &'static str| -> Result<usize, OpError> {
        let v = a.i64_or(name, None)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| OpError::attribute(name, format!("{name} must be positive, got {v}")))
    };
    let pooled_h = positive("pooled_h")?;
    let pooled_w = positive("pooled_w")?;
    let sr = a.i64_or("sampling_ratio", None)?;
    let sampling_ratio = usize::try_from(sr).map_err(|_| {
        OpError::attribute(
            "sampling_ratio",
            format!("sampling_ratio must be >= 0, got {sr}"),
        )
    })?;
    let spatial_scale = a.f64_or("spatial_scale", 1.0)? as f32;
    if spatial_scale.is_nan() || spatial_scale <= 0.0 {
        return Err(OpError::attribute(
            "spatial_scale",
            "spatial_scale must be positive",
        ));
    }
    let max = a.enum_or("mode", &["avg", "max"], "avg")? == "max";
    let aligned = if v9 {
        match a.enum_or(
            "aligned_mode",
            &["asymmetric", "half_pixel_for_nn", "half_pixel"],
            "asymmetric",
        )? {
            "half_pixel_for_nn" => Aligned::HalfPixelForNn,
            "half_pixel" => Aligned::HalfPixel,
            _ => Aligned::Asymmetric,
        }
    } else {
        Aligned::Asymmetric
    };
    Ok(Box::new(RoiAlign {
        v9,
        pooled_h,
        pooled_w,
        sampling_ratio,
        spatial_scale,
        max,
        aligned,
    }))
}

pub fn build_v3(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, false)
}

pub fn build_v9(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, true)
}

/// One sample: the four pixel offsets in a plane and their weights (all 0 outside).
type Sample = [(usize, f32); 4];

impl RoiAlign {
    fn name_str(&self) -> &'static str {
        if self.v9 {
            "ROIAlign-9"
        } else {
            "ROIAlign-3"
        }
    }

    /// The samples of every bin of one box, bin by bin.
    fn samples(&self, roi: [f32; 4], h: usize, w: usize) -> (Vec<Sample>, usize) {
        let s = self.spatial_scale;
        let corner = |v: f32| match self.aligned {
            Aligned::Asymmetric => v * s,
            Aligned::HalfPixelForNn => v * s - 0.5,
            Aligned::HalfPixel => (v + 0.5) * s - 0.5,
        };
        let (x1, y1, x2, y2) = (
            corner(roi[0]),
            corner(roi[1]),
            corner(roi[2]),
            corner(roi[3]),
        );
        let (mut rw, mut rh) = (x2 - x1, y2 - y1);
        if self.aligned == Aligned::Asymmetric {
            rw = rw.max(1.0);
            rh = rh.max(1.0);
        }
        let (bw, bh) = (rw / self.pooled_w as f32, rh / self.pooled_h as f32);
        let (gx, gy) = if self.sampling_ratio > 0 {
            (self.sampling_ratio, self.sampling_ratio)
        } else {
            ((bw.ceil() as usize).max(1), (bh.ceil() as usize).max(1))
        };
        // Each sample's x depends only on its bin column and sub-column, its y only on its bin
        // row and sub-row: each axis's taps are found once (the same operations as per sample,
        // so the same coordinates) and paired.
        let xs: Vec<Option<AxisTaps>> = (0..self.pooled_w)
            .flat_map(|px| (0..gx).map(move |ix| (px, ix)))
            .map(|(px, ix)| axis_taps(x1 + px as f32 * bw + (ix as f32 + 0.5) * bw / gx as f32, w))
            .collect();
        let ys: Vec<Option<AxisTaps>> = (0..self.pooled_h)
            .flat_map(|py| (0..gy).map(move |iy| (py, iy)))
            .map(|(py, iy)| axis_taps(y1 + py as f32 * bh + (iy as f32 + 0.5) * bh / gy as f32, h))
            .collect();
        let mut out = Vec::with_capacity(self.pooled_h * self.pooled_w * gx * gy);
        for row in ys.chunks(gy) {
            for column in xs.chunks(gx) {
                for &y in row {
                    for &x in column {
                        out.push(bilinear(x, y, w));
                    }
                }
            }
        }
        (out, gx * gy)
    }
}

impl RoiAlign {
    /// `avg` on the f32 image `pixels` `[n, h, w, c]`, channels in the inner loop (the
    /// channel-first image is moved so first): each tap of a sample adds the weighted pixel
    /// of every channel at once (a plane per channel read 16 scattered values per bin, a
    /// gather the vector units cannot do: 2.4 ms of a 100-box head on 32 channels). Per
    /// channel the operations are the channel-first loop's, in its order (sums from -0.0 as
    /// `Iterator::sum`'s, products and additions in f64, never fused), so the same bits
    /// (tested).
    fn average_channels_last(
        &self,
        pixels: &[f32],
        [n, c, h, w]: [usize; 4],
        rois: &[f32],
        batch: &[i64],
    ) -> Result<Vec<f32>, OpError> {
        let plane = h * w;
        let bins = self.pooled_h * self.pooled_w;
        debug_assert_eq!(pixels.len(), n * plane * c);
        let per_roi = c * bins;
        if batch.len() * per_roi == 0 {
            return Ok(Vec::new());
        }
        irun_opkit::par::build(batch.len() * per_roi, per_roi, &|at, fill| {
            let mut by_bin = Vec::new();
            for r in at / per_roi..(at + fill.remaining()) / per_roi {
                let roi = rois[4 * r..4 * r + 4].try_into().expect("4 values");
                let (samples, per_bin) = self.samples(roi, h, w);
                let img = &pixels[batch[r] as usize * plane * c..][..plane * c];
                let per_bin = per_bin.max(1);
                let groups = c / GROUP * GROUP;
                let per = per_bin as f64;
                by_bin.clear();
                by_bin.resize(bins * c, 0.0);
                irun_opkit::simd::widest(
                    #[inline(always)]
                    || {
                        for (taps, row) in samples.chunks(per_bin).zip(by_bin.chunks_mut(c)) {
                            for first in (0..groups).step_by(GROUP) {
                                let out = (&mut row[first..first + GROUP]).try_into();
                                bin_averages::<GROUP>(
                                    img,
                                    c,
                                    first,
                                    taps,
                                    per,
                                    out.expect("GROUP"),
                                );
                            }
                            for ch in groups..c {
                                let out = (&mut row[ch..ch + 1]).try_into();
                                bin_averages::<1>(img, c, ch, taps, per, out.expect("1"));
                            }
                        }
                    },
                );
                // The bins were written channel-last, a vector store per group; the output is
                // channel-first: moved by 16 x 16 blocks (a strided read per value was about a
                // twelfth of the op).
                fill.init_with(per_roi, |dst| {
                    irun_opkit::transpose16::matrix_into(&by_bin, bins, c, dst)
                });
            }
        })
    }
}

/// `out[j]` = the average over `samples` of channel `first + j` of the channel-last `img`:
/// per sample its taps from -0.0, then the samples from -0.0, in f64, divided by `per` and
/// rounded to f32, a vector instruction per step for whole groups (a scalar division and
/// store per channel was a third of the kernel).
#[inline(always)]
fn bin_averages<const G: usize>(
    img: &[f32],
    c: usize,
    first: usize,
    samples: &[Sample],
    per: f64,
    out: &mut [f32; G],
) {
    let mut bin = [-0.0f64; G];
    for s in samples {
        let taps = s.iter().map(|&(k, wt)| (k, wt as f64));
        let sample = weighted_sums::<G>(img, c, first, taps);
        for j in 0..G {
            bin[j] += sample[j];
        }
    }
    for j in 0..G {
        out[j] = (bin[j] / per) as f32;
    }
}

/// Where a sample coordinate `v` falls on an axis of `len` pixels: the two pixels it lies
/// between (the last one twice past the last pixel's centre) and the weight of the second;
/// `None` more than a pixel outside the axis, where the sample reads 0.
#[derive(Clone, Copy)]
struct AxisTaps {
    low: usize,
    high: usize,
    frac: f32,
}

fn axis_taps(v: f32, len: usize) -> Option<AxisTaps> {
    // Written as comparisons so that a NaN coordinate passes, and reads pixel 0 below.
    if v < -1.0 || v > len as f32 || len == 0 {
        return None;
    }
    let v = v.max(0.0);
    let low = v as usize;
    Some(if low >= len - 1 {
        AxisTaps {
            low: len - 1,
            high: len - 1,
            frac: 0.0,
        }
    } else {
        AxisTaps {
            low,
            high: low + 1,
            frac: v - low as f32,
        }
    })
}

/// The four taps of the sample at `x`, `y` on a plane `w` wide (all 0 outside).
fn bilinear(x: Option<AxisTaps>, y: Option<AxisTaps>, w: usize) -> Sample {
    let (Some(x), Some(y)) = (x, y) else {
        return [(0, 0.0); 4];
    };
    let (hy, hx) = (1.0 - y.frac, 1.0 - x.frac);
    [
        (y.low * w + x.low, hy * hx),
        (y.low * w + x.high, hy * x.frac),
        (y.high * w + x.low, y.frac * hx),
        (y.high * w + x.high, y.frac * x.frac),
    ]
}

impl Op for RoiAlign {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.name())?;
        let (data, rois, idx) = (&inputs[0], &inputs[1], &inputs[2]);
        let ranks = [(0, data, 4), (1, rois, 2), (2, idx, 1)];
        for (slot, f, r) in ranks {
            if f.rank().is_some_and(|x| x != r) {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!(
                        "{}: input {slot} {} must have rank {r}",
                        self.name(),
                        f.shape
                    ),
                ));
            }
        }
        if !matches!(
            idx.ty,
            ElementType::I32 | ElementType::I64 | ElementType::Dynamic
        ) {
            return Err(OpError::input(
                2,
                codes::ELEMENT_TYPE,
                format!(
                    "{}: batch indices must be i32 or i64, got {}",
                    self.name(),
                    idx.ty
                ),
            ));
        }
        let mut r = Dim::DYNAMIC;
        if let Some(d) = rois.shape.dims() {
            if d[1].get_static().is_some_and(|v| v != 4) {
                return Err(OpError::input(
                    1,
                    codes::SHAPE,
                    format!("{}: rois {} must be [R, 4]", self.name(), rois.shape),
                ));
            }
            r = d[0];
        }
        if let Some(d) = idx.shape.dims() {
            r = r.intersect(d[0]).ok_or_else(|| {
                OpError::input(
                    2,
                    codes::SHAPE,
                    format!(
                        "{}: {} batch indices for rois {}",
                        self.name(),
                        idx.shape,
                        rois.shape
                    ),
                )
            })?;
        }
        let c = data.shape.dims().map_or(Dim::DYNAMIC, |d| d[1]);
        let out = vec![
            r,
            c,
            Dim::fixed(self.pooled_h as u64),
            Dim::fixed(self.pooled_w as u64),
        ];
        Ok(vec![Fact::new(data.ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.eval_laid_out(inputs, false)
    }

    fn prepare(&self, inputs: &[Fact], _: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        self.prepared(inputs)
    }
}

impl RoiAlign {
    /// The op on its image `[N, C, H, W]`, or with `channels_last` (f32 `avg` only)
    /// `[N, H, W, C]`.
    pub(crate) fn eval_laid_out(
        &self,
        inputs: Vec<Value>,
        channels_last: bool,
    ) -> Result<Vec<Value>, OpError> {
        let [data, rois, idx] = take_inputs::<3>(inputs, self.name())?;
        let (ds, rs) = (data.shape(), rois.shape());
        let ty = data.element_type();
        if channels_last && (self.max || ty != ElementType::F32) {
            return Err(OpError::new(
                codes::INTERNAL,
                format!(
                    "internal error: {} on a channel-last {ty} image",
                    self.name()
                ),
            ));
        }
        if ds.len() != 4 || rs.len() != 2 || rs[1] != 4 || idx.len() != rs[0] {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "{}: data {ds:?}, rois {rs:?}, {} batch indices do not fit",
                    self.name(),
                    idx.len()
                ),
            ));
        }
        let (n, c, h, w) = match channels_last {
            true => (ds[0], ds[3], ds[1], ds[2]),
            false => (ds[0], ds[1], ds[2], ds[3]),
        };
        let batch = IndexValues::of(&idx)
            .ok_or_else(|| {
                OpError::input(2, codes::ELEMENT_TYPE, "batch indices must be integers")
            })?
            .to_vec();
        if let Some((i, &b)) = batch
            .iter()
            .enumerate()
            .find(|(_, &b)| b < 0 || b as usize >= n)
        {
            return Err(OpError::input(
                2,
                codes::INDEX_OUT_OF_RANGE,
                format!(
                    "{}: batch index {b} of roi {i} is not in [0, {n})",
                    self.name()
                ),
            ));
        }
        let bins = self.pooled_h * self.pooled_w;
        if h * w == 0 && ty.is_real() {
            // No pixel to sample: every sample reads 0 (and `max` starts from 0).
            let out = Tensor::zeros(ty, vec![rs[0], c, self.pooled_h, self.pooled_w])
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
            return Ok(vec![Arc::new(out)]);
        }
        if ty == ElementType::F32 && !self.max {
            let x = data
                .values::<f32>()
                .ok_or_else(|| OpError::new(codes::INTERNAL, "storage"))?;
            let rv = rois
                .values::<f32>()
                .ok_or_else(|| OpError::input(1, codes::ELEMENT_TYPE, "rois of the data's type"))?;
            let y = if channels_last {
                self.average_channels_last(x, [n, c, h, w], rv, &batch)?
            } else {
                let pixels = irun_opkit::transpose16::channels_last(x, n, c)?;
                self.average_channels_last(&pixels, [n, c, h, w], rv, &batch)?
            };
            let out = Tensor::from_f32(vec![rs[0], c, self.pooled_h, self.pooled_w], y)
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
            return Ok(vec![Arc::new(out)]);
        }
        let out = with_float!(ty, T => {
            let x = data.values::<T>().ok_or_else(|| OpError::new(codes::INTERNAL, "storage"))?;
            let rv: Vec<f32> = rois.values::<T>().ok_or_else(|| OpError::input(1, codes::ELEMENT_TYPE, "rois of the data's type"))?
                .iter().map(|v| v.to_f64() as f32).collect();
            let mut y = vec![T::default(); rs[0] * c * bins];
            let plane = h * w;
            irun_opkit::par::for_each_split_mut(&mut y, c * bins, &|at, chunk| {
                for (i, dst) in chunk.chunks_mut(c * bins).enumerate() {
                    let r = at / (c * bins) + i;
                    let (samples, per_bin) = self.samples(rv[4 * r..4 * r + 4].try_into().expect("4 values"), h, w);
                    let img = &x[batch[r] as usize * c * plane..][..c * plane];
                    for (ch, out) in dst.chunks_mut(bins).enumerate() {
                        let src = &img[ch * plane..][..plane];
                        for (bin, o) in out.iter_mut().enumerate() {
                            let values = samples[bin * per_bin..][..per_bin].iter().map(|s| {
                                s.iter().map(|&(k, wt)| wt as f64 * src[k].to_f64()).sum::<f64>()
                            });
                            let v = if self.max {
                                values.fold(0.0f64, f64::max)
                            } else {
                                values.sum::<f64>() / per_bin as f64
                            };
                            *o = T::from_f64(v);
                        }
                    }
                }
            });
            Tensor::new(ty, vec![rs[0], c, self.pooled_h, self.pooled_w], T::wrap(y))
        }, else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{} on {ty}", self.name()))));
        Ok(vec![Arc::new(out.map_err(|e| {
            OpError::new(codes::RUN_SHAPE, e.to_string())
        })?)])
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use irun_opkit::testing::eval1;
    use irun_opkit::testing::prelude::*;

    pub(crate) fn op(max: bool, aligned: Aligned) -> RoiAlign {
        RoiAlign {
            v9: true,
            pooled_h: 2,
            pooled_w: 2,
            sampling_ratio: 2,
            spatial_scale: 1.0,
            max,
            aligned,
        }
    }

    /// A linear ramp `x + 10 y` is reproduced exactly by bilinear sampling: each bin's
    /// average is the ramp at the bin's centre.
    #[test]
    fn averages_sample_a_ramp() {
        let (h, w) = (6, 6);
        let x = f32s(
            &[1, 1, h, w],
            &(0..h * w)
                .map(|i| (i % w) as f32 + 10.0 * (i / w) as f32)
                .collect::<Vec<_>>(),
        );
        let rois = f32s(&[1, 4], &[1.0, 1.0, 3.0, 5.0]);
        let y = eval1(
            &op(false, Aligned::Asymmetric),
            vec![x, rois, i64s(&[1], &[0])],
        )
        .unwrap();
        // Bins 1 wide and 2 high: centres x 1.5, 2.5 and y 2, 4.
        assert_eq!(y, f32s(&[1, 1, 2, 2], &[21.5, 22.5, 41.5, 42.5]));
    }

    /// The samples found an axis at a time are the spec's, found per sample: its x and y
    /// from the bin and sub-bin, 0 more than a pixel outside, clamped to the edge pixels,
    /// a NaN coordinate read as pixel 0.
    #[test]
    fn samples_are_the_per_sample_taps() {
        let per_sample = |x: f32, y: f32, h: usize, w: usize| -> Sample {
            if y < -1.0 || y > h as f32 || x < -1.0 || x > w as f32 {
                return [(0, 0.0); 4];
            }
            let axis = |v: f32, len: usize| {
                let v = v.max(0.0);
                let low = v as usize;
                if low >= len - 1 {
                    (len - 1, len - 1, 0.0)
                } else {
                    (low, low + 1, v - low as f32)
                }
            };
            let ((y0, y1, ly), (x0, x1, lx)) = (axis(y, h), axis(x, w));
            let (hy, hx) = (1.0 - ly, 1.0 - lx);
            [
                (y0 * w + x0, hy * hx),
                (y0 * w + x1, hy * lx),
                (y1 * w + x0, ly * hx),
                (y1 * w + x1, ly * lx),
            ]
        };
        let (h, w) = (7, 9);
        for roi in [
            [1.0, 1.0, 6.5, 5.0],
            [-3.0, -2.5, 11.0, 9.5],
            [8.7, 6.2, 8.9, 6.4],
            [f32::NAN, 1.0, 4.0, 3.0],
        ] {
            for (aligned, ratio) in [(Aligned::Asymmetric, 0), (Aligned::HalfPixel, 3)] {
                let op = RoiAlign {
                    pooled_h: 3,
                    pooled_w: 2,
                    sampling_ratio: ratio,
                    spatial_scale: 0.9,
                    ..op(false, aligned)
                };
                let (got, per_bin) = op.samples(roi, h, w);
                let s = op.spatial_scale;
                let corner = |v: f32| match aligned {
                    Aligned::HalfPixel => (v + 0.5) * s - 0.5,
                    _ => v * s,
                };
                let (x1, y1) = (corner(roi[0]), corner(roi[1]));
                let (mut rw, mut rh) = (corner(roi[2]) - x1, corner(roi[3]) - y1);
                if aligned == Aligned::Asymmetric {
                    (rw, rh) = (rw.max(1.0), rh.max(1.0));
                }
                let (bw, bh) = (rw / 2.0, rh / 3.0);
                let (gx, gy) = match ratio {
                    0 => ((bw.ceil() as usize).max(1), (bh.ceil() as usize).max(1)),
                    r => (r, r),
                };
                assert_eq!(per_bin, gx * gy);
                let mut want = Vec::new();
                for py in 0..3 {
                    for px in 0..2 {
                        for iy in 0..gy {
                            let y = y1 + py as f32 * bh + (iy as f32 + 0.5) * bh / gy as f32;
                            for ix in 0..gx {
                                let x = x1 + px as f32 * bw + (ix as f32 + 0.5) * bw / gx as f32;
                                want.push(per_sample(x, y, h, w));
                            }
                        }
                    }
                }
                let bits = |v: &[Sample]| -> Vec<(usize, u32)> {
                    v.iter()
                        .flatten()
                        .map(|&(k, wt)| (k, wt.to_bits()))
                        .collect()
                };
                assert_eq!(bits(&got), bits(&want), "{roi:?} {aligned:?} {ratio}");
            }
        }
    }

    /// The channel-last f32 average gives, bit for bit, the channel-first sums in f64 (the
    /// f64 data's path, on the same values) rounded once to f32: boxes inside, across and
    /// outside the image, both batch items, fixed and adaptive sampling, every alignment, at
    /// 1 and 2 threads; 11 channels (no whole group) and 45 (two groups and 13 alone).
    #[test]
    fn f32_averages_are_the_f64_sums_rounded() {
        for c in [11, 45] {
            averages_are_the_f64_sums_rounded(c);
        }
    }

    fn averages_are_the_f64_sums_rounded(c: usize) {
        let (n, h, w) = (2, 9, 11);
        let values: Vec<f32> = (0..n * c * h * w)
            .map(|i| ((i * 29 % 97) as f32 - 48.0) * 0.37)
            .collect();
        let boxes = [
            1.0, 1.0, 6.5, 5.0, -3.0, 2.0, 4.0, 12.0, 8.0, 7.5, 14.0, 11.0, 2.25, 0.5, 2.75, 8.0,
        ];
        let batch = [0i64, 1, 1, 0];
        let f64s = |shape: &[usize], v: &[f32]| {
            Tensor::from_f64(shape.to_vec(), v.iter().map(|&x| x as f64).collect()).unwrap()
        };
        for aligned in [
            Aligned::Asymmetric,
            Aligned::HalfPixelForNn,
            Aligned::HalfPixel,
        ] {
            for sampling_ratio in [0, 2] {
                let op = RoiAlign {
                    pooled_h: 3,
                    pooled_w: 2,
                    sampling_ratio,
                    spatial_scale: 0.75,
                    ..op(false, aligned)
                };
                let wide = eval1(
                    &op,
                    vec![
                        f64s(&[n, c, h, w], &values),
                        f64s(&[4, 4], &boxes),
                        i64s(&[4], &batch),
                    ],
                )
                .unwrap();
                let want: Vec<u32> = wide
                    .values::<f64>()
                    .unwrap()
                    .iter()
                    .map(|&v| (v as f32).to_bits())
                    .collect();
                for threads in [1, 2] {
                    let got = irun_opkit::testing::on_threads(threads, || {
                        eval1(
                            &op,
                            vec![
                                f32s(&[n, c, h, w], &values),
                                f32s(&[4, 4], &boxes),
                                i64s(&[4], &batch),
                            ],
                        )
                        .unwrap()
                    });
                    let got: Vec<u32> = got
                        .values::<f32>()
                        .unwrap()
                        .iter()
                        .map(|v| v.to_bits())
                        .collect();
                    assert_eq!(
                        got, want,
                        "{aligned:?}, ratio {sampling_ratio}, {threads} threads, {c} channels"
                    );
                }
            }
        }
    }

    /// Max starts from 0; half_pixel moves the box by half a pixel.
    #[test]
    fn max_and_alignment() {
        let x = f32s(&[1, 1, 2, 2], &[-1., -2., -3., -4.]);
        let rois = f32s(&[1, 4], &[0., 0., 2., 2.]);
        let y = eval1(
            &op(true, Aligned::Asymmetric),
            vec![x.clone(), rois.clone(), i32s(&[1], &[0])],
        )
        .unwrap();
        assert_eq!(y, f32s(&[1, 1, 2, 2], &[0.; 4]));
        let ramp = f32s(&[1, 1, 2, 2], &[0., 1., 2., 3.]);
        let y = eval1(
            &op(false, Aligned::HalfPixel),
            vec![ramp.clone(), rois.clone(), i32s(&[1], &[0])],
        )
        .unwrap();
        // Corners at 0 .. 2 (scale 1): samples 0.25, 0.75 (mean 0.5) and 1.25, 1.75 (both
        // clamped to the last pixel, 1).
        assert_eq!(y, f32s(&[1, 1, 2, 2], &[1.5, 2.0, 2.5, 3.0]));
        let y = eval1(
            &op(false, Aligned::HalfPixelForNn),
            vec![ramp, rois, i32s(&[1], &[0])],
        )
        .unwrap();
        // Corners at -0.5 .. 1.5: samples at -0.25 (clamped to 0) and 0.25 in the first
        // bin of an axis (mean 0.125), 0.75 and 1.25 (clamped to 1) in the second (0.875).
        assert_eq!(y, f32s(&[1, 1, 2, 2], &[0.375, 1.125, 1.875, 2.625]));
    }

    #[test]
    fn shapes_and_errors() {
        let o = op(false, Aligned::Asymmetric);
        let f = o
            .infer(&[fact(F32, "1,8,5,5"), fact(F32, "3,4"), fact(I64, "3")])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[3,8,2,2]");
        let e = o
            .infer(&[fact(F32, "1,8,5,5"), fact(F32, "3,4"), fact(I64, "2")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let e = eval1(
            &o,
            vec![
                f32s(&[1, 1, 2, 2], &[0.; 4]),
                f32s(&[1, 4], &[0.; 4]),
                i64s(&[1], &[1]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
    }

    /// An image with an empty axis pools zeros, on the f32 average, f64 and max paths.
    #[test]
    fn empty_images_pool_zero() {
        for (max, c) in [(false, 1usize), (false, 20), (true, 20)] {
            let o = op(max, Aligned::HalfPixel);
            let rois = f32s(&[1, 4], &[0., 0., 2., 2.]);
            let y = eval1(
                &o,
                vec![f32s(&[1, c, 0, 3], &[]), rois.clone(), i64s(&[1], &[0])],
            )
            .unwrap();
            assert_eq!(y, f32s(&[1, c, 2, 2], &vec![0.0; 4 * c]), "max {max}, {c}");
        }
        let o = op(false, Aligned::HalfPixel);
        let wide = Tensor::from_f64(vec![1, 2, 3, 0], vec![]).unwrap();
        let rois = Tensor::from_f64(vec![1, 4], vec![0., 0., 2., 2.]).unwrap();
        let y = eval1(&o, vec![wide, rois, i64s(&[1], &[0])]).unwrap();
        assert_eq!(y.shape(), &[1, 2, 2, 2]);
    }
}
