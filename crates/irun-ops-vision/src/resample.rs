//! Interpolate's arithmetic: where an output index reads along one axis (the coordinate
//! transform and nearest rounding, in f32 as OpenVINO computes them, so the same source
//! pixel is chosen), the weighted taps of each filtering mode, and the separable pass that
//! applies one axis's taps.
//!
//! Every mode but the pillow ones weighs an N-D neighbourhood by a product of per-axis
//! weights (and `linear` normalises by the product of per-axis sums), so resampling axis by
//! axis in f64 gives the N-D sum; the result is rounded to the element type once.

use crate::op::OpError;
use crate::par;
use irun_opkit::two_taps::TwoTaps;

/// `coordinate_transformation_mode`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Coord {
    HalfPixel,
    PytorchHalfPixel,
    Asymmetric,
    TfHalfPixelForNn,
    AlignCorners,
}

/// `nearest_mode`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Nearest {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
    Simple,
}

/// The input coordinate of output index `x` on an axis scaled by `s` from `li` to `lo`.
pub fn source_coord(coord: Coord, x: f32, s: f32, lo: f32, li: f32) -> f32 {
    if s == 1.0 || lo == li {
        return x;
    }
    match coord {
        Coord::HalfPixel => (x + 0.5) / s - 0.5,
        Coord::PytorchHalfPixel if lo > 1.0 => (x + 0.5) / s - 0.5,
        Coord::PytorchHalfPixel => 0.0,
        Coord::Asymmetric => x / s,
        Coord::TfHalfPixelForNn => (x + 0.5) / s,
        Coord::AlignCorners if lo == 1.0 => 0.0,
        Coord::AlignCorners => x * (li - 1.0) / (lo - 1.0),
    }
}

/// The nearest input index of coordinate `c` (before clamping); `downsample` is the axis's
/// scale below 1 (only `simple` looks at it).
pub fn nearest_index(mode: Nearest, c: f32, downsample: bool) -> i64 {
    match mode {
        Nearest::RoundPreferFloor if c == c.trunc() + 0.5 => c.floor() as i64,
        Nearest::RoundPreferFloor | Nearest::RoundPreferCeil => c.round() as i64,
        Nearest::Floor => c.floor() as i64,
        Nearest::Ceil => c.ceil() as i64,
        Nearest::Simple if downsample => c.ceil() as i64,
        Nearest::Simple => c as i64,
    }
}

/// One output index's input taps along an axis: `(input index, weight)`.
pub type Taps = Vec<(usize, f64)>;

/// How the coordinates of one axis are found.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    pub coord: Coord,
    pub scale: f32,
    pub li: usize,
    pub lo: usize,
}

