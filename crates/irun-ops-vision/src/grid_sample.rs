//! GridSample-9: `data [N, C, H, W]` sampled at the points of `grid [N, Ho, Wo, 2]` (floats
//! in [-1, 1] across the image; `[.., 0]` is x, `[.., 1]` is y), giving `[N, C, Ho, Wo]`.
//!
//! - A grid value `v` on an axis of length L is the pixel coordinate `(v + 1) / 2 * (L - 1)`
//!   with `align_corners`, else `((v + 1) * L - 1) / 2`.
//! - `mode`: `bilinear` (the 2 x 2 neighbours), `nearest` (rounded half to even), `bicubic`
//!   (the 4 x 4 neighbours from `floor - 1`, Keys' kernel with -0.75).
//! - `padding_mode` acts on each integer tap: `zeros` reads 0 outside, `border` clamps,
//!   `reflection` mirrors (about the edge pixels' centres with `align_corners`, about their
//!   outer edges without).
//!
//! The taps of a grid point are found once and applied to every channel, in f64.

use irun_tensor::{with_number, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::pixels::{weighted_sums, GROUP};
use crate::resample::keys;
use irun_opkit::number::Number;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Bilinear,
    Bicubic,
    Nearest,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Padding {
    Zeros,
    Border,
    Reflection,
}

#[derive(Debug)]
pub struct GridSample {
    pub align_corners: bool,
    pub mode: Mode,
    pub padding: Padding,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let mode = match a.enum_or("mode", &["bilinear", "bicubic", "nearest"], "bilinear")? {
        "bicubic" => Mode::Bicubic,
        "nearest" => Mode::Nearest,
        _ => Mode::Bilinear,
    };
    let padding = match a.enum_or("padding_mode", &["zeros", "border", "reflection"], "zeros")? {
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        _ => Padding::Zeros,
    };
    Ok(Box::new(GridSample {
        align_corners: a.bool_or("align_corners", false)?,
        mode,
        padding,
    }))
}

impl GridSample {
    fn unnormalise(&self, v: f64, len: usize) -> f64 {
        let l = len as f64;
        if self.align_corners {
            (v + 1.0) / 2.0 * (l - 1.0)
        } else {
            ((v + 1.0) * l - 1.0) / 2.0
        }
    }

    /// Tap `k` on an axis of `len` after padding; `None`: reads 0, as does every tap of an
    /// empty axis (no pixel to clamp or mirror to).
    #[inline(always)]
    fn tap(&self, k: i64, len: usize) -> Option<usize> {
        let l = len as i64;
        if (0..l).contains(&k) {
            return Some(k as usize);
        }
        if l == 0 {
            return None;
        }
        match self.padding {
            Padding::Zeros => None,
            Padding::Border => Some(k.clamp(0, l - 1) as usize),
            Padding::Reflection if self.align_corners => {
                let period = if l == 1 { 1 } else { 2 * (l - 1) };
                let k = k.abs() % period;
                Some(if k >= l { period - k } else { k } as usize)
            }
            Padding::Reflection => {
                let k = k.rem_euclid(2 * l);
                Some(if k >= l { 2 * l - 1 - k } else { k } as usize)
            }
        }
    }

    /// One axis's taps of coordinate `u`: `(index, weight)`, the first `n` of the array.
    /// Inlined: returned through memory, its array was reloaded wider than it was stored,
    /// a stalled load per point.
    #[inline(always)]
    fn axis_taps(&self, u: f64, len: usize) -> ([(Option<usize>, f64); 4], usize) {
        let mut taps = [(None, 0.0); 4];
        match self.mode {
            Mode::Nearest => {
                taps[0] = (self.tap(u.round_ties_even() as i64, len), 1.0);
                (taps, 1)
            }
            Mode::Bilinear => {
                let f = u.floor();
                let t = u - f;
                let k = f as i64;
                taps[0] = (self.tap(k, len), 1.0 - t);
                taps[1] = (self.tap(k + 1, len), t);
                (taps, 2)
            }
            Mode::Bicubic => {
                let f = u.floor();
                let t = u - f;
                let k = f as i64;
                let w = [
                    keys(t + 1.0, -0.75),
                    keys(t, -0.75),
                    keys(1.0 - t, -0.75),
                    keys(2.0 - t, -0.75),
                ];
                for (j, (tap, w)) in taps.iter_mut().zip(w).enumerate() {
                    *tap = (self.tap(k - 1 + j as i64, len), w);
                }
                (taps, 4)
            }
        }
    }

    /// Appends the plane offsets and weights a grid point `(x, y)` reads on an `h x w`
    /// image to `taps`.
    #[inline(always)]
    fn taps(&self, x: f64, y: f64, h: usize, w: usize, taps: &mut Vec<(usize, f64)>) {
        if !(x.is_finite() && y.is_finite()) {
            return;
        }
        let (tx, nx) = self.axis_taps(self.unnormalise(x, w), w);
        let (ty, ny) = self.axis_taps(self.unnormalise(y, h), h);
        for &(iy, wy) in &ty[..ny] {
            for &(ix, wx) in &tx[..nx] {
                if let (Some(iy), Some(ix)) = (iy, ix) {
                    taps.push((iy * w + ix, wy * wx));
                }
            }
        }
    }

    /// The f32 sampling of `x [n, c, h, w]` at the points of `grid` (`[n, points, 2]`), with
    /// channels in the inner loop: the image moved channel-last, each point's taps found (in the
    /// same vector context, where `floor` is one instruction, not a call) and summed over groups
    /// of channels in f64 vectors into `[n, points, c]`, which is moved back. Per channel the
    /// sums of [`weighted_sum`], in its order, so the same bits (tested); the plane-by-plane loop
    /// was a scalar multiply-add and a store `points` apart per tap of each output, and a list
    /// of every point's taps made first took as long as the sums.
    fn by_pixels(
        &self,
        x: &[f32],
        [n, c, h, w]: [usize; 4],
        grid: &[f64],
    ) -> Result<Vec<f32>, OpError> {
        let (plane, points) = (h * w, grid.len() / 2 / n.max(1));
        let pixels = irun_opkit::transpose16::channels_last(x, n, c)?;
        let groups = c / GROUP * GROUP;
        let last = irun_opkit::par::build(n * points * c, c, &|at, out| {
            let mut taps = Vec::with_capacity(16);
            for q in at / c..at / c + out.remaining() / c {
                let img = &pixels[q / points.max(1) * plane * c..][..plane * c];
                irun_opkit::simd::widest(
                    #[inline(always)]
                    || {
                        taps.clear();
                        self.taps(grid[2 * q], grid[2 * q + 1], h, w, &mut taps);
                        for first in (0..groups).step_by(GROUP) {
                            let sums = weighted_sums::<GROUP>(img, c, first, taps.iter().copied());
                            out.extend_from_slice(&sums.map(|v| v as f32));
                        }
                        for ch in groups..c {
                            let [v] = weighted_sums::<1>(img, c, ch, taps.iter().copied());
                            out.push(v as f32);
                        }
                    },
                );
            }
        })?;
        // Each image's `[points, c]` is its `[c, points]` transposed.
        irun_opkit::transpose16::channels_last(&last, n, points)
    }
}

/// `Σ weight * src[offset]` over `taps`, in order from -0.0 in f64 (`Iterator::sum`'s
/// rule); the four taps of a bilinear point inside the image, the common case, unrolled
/// (`-0.0 + p` is `p`, so the same bits).
#[inline(always)]
fn weighted_sum<T: Number>(src: &[T], taps: &[(usize, f64)]) -> f64 {
    let term = |&(k, wt): &(usize, f64)| wt * src[k].to_f64();
    match taps {
        [a, b, c, d] => term(a) + term(b) + term(c) + term(d),
        _ => taps.iter().map(term).sum(),
    }
}

impl Op for GridSample {
    fn name(&self) -> &'static str {
        "GridSample-9"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        let (data, grid) = (&inputs[0], &inputs[1]);
        if grid.ty != ElementType::Dynamic && !grid.ty.is_real() {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!("GridSample-9: the grid must be floats, got {}", grid.ty),
            ));
        }
        for (slot, f) in [(0, data), (1, grid)] {
            if f.rank().is_some_and(|r| r != 4) {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!("GridSample-9: input {slot} {} must be 4-D", f.shape),
                ));
            }
        }
        let (Some(d), Some(g)) = (data.shape.dims(), grid.shape.dims()) else {
            return Ok(vec![Fact::new(data.ty, PartialShape::dynamic_of_rank(4))]);
        };
        if g[3].get_static().is_some_and(|v| v != 2) {
            return Err(OpError::input(
                1,
                codes::SHAPE,
                format!("GridSample-9: the grid {} must end in 2", grid.shape),
            ));
        }
        let n = d[0].intersect(g[0]).ok_or_else(|| {
            OpError::input(
                1,
                codes::SHAPE,
                format!(
                    "GridSample-9: batch of data {} and grid {} differ",
                    data.shape, grid.shape
                ),
            )
        })?;
        Ok(vec![Fact::new(
            data.ty,
            PartialShape::new(vec![n, d[1], g[1], g[2]]),
        )])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, grid] = take_inputs::<2>(inputs, self.name())?;
        let (ds, gs) = (data.shape(), grid.shape());
        if ds.len() != 4 || gs.len() != 4 || gs[3] != 2 || gs[0] != ds[0] {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("GridSample-9: data {ds:?} and grid {gs:?} do not fit"),
            ));
        }
        let (n, c, h, w) = (ds[0], ds[1], ds[2], ds[3]);
        let points = gs[1] * gs[2];
        let gty = grid.element_type();
        let g = irun_opkit::number::f64_values(&grid).ok_or_else(|| {
            OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!("GridSample-9: a grid of {gty}"),
            )
        })?;
        let ty = data.element_type();
        let out_shape = vec![n, c, gs[1], gs[2]];
        if ty == ElementType::F32 && c >= GROUP {
            let x = data
                .values::<f32>()
                .ok_or_else(|| OpError::new(codes::INTERNAL, "storage"))?;
            let y = self.by_pixels(x, [n, c, h, w], &g)?;
            let out = Tensor::from_f32(out_shape, y)
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
            return Ok(vec![std::sync::Arc::new(out)]);
        }
        // Every point's taps in one flat list (point p's are `starts[p]..starts[p + 1]`): a
        // list per point was a pointer to chase per output element of every channel.
        // Found by blocks of points in parallel (one at a time, three small allocations
        // each, they took most of a 100-crop head's GridSample), joined in order.
        let all = n * points;
        let block = all.div_ceil(4 * irun_opkit::par::threads()).max(64);
        let parts = irun_opkit::par::try_map_tasks(all.div_ceil(block), &|b| {
            let mut ends = Vec::with_capacity(block);
            let mut taps: Vec<(usize, f64)> = Vec::with_capacity(4 * block);
            for p in b * block..((b + 1) * block).min(all) {
                self.taps(g[2 * p], g[2 * p + 1], h, w, &mut taps);
                ends.push(taps.len());
            }
            Ok((ends, taps))
        })?;
        let mut starts = Vec::with_capacity(all + 1);
        let mut taps: Vec<(usize, f64)> = Vec::with_capacity(parts.iter().map(|p| p.1.len()).sum());
        starts.push(0);
        for (ends, part) in parts {
            let base = taps.len();
            starts.extend(ends.iter().map(|e| base + e));
            taps.extend(part);
        }
        let out = with_number!(ty, T => {
            let x = data.values::<T>().ok_or_else(|| OpError::new(codes::INTERNAL, "storage"))?;
            let mut y = vec![T::default(); n * c * points];
            let plane = h * w;
            irun_opkit::par::for_each_split_mut(&mut y, points.max(1), &|at, chunk| {
                for (i, out_plane) in chunk.chunks_mut(points.max(1)).enumerate() {
                    let nc = at / points.max(1) + i;
                    let src = &x[nc * plane..][..plane];
                    let first = (nc / c.max(1)) * points;
                    let bounds = starts[first..=first + points].windows(2);
                    for (o, b) in out_plane.iter_mut().zip(bounds) {
                        let v = weighted_sum(src, &taps[b[0]..b[1]]);
                        *o = T::from_f64(if T::IS_INTEGER { v.round() } else { v });
                    }
                }
            });
            Tensor::new(ty, out_shape, T::wrap(y))
        }, else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("GridSample-9 on {ty}"))));
        let out = out.map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![std::sync::Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::eval1;
    use irun_opkit::testing::prelude::*;

    fn gs(mode: Mode, padding: Padding, align_corners: bool) -> GridSample {
        GridSample {
            align_corners,
            mode,
            padding,
        }
    }

    /// A 2 x 2 image [[1, 2], [3, 4]] sampled at its centre, its corners and outside.
    #[test]
    fn bilinear_points() {
        let x = f32s(&[1, 1, 2, 2], &[1., 2., 3., 4.]);
        let grid = f32s(&[1, 1, 3, 2], &[0., 0., -1., -1., 1., 1.]);
        let y = eval1(
            &gs(Mode::Bilinear, Padding::Zeros, true),
            vec![x.clone(), grid.clone()],
        )
        .unwrap();
        assert_eq!(y, f32s(&[1, 1, 1, 3], &[2.5, 1., 4.]));
        // Without align_corners -1 is the outer edge: a quarter of pixel (0, 0), the rest 0.
        let y = eval1(
            &gs(Mode::Bilinear, Padding::Zeros, false),
            vec![x.clone(), grid.clone()],
        )
        .unwrap();
        assert_eq!(y, f32s(&[1, 1, 1, 3], &[2.5, 0.25, 1.]));
        let y = eval1(&gs(Mode::Bilinear, Padding::Border, false), vec![x, grid]).unwrap();
        assert_eq!(y, f32s(&[1, 1, 1, 3], &[2.5, 1., 4.]));
    }

    /// Several images and channels: each output plane is, bit for bit, the op on that
    /// image's channel alone (the taps of a point serve every channel of its image, and only
    /// its image), for every mode and padding, with points inside, on the edges and outside.
    /// 21 channels take the channel-last path (a group of 16 and 5 alone), 4 the planes'.
    #[test]
    fn every_plane_as_if_alone() {
        for c in [4, 21] {
            planes_as_if_alone(c);
        }
    }

    fn planes_as_if_alone(c: usize) {
        let (n, h, w, ho, wo) = (3, 4, 5, 3, 4);
        let x: Vec<f32> = (0..n * c * h * w)
            .map(|i| ((i * 37) % 23) as f32 - 11.0)
            .collect();
        let g: Vec<f32> = (0..n * ho * wo * 2)
            .map(|i| ((i * 53) % 29) as f32 / 10.0 - 1.4)
            .collect();
        for mode in [Mode::Bilinear, Mode::Nearest, Mode::Bicubic] {
            for padding in [Padding::Zeros, Padding::Border, Padding::Reflection] {
                let op = gs(mode, padding, false);
                let all = eval1(
                    &op,
                    vec![f32s(&[n, c, h, w], &x), f32s(&[n, ho, wo, 2], &g)],
                )
                .unwrap();
                let all = all.values::<f32>().unwrap();
                for b in 0..n {
                    for ch in 0..c {
                        let plane = &x[(b * c + ch) * h * w..][..h * w];
                        let grid = &g[b * ho * wo * 2..][..ho * wo * 2];
                        let alone = eval1(
                            &op,
                            vec![f32s(&[1, 1, h, w], plane), f32s(&[1, ho, wo, 2], grid)],
                        )
                        .unwrap();
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(
                            bits(&all[(b * c + ch) * ho * wo..][..ho * wo]),
                            bits(alone.values::<f32>().unwrap()),
                            "{mode:?} {padding:?} image {b} channel {ch} of {c}"
                        );
                    }
                }
            }
        }
    }

    /// Reflection: without align_corners the mirror is the outer edge (tap -1 reads 0,
    /// tap 2 reads 1 on a length-2 axis); with it the edge pixel (tap -1 reads 1).
    #[test]
    fn reflection_taps() {
        let r = gs(Mode::Nearest, Padding::Reflection, false);
        assert_eq!(
            [r.tap(-1, 2), r.tap(2, 2), r.tap(-3, 2)],
            [Some(0), Some(1), Some(1)]
        );
        let r = gs(Mode::Nearest, Padding::Reflection, true);
        assert_eq!(
            [r.tap(-1, 3), r.tap(3, 3), r.tap(-5, 3)],
            [Some(1), Some(1), Some(1)]
        );
        assert_eq!(r.tap(5, 1), Some(0));
    }

    /// Nearest rounds half to even: 0.5 of the way between pixels 0 and 1 reads pixel 0.
    #[test]
    fn nearest_ties_go_to_even() {
        let x = f32s(&[1, 1, 1, 3], &[10., 20., 30.]);
        // align_corners: x = -0.5 is pixel coordinate 0.5, x = 0.5 is 1.5.
        let grid = f32s(&[1, 1, 2, 2], &[-0.5, 0., 0.5, 0.]);
        let y = eval1(&gs(Mode::Nearest, Padding::Zeros, true), vec![x, grid]).unwrap();
        assert_eq!(y, f32s(&[1, 1, 1, 2], &[10., 30.]));
    }

    /// An image with an empty axis reads 0 at every point in every padding mode (border
    /// and reflection have no pixel to go to; they panicked), on both paths.
    #[test]
    fn empty_images_read_zero() {
        for padding in [Padding::Zeros, Padding::Border, Padding::Reflection] {
            for c in [1usize, 16] {
                let y = eval1(
                    &gs(Mode::Bilinear, padding, false),
                    vec![
                        f32s(&[1, c, 0, 3], &[]),
                        f32s(&[1, 1, 2, 2], &[0.1, 0.2, -0.5, 0.3]),
                    ],
                )
                .unwrap();
                assert_eq!(y, f32s(&[1, c, 1, 2], &vec![0.0; 2 * c]), "{padding:?}");
            }
        }
    }

    #[test]
    fn shapes() {
        let op = gs(Mode::Bicubic, Padding::Zeros, false);
        let f = op
            .infer(&[fact(F32, "2,3,8,8"), fact(F32, "2,5,6,2")])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[2,3,5,6]");
        let e = op
            .infer(&[fact(F32, "2,3,8,8"), fact(F32, "2,5,6,3")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let e = op
            .infer(&[fact(F32, "2,3,8,8"), fact(F32, "3,5,6,2")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