impl Axis {
    fn coords(&self) -> impl Iterator<Item = f32> + '_ {
        (0..self.lo).map(|o| {
            source_coord(
                self.coord,
                o as f32,
                self.scale,
                self.lo as f32,
                self.li as f32,
            )
        })
    }

    /// `nearest`: the input index of every output index, clamped into the axis.
    pub fn nearest(&self, mode: Nearest) -> Vec<Option<usize>> {
        let last = self.li as i64 - 1;
        self.coords()
            .map(|c| Some(nearest_index(mode, c, self.scale < 1.0).clamp(0, last) as usize))
            .collect()
    }

    /// `linear` (OpenVINO's triangle filter): taps `round(c) - r ..= round(c) + r` inside the
    /// axis, weighted `max(0, 1 - |a (c - k)|)` and normalised to sum 1 (none when they sum to
    /// 0). `a` is the scale when antialiasing, else 1.
    pub fn linear(&self, a: f32) -> Vec<Taps> {
        let r = if self.scale > 1.0 {
            2
        } else {
            (2.0 / a).ceil() as i64
        };
        self.coords()
            .map(|c| {
                let mut taps: Taps = (-r..=r)
                    .map(|j| c.round() as i64 + j)
                    .filter(|&k| (0..self.li as i64).contains(&k))
                    .map(|k| {
                        let w = (1.0 - (a * (c - k as f32)).abs()).max(0.0);
                        (k as usize, (a * w) as f64)
                    })
                    .filter(|&(_, w)| w != 0.0)
                    .collect();
                let sum: f64 = taps.iter().map(|t| t.1).sum();
                if sum == 0.0 {
                    taps.clear();
                }
                taps.iter_mut().for_each(|t| t.1 /= sum);
                taps
            })
            .collect()
    }

    /// `linear_onnx`: the two neighbours of the clamped coordinate, each weighted by the
    /// other's distance (one half each where they coincide, at the edge).
    pub fn linear_onnx(&self) -> Vec<Taps> {
        let last = self.li - 1;
        self.coords()
            .map(|c| {
                let c = c.min(last as f32).max(0.0);
                let i0 = (c as usize).min(last);
                let i1 = (i0 + 1).min(last);
                if i0 == i1 {
                    return vec![(i0, 0.5), (i1, 0.5)];
                }
                let (d0, d1) = ((c - i0 as f32).abs(), (c - i1 as f32).abs());
                vec![(i0, d1 as f64), (i1, d0 as f64)]
            })
            .collect()
    }

    /// `cubic`: Keys' kernel with coefficient `a` on the four neighbours of `floor(c)`, each
    /// index clamped into the axis (edges repeat); no renormalisation.
    pub fn cubic(&self, a: f64) -> Vec<Taps> {
        let last = self.li as i64 - 1;
        self.coords()
            .map(|c| {
                let i = c.floor();
                let t = (c - i) as f64;
                let i = i as i64;
                let w = [
                    keys(t + 1.0, a),
                    keys(t, a),
                    keys(1.0 - t, a),
                    keys(2.0 - t, a),
                ];
                (0..4)
                    .map(|j| ((i - 1 + j).clamp(0, last) as usize, w[j as usize]))
                    .collect()
            })
            .collect()
    }

    /// Pillow's resampling (`bilinear_pillow`, `bicubic_pillow`): `filter` at support
    /// `support`, widened by the downscale factor, taps normalised to sum 1. Pillow works from
    /// the sizes alone.
    pub fn pillow(&self, support: f64, filter: &dyn Fn(f64) -> f64) -> Vec<Taps> {
        let (li, lo) = (self.li as f64, self.lo as f64);
        let ratio = li / lo;
        let f = ratio.max(1.0);
        let support = support * f;
        (0..self.lo)
            .map(|o| {
                let center = (o as f64 + 0.5) * ratio;
                let lo_tap = ((center - support + 0.5) as i64).max(0) as usize;
                let hi_tap = ((center + support + 0.5) as i64).min(self.li as i64).max(0) as usize;
                let mut taps: Taps = (lo_tap..hi_tap)
                    .map(|j| (j, filter((j as f64 - center + 0.5) / f)))
                    .collect();
                let sum: f64 = taps.iter().map(|t| t.1).sum();
                if sum != 0.0 {
                    taps.iter_mut().for_each(|t| t.1 /= sum);
                }
                taps
            })
            .collect()
    }
}

/// Keys' cubic convolution kernel.
pub fn keys(x: f64, a: f64) -> f64 {
    let x = x.abs();
    if x <= 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((x - 5.0) * x + 8.0) * x * a - 4.0 * a
    } else {
        0.0
    }
}

/// Values of `shape` resampled along `axis` by `taps` (one list per output index).
pub fn pass(src: &[f64], shape: &[usize], axis: usize, taps: &[Taps]) -> Vec<f64> {
    let li = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let lo = taps.len();
    let mut out = vec![0.0; outer * lo * inner];
    if out.is_empty() {
        return out;
    }
    if inner == 1 {
        // The last axis: each output is a short dot product of its row; whole rows per
        // task, without a chunk per element.
        let flat = FlatTaps::new(taps);
        par::for_each_split_mut(&mut out, lo, &|at, rows| {
            for (r, dst) in rows.chunks_mut(lo).enumerate() {
                let s = &src[(at / lo + r) * li..][..li];
                flat.dots(s, dst, |d, v| *d = v);
            }
        });
        return out;
    }
    par::for_each_split_mut(&mut out, inner, &|at, rows| {
        for (r, dst) in rows.chunks_mut(inner).enumerate() {
            let row = at / inner + r;
            let (block, o) = (row / lo, row % lo);
            add_rows(dst, &taps[o], |k| &src[(block * li + k) * inner..][..inner]);
        }
    });
    out
}

/// `dst[i] += w * row(k)[i]` for each tap `(k, w)` in order: one output row of a pass over a
/// non-last axis, from the input rows its taps name.
#[inline(always)]
fn add_rows<'a, T: Copy + Into<f64> + 'a>(
    dst: &mut [f64],
    taps: &[(usize, f64)],
    row: impl Fn(usize) -> &'a [T],
) {
    for &(k, w) in taps {
        for (d, &v) in dst.iter_mut().zip(row(k)) {
            *d += w * v.into();
        }
    }
}

/// One axis's taps for every output in one array (output `x`'s are `flat[ends[x - 1]..
/// ends[x]]`): a list per output was a pointer to chase per output element.
struct FlatTaps {
    flat: Vec<(usize, f64)>,
    ends: Vec<usize>,
}

impl FlatTaps {
    fn new(taps: &[Taps]) -> FlatTaps {
        let ends = taps
            .iter()
            .scan(0, |end, t| {
                *end += t.len();
                Some(*end)
            })
            .collect();
        FlatTaps {
            flat: taps.concat(),
            ends,
        }
    }

    /// `put(d, Σ w * row[k])` for each output `d` of `dst` and its taps, in order
    /// (`Iterator::sum`, which starts from -0.0).
    #[inline(always)]
    fn dots<T>(&self, row: &[f64], dst: &mut [T], put: impl Fn(&mut T, f64)) {
        let mut begin = 0;
        for (d, &end) in dst.iter_mut().zip(&self.ends) {
            let taps = &self.flat[begin..end];
            put(d, taps.iter().map(|&(k, w)| w * row[k]).sum::<f64>());
            begin = end;
        }
    }
}

/// The last axis's taps as f32 rows read them fastest: two per output (linear filters) as
/// [`TwoTaps`], any other count as [`FlatTaps`]. The same sums, so the same bits.
enum RowTaps {
    Two(TwoTaps),
    Any(FlatTaps),
}

impl RowTaps {
    fn new(taps: &[Taps]) -> RowTaps {
        if taps.iter().all(|t| t.len() == 2) {
            RowTaps::Two(TwoTaps::new(taps.iter().map(|t| [t[0], t[1]])))
        } else {
            RowTaps::Any(FlatTaps::new(taps))
        }
    }

    /// [`FlatTaps::dots`] of `row`, rounded to f32 into `dst`.
    #[inline(always)]
    fn dots_f32(&self, row: &[f64], dst: &mut [f32]) {
        match self {
            RowTaps::Two(t) => t.dots_f32(row, dst),
            RowTaps::Any(t) => t.dots(row, dst, |d, v| *d = v as f32),
        }
    }
}

/// [`pass`] over the second-to-last axis (taps `th`) and then over the last (taps `tw`) of
/// f32 data, the result rounded to f32: the same operations in the same order as
/// `pass` twice on the data widened, so the same bits, but one output row at a time from a
/// row of f64 scratch, not through f64 copies of the whole tensor (an upsampling of
/// [1, 128, 64, 64] to 128x128 moved 48 MB through them).
pub fn last_two_f32(
    src: &[f32],
    shape: &[usize],
    th: &[Taps],
    tw: &[Taps],
) -> Result<Vec<f32>, OpError> {
    let r = shape.len();
    let (hi, wi) = (shape[r - 2], shape[r - 1]);
    let planes: usize = shape[..r - 2].iter().product();
    let (ho, wo) = (th.len(), tw.len());
    let tw = RowTaps::new(tw);
    let len = planes * ho * wo;
    // Written straight into the output's capacity: zeroing 8 MB first was a sixth of the time.
    par::build(len, wo.max(1), &|start, fill| {
        irun_opkit::simd::widest(
            #[inline(always)]
            || {
                let mut column = vec![0f64; wi];
                let mut row = start / wo.max(1);
                while fill.remaining() > 0 {
                    let (plane, o) = (row / ho, row % ho);
                    column.fill(0.0);
                    add_rows(&mut column, &th[o], |k| &src[(plane * hi + k) * wi..][..wi]);
                    let dst = fill.repeat_mut(0.0, wo);
                    tw.dots_f32(&column, dst);
                    row += 1;
                }
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(coord: Coord, li: usize, lo: usize, scale: f32) -> Axis {
        Axis {
            coord,
            scale,
            li,
            lo,
        }
    }

    /// 5 -> 3 nearest at scale 0.7 (asymmetric, floor): 0, 1, 2 (x / 0.7 = 0, 1.43, 2.86),
    /// and at the sizes-mode scale 0.6: 0, 1, 3.
    #[test]
    fn nearest_follows_the_scale_used() {
        let a = axis(Coord::Asymmetric, 5, 3, 0.7);
        assert_eq!(a.nearest(Nearest::Floor), [Some(0), Some(1), Some(2)]);
        let a = axis(Coord::Asymmetric, 5, 3, 3.0 / 5.0);
        assert_eq!(a.nearest(Nearest::Floor), [Some(0), Some(1), Some(3)]);
    }

    #[test]
    fn nearest_rounding_modes() {
        use Nearest::*;
        assert_eq!(nearest_index(RoundPreferFloor, 1.5, false), 1);
        assert_eq!(nearest_index(RoundPreferFloor, 1.6, false), 2);
        assert_eq!(nearest_index(RoundPreferCeil, 1.5, false), 2);
        assert_eq!(nearest_index(RoundPreferCeil, -0.5, false), -1);
        assert_eq!(nearest_index(Simple, 1.2, true), 2);
        assert_eq!(nearest_index(Simple, 1.7, false), 1);
    }

    #[test]
    fn coordinate_transforms() {
        use Coord::*;
        assert_eq!(source_coord(HalfPixel, 0.0, 2.0, 4.0, 2.0), -0.25);
        assert_eq!(source_coord(AlignCorners, 3.0, 2.0, 4.0, 2.0), 1.0);
        assert_eq!(source_coord(PytorchHalfPixel, 0.0, 0.5, 1.0, 2.0), 0.0);
        assert_eq!(source_coord(TfHalfPixelForNn, 1.0, 2.0, 4.0, 2.0), 0.75);
        // Scale 1 (or equal lengths): the coordinate itself, whatever the mode.
        assert_eq!(source_coord(HalfPixel, 3.0, 1.0, 4.0, 4.0), 3.0);
    }

    /// The taps of each filter sum to 1 (cubic: Keys' kernel is a partition of unity).
    #[test]
    fn filters_sum_to_one() {
        let a = axis(Coord::HalfPixel, 4, 7, 7.0 / 4.0);
        for taps in a
            .linear(1.0)
            .iter()
            .chain(&a.linear_onnx())
            .chain(&a.cubic(-0.75))
        {
            let s: f64 = taps.iter().map(|t| t.1).sum();
            assert!((s - 1.0).abs() < 1e-6, "{taps:?}");
        }
    }

    #[test]
    fn a_pass_resamples_one_axis() {
        // [2, 2] -> [2, 3] along axis 1: each output column from its taps.
        let taps = vec![vec![(0, 1.0)], vec![(0, 0.5), (1, 0.5)], vec![(1, 1.0)]];
        let out = pass(&[1.0, 3.0, 10.0, 20.0], &[2, 2], 1, &taps);
        assert_eq!(out, [1.0, 2.0, 3.0, 10.0, 15.0, 20.0]);
        let taps = vec![vec![(1, 1.0)], vec![(0, 1.0)]];
        let out = pass(&[1.0, 3.0, 10.0, 20.0], &[2, 2], 0, &taps);
        assert_eq!(out, [10.0, 20.0, 1.0, 3.0]);
    }
}

#[cfg(test)]
mod fused_tests {
    use super::*;

    /// The fused passes give `pass` twice on the widened data, rounded to f32, bit for bit:
    /// linear_onnx up and down, cubic, at 1 and 2 threads, on two planes.
    #[test]
    fn last_two_f32_is_pass_twice() {
        let shape = [2usize, 7, 9];
        let src: Vec<f32> = (0..shape.iter().product::<usize>())
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.173)
            .collect();
        let ax = |li: usize, lo: usize| Axis {
            coord: Coord::HalfPixel,
            scale: lo as f32 / li as f32,
            li,
            lo,
        };
        for (th, tw) in [
            (ax(7, 13).linear_onnx(), ax(9, 17).linear_onnx()),
            (ax(7, 4).linear_onnx(), ax(9, 5).linear_onnx()),
            (ax(7, 11).cubic(-0.75), ax(9, 3).cubic(-0.75)),
        ] {
            let wide: Vec<f64> = src.iter().map(|&v| v as f64).collect();
            let once = pass(&wide, &shape, 1, &th);
            let twice = pass(&once, &[2, th.len(), 9], 2, &tw);
            let want: Vec<u32> = twice.iter().map(|&v| (v as f32).to_bits()).collect();
            for threads in [1, 2] {
                let got = irun_opkit::testing::on_threads(threads, || {
                    last_two_f32(&src, &shape, &th, &tw).unwrap()
                });
                let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "{threads} threads");
            }
        }
    }
}
