//! Winograd's F(2x2, 3x3) for 3x3 convolutions at stride 1 without dilation, on planes of
//! many channels ([`suits`]).
//!
//! Why: a 2x2 block of outputs ("tile") of one output channel takes 36 multiply-adds per
//! input channel by the definition, 16 here. The tile's 4x4 input patch `d` is transformed
//! once for every output channel (`V = Bᵀ d B`, additions only), the filter once, on the
//! first run (`U = G g Gᵀ`); then for each of the 16 points `ξ`, `M_ξ = U_ξ · V_ξ` summed over
//! the input channels is one matrix product (output channels by tiles), which runs on the
//! position tiles' kernel of `mod.rs`; and `Aᵀ M A` gives the 2x2 outputs. The
//! convolution is then about 2.25 times fewer multiply-adds: PointPillars' 3x3 layers were
//! bound by the multiply-adds at 90% of the FMA units' peak.
//!
//! The products are rounded otherwise than the definition's one chain per output, so the
//! results differ from the direct tiles' in the last bits (the tests bound the error against
//! an f64 reference; F(2x2, 3x3)'s transforms only add, subtract and halve). They do not
//! depend on the thread count: every value above is computed by one fixed sequence of
//! operations that depends on the input and filters alone, not on which task runs it.
//!
//! The matrices, with `ξ = 4 a + b` (`a` the row, `b` the column of the 4x4 point):
//! `Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]`, `G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1]`,
//! `Aᵀ = [1 1 1 0; 0 1 -1 -1]`.

use super::{tile, vectors_for, Shape2, MR, NR};
use crate::op::{codes, OpError};
use crate::par;

/// Bytes of transformed input one band holds (16 values per tile and input channel), which
/// the products read once per block of `MR` output channels: within L2 beside the filters.
const BAND_BYTES: usize = 384 << 10;

/// Whether F(2x2, 3x3) runs a convolution of `ci` into `co` channels on the planes of `s`
/// with a `kernel`-sized filter faster than the direct tiles. Measured here (2 threads, lone
/// layers with bias and ReLU, direct -> transformed): 64 channels at 56x56 1.16 -> 0.98 ms,
/// 128 at 28x28 1.12 -> 0.98 ms, PointPillars' 256x256 and 128x128 layers 26.7 and 25.1 ->
/// about 17 and 14 ms. At 14x14 (256 channels, 1.11 -> 1.3 ms) and 7x7 (512, 1.1 -> 2.1
/// ms) it loses: the transformed filters are 16/9 the size of the filters, and the few tiles
/// of a small plane do not repay reading them. Fewer than 32 channels were not measured;
/// the transforms' share of the work grows as the channels shrink.
pub(super) fn suits(s: &Shape2, kernel: [usize; 2], ci: usize, co: usize) -> bool {
    let [oh, ow] = s.out;
    kernel == [3, 3]
        && s.stride == [1, 1]
        && s.dil == [1, 1]
        && ci >= 32
        && co >= 32
        && oh >= 20
        && ow >= 20
}

/// The filters `[co, ci, 3, 3]` transformed: `U_ξ` for each of the 16 points, `[16][co_pad][ci]`
/// with zero rows from `co` to `co_pad` (a whole number of `MR`-channel tiles).
pub(super) struct WinogradFilters {
    co: usize,
    ci: usize,
    co_pad: usize,
    u: Vec<f32>,
}

/// Sizes only: the transformed filters run to megabytes.
impl std::fmt::Debug for WinogradFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WinogradFilters(co {}, ci {}, {} values)",
            self.co,
            self.ci,
            self.u.len()
        )
    }
}

/// `G` applied to three values: `[g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2]`.
fn g3(g: [f64; 3]) -> [f64; 4] {
    [
        g[0],
        (g[0] + g[1] + g[2]) / 2.0,
        (g[0] - g[1] + g[2]) / 2.0,
        g[2],
    ]
}

impl WinogradFilters {
    /// From the filters `w [co, ci, 3, 3]`, each `U = G g Gᵀ` computed in f64 and rounded
    /// once.
    pub(super) fn new(w: &[f32], co: usize, ci: usize) -> Result<WinogradFilters, OpError> {
        let co_pad = co.next_multiple_of(MR);
        let expected = co.checked_mul(ci).and_then(|v| v.checked_mul(9));
        if expected != Some(w.len()) {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: the filters are not [co, ci, 3, 3]",
            ));
        }
        let len = [co_pad, ci]
            .iter()
            .try_fold(16usize, |a, &b| a.checked_mul(b))
            .ok_or_else(|| OpError::new(codes::MEMORY, "the Winograd filters overflow memory"))?;
        let mut u = crate::kernel::try_zeroed::<f32>(len)?;
        for o in 0..co {
            for c in 0..ci {
                let g = &w[(o * ci + c) * 9..][..9];
                // Along the filter's rows (for each of its columns), then along its columns.
                let cols: [[f64; 4]; 3] =
                    std::array::from_fn(|kx| g3(std::array::from_fn(|ky| g[ky * 3 + kx] as f64)));
                for a in 0..4 {
                    let row = g3([cols[0][a], cols[1][a], cols[2][a]]);
                    for (b, &value) in row.iter().enumerate() {
                        u[((4 * a + b) * co_pad + o) * ci + c] = value as f32;
                    }
                }
            }
        }
        Ok(WinogradFilters { co, ci, co_pad, u })
    }

    pub(super) fn byte_size(&self) -> usize {
        self.u.len() * 4
    }

    /// Point `p` of the transform of output channel `o`'s filter for input channel `c`.
    #[cfg(test)]
    pub(super) fn point(&self, p: usize, o: usize, c: usize) -> f32 {
        self.u[(p * self.co_pad + o) * self.ci + c]
    }

    /// The convolution of `x [n, ci, *s.input]` into `[n, co, *s.out]` (3x3, stride 1, no
    /// dilation), calling `each` on every stretch of the output (`(flat index of its first
    /// value, values)`) once computed: two output rows of one channel at a time, while they
    /// are in cache.
    pub(super) fn run(
        &self,
        x: &[f32],
        s: &Shape2,
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<Vec<f32>, OpError> {
        let [oh, ow] = s.out;
        let positions = oh * ow;
        let planes = s.n * self.co;
        if positions == 0 || planes == 0 {
            return Ok(Vec::new());
        }
        let (th, tw) = (oh.div_ceil(2), ow.div_ceil(2));
        // Tile rows per band: enough tiles for the widest tile of the products, as many as
        // BAND_BYTES holds, at least one row.
        let fit = (BAND_BYTES / (64 * self.ci * tw)).max(1);
        let kb = NR.div_ceil(tw).min(fit).clamp(1, th);
        let band_tiles = kb * tw;
        let vectors = vectors_for(band_tiles);
        let g = Geometry {
            tw,
            kb,
            vectors,
            tp: band_tiles.next_multiple_of(16 * vectors),
        };
        let bands = th.div_ceil(kb);
        let wanted = 4 * par::threads();
        let per_task = bands.div_ceil(wanted.min(bands).max(1));
        let band_tasks = bands.div_ceil(per_task);
        // A small plane is one band or a few (ResNet's 14x14: one): its tasks also split the
        // output channels, by whole tiles of `MR`; each such task transforms the band's
        // input again, a few percent of its products.
        let co_tiles = self.co_pad / MR;
        let tiles_per_group = co_tiles.div_ceil((wanted / band_tasks).clamp(1, co_tiles));
        let co_groups = co_tiles.div_ceil(tiles_per_group);
        // Each task writes output rows `2 kb per_task` at a time of its channel planes: its
        // parts of the planes, cut here so that tasks hold disjoint slices.
        let task_rows = 2 * kb * per_task;
        let mut out = par::build(planes * positions, positions, &|_, fill| {
            fill.repeat(0.0, fill.remaining())
        })?;
        let mut work: Vec<Vec<&mut [f32]>> = (0..band_tasks * co_groups)
            .map(|_| Vec::with_capacity(planes))
            .collect();
        for (p, plane) in out.chunks_mut(positions).enumerate() {
            let group = (p % self.co) / MR / tiles_per_group;
            for (t, part) in plane.chunks_mut(task_rows * ow).enumerate() {
                work[t * co_groups + group].push(part);
            }
        }
        par::for_each_mut(&mut work, &|i, parts| {
            let (t, group) = (i / co_groups, i % co_groups);
            let task = Task {
                bands: t * per_task..((t + 1) * per_task).min(bands),
                co_tiles: group * tiles_per_group..((group + 1) * tiles_per_group).min(co_tiles),
            };
            self.run_task(x, s, &g, &task, parts, each)
        });
        Ok(out)
    }

    /// The task's bands of every item, for its output channels, into `parts` (per item and
    /// channel of the task, its rows of the plane from the first band's first).
    fn run_task(
        &self,
        x: &[f32],
        s: &Shape2,
        g: &Geometry,
        task: &Task,
        parts: &mut [&mut [f32]],
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) {
        let [oh, ow] = s.out;
        let (ci, co) = (self.ci, self.co);
        let in_plane = s.input[0] * s.input[1];
        let nr = 16 * g.vectors;
        let c0 = task.co_tiles.start * MR;
        let channels = (task.co_tiles.end * MR).min(co) - c0;
        let mut v = vec![0f32; 16 * ci * g.tp];
        let mut m = vec![[[0f32; NR]; MR]; 16];
        let mut rows = InputRows::new(g.tw);
        let first_row = 2 * g.kb * task.bands.start;
        for band in task.bands.clone() {
            let (ty0, ty1) = (band * g.kb, ((band + 1) * g.kb).min(oh.div_ceil(2)));
            let row0 = 2 * ty0;
            let out_rows = (2 * ty1).min(oh) - row0;
            let tiles = (ty1 - ty0) * g.tw;
            let local = (row0 - first_row) * ow..(row0 - first_row + out_rows) * ow;
            for item in 0..s.n {
                let xi = &x[item * ci * in_plane..][..ci * in_plane];
                transform_input(xi, s, g, ty0..ty1, &mut v, &mut rows);
                for ct in task.co_tiles.clone() {
                    // The tile's channels, counted from the task's first.
                    let first = ct * MR - c0;
                    let here = MR.min(channels - first);
                    for t0 in (0..tiles).step_by(nr) {
                        for (p, m) in m.iter_mut().enumerate() {
                            let u = &self.u[(p * self.co_pad + ct * MR) * ci..][..MR * ci];
                            let v = &v[p * ci * g.tp..][..ci * g.tp];
                            tile(g.vectors, u, v, g.tp, &[0], t0, m);
                        }
                        for r in 0..here {
                            let part = &mut parts[item * channels + first + r][local.clone()];
                            let count = nr.min(tiles - t0);
                            transform_output(&m, r, t0..t0 + count, g.tw, [out_rows, ow], part);
                        }
                    }
                    for r in 0..here {
                        let plane = item * co + c0 + first + r;
                        let part = &mut parts[item * channels + first + r][local.clone()];
                        each(plane * oh * ow + row0 * ow, part);
                    }
                }
            }
        }
    }
}

/// What one task computes: bands of tile rows, by tiles of `MR` output channels.
struct Task {
    bands: std::ops::Range<usize>,
    co_tiles: std::ops::Range<usize>,
}

/// How a plane is cut into bands of tiles.
struct Geometry {
    /// Tiles per tile row.
    tw: usize,
    /// Tile rows per band.
    kb: usize,
    /// 16-lane vectors per product tile.
    vectors: usize,
    /// Tiles per band rounded up to whole product tiles: the row length of `V_ξ`.
    tp: usize,
}

/// One input channel's four rows of a tile row, padded, and their transforms: scratch that
/// [`transform_input`] reuses.
struct InputRows {
    /// The rows `[4][2 tw + 2]`, zeros outside the input.
    padded: Vec<f32>,
    /// `Bᵀ` applied down the columns: `[4][2 tw + 2]`.
    down: Vec<f32>,
    /// Those rows split into their even and odd columns: `[4][2][tw + 1]`.
    split: Vec<f32>,
}

impl InputRows {
    fn new(tw: usize) -> InputRows {
        InputRows {
            padded: vec![0.0; 4 * (2 * tw + 2)],
            down: vec![0.0; 4 * (2 * tw + 2)],
            split: vec![0.0; 8 * (tw + 1)],
        }
    }
}

/// `v[ξ][c][t]` = point `ξ` of `Bᵀ d B` for input channel `c` and tile `t` of tile rows
/// `ty`, where `d` is the tile's 4x4 patch of the padded input (tile `(ty, tx)` starts at
/// padded row `2 ty`, column `2 tx`).
fn transform_input(
    x: &[f32],
    s: &Shape2,
    g: &Geometry,
    ty: std::ops::Range<usize>,
    v: &mut [f32],
    rows: &mut InputRows,
) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the Winograd path runs only where `DirectFilters::supported()` (AVX-512F)
    // holds; the function itself is safe code.
    unsafe {
        transform_input_avx512(x, s, g, ty, v, rows)
    }
    #[cfg(not(target_arch = "x86_64"))]
    transform_input_avx512(x, s, g, ty, v, rows)
}

/// [`transform_input`], compiled for AVX-512 so that its loops take 16 lanes.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
fn transform_input_avx512(
    x: &[f32],
    s: &Shape2,
    g: &Geometry,
    ty: std::ops::Range<usize>,
    v: &mut [f32],
    rows: &mut InputRows,
) {
    let [ih, iw] = s.input;
    let [pt, pl] = s.pad;
    let (tw, tp) = (g.tw, g.tp);
    let ci = x.len() / (ih * iw).max(1);
    let wide = 2 * tw + 2;
    let half = tw + 1;
    // The input columns a padded row holds: padded column `u` is input column `u - pl`.
    let lo = pl.min(wide);
    let count = iw.min(wide - lo);
    for c in 0..ci {
        let xc = &x[c * ih * iw..][..ih * iw];
        for (ly, y0) in ty.clone().map(|t| 2 * t).enumerate() {
            for (j, row) in rows.padded.chunks_exact_mut(wide).enumerate() {
                match (y0 + j).checked_sub(pt).filter(|&y| y < ih) {
                    Some(y) => {
                        row[..lo].fill(0.0);
                        row[lo..lo + count].copy_from_slice(&xc[y * iw..][..count]);
                        row[lo + count..].fill(0.0);
                    }
                    None => row.fill(0.0),
                }
            }
            // Down the columns (`Bᵀ d`), on whole rows.
            let (d0, rest) = rows.padded.split_at(wide);
            let (d1, rest) = rest.split_at(wide);
            let (d2, d3) = rest.split_at(wide);
            let (w0, rest) = rows.down.split_at_mut(wide);
            let (w1, rest) = rest.split_at_mut(wide);
            let (w2, w3) = rest.split_at_mut(wide);
            for i in 0..wide {
                let (a, b, c, d) = (d0[i], d1[i], d2[i], d3[i]);
                w0[i] = a - c;
                w1[i] = b + c;
                w2[i] = c - b;
                w3[i] = b - d;
            }
            // Each split into its even and odd columns.
            for (w, split) in rows
                .down
                .chunks_exact(wide)
                .zip(rows.split.chunks_exact_mut(2 * half))
            {
                let (even, odd) = split.split_at_mut(half);
                split_even_odd(w, even, odd);
            }
            // Along the rows (`· B`): columns `2 tx .. 2 tx + 4` are even `tx`, odd `tx`,
            // even `tx + 1`, odd `tx + 1`.
            for (a, sa) in rows.split.chunks_exact(2 * half).enumerate() {
                let (even, odd) = sa.split_at(half);
                // The four points `4 a + b` of this channel's tiles, `ci * tp` apart.
                let start = 4 * a * ci * tp + c * tp + ly * tw;
                let mut points = v[start..].chunks_mut(ci * tp).map(|p| &mut p[..tw]);
                let (Some(v0), Some(v1), Some(v2), Some(v3)) =
                    (points.next(), points.next(), points.next(), points.next())
                else {
                    unreachable!("v holds 16 points per channel")
                };
                let columns = even.iter().zip(odd).zip(even[1..].iter().zip(&odd[1..]));
                let points = v0.iter_mut().zip(v1).zip(v2.iter_mut().zip(v3));
                for (((v0, v1), (v2, v3)), ((&e0, &e1), (&e2, &e3))) in points.zip(columns) {
                    *v0 = e0 - e2;
                    *v1 = e1 + e2;
                    *v2 = e2 - e1;
                    *v3 = e1 - e3;
                }
            }
        }
    }
}

/// `even[i] = w[2 i]`, `odd[i] = w[2 i + 1]`, for `i < even.len()` (= `odd.len()`, `2 i + 1 <
/// w.len()`): by 16 pairs at a time in registers, where the compiler's loop took one value
/// at a time.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
fn split_even_odd(w: &[f32], even: &mut [f32], odd: &mut [f32]) {
    let n = even.len();
    assert!(odd.len() == n && w.len() >= 2 * n, "split out of bounds");
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        let odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        while i + 16 <= n {
            // SAFETY: AVX-512F is enabled for this function (its callers run only where
            // `DirectFilters::supported()` holds); `i + 16 <= n` with the assert above bounds
            // the reads `w[2 i .. 2 i + 32]` and the writes `even/odd[i .. i + 16]`.
            unsafe {
                let lo = _mm512_loadu_ps(w.as_ptr().add(2 * i));
                let hi = _mm512_loadu_ps(w.as_ptr().add(2 * i + 16));
                _mm512_storeu_ps(
                    even.as_mut_ptr().add(i),
                    _mm512_permutex2var_ps(lo, evens, hi),
                );
                _mm512_storeu_ps(
                    odd.as_mut_ptr().add(i),
                    _mm512_permutex2var_ps(lo, odds, hi),
                );
            }
            i += 16;
        }
    }
    for ((pair, e), o) in w[2 * i..]
        .chunks_exact(2)
        .zip(&mut even[i..])
        .zip(&mut odd[i..])
    {
        *e = pair[0];
        *o = pair[1];
    }
}

/// Writes the outputs of channel row `r` of `m` (the 16 points' products, tiles `tiles` of
/// the band in their lanes from `tiles.start`) into `part`, the band's `[rows, ow]` outputs
/// of that channel: `Aᵀ M A` per tile, each tile's 2x2 outputs cut to the plane.
fn transform_output(
    m: &[[[f32; NR]; MR]],
    r: usize,
    tiles: std::ops::Range<usize>,
    tw: usize,
    [rows, ow]: [usize; 2],
    part: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `transform_input`.
    unsafe {
        transform_output_avx512(m, r, tiles, tw, [rows, ow], part)
    }
    #[cfg(not(target_arch = "x86_64"))]
    transform_output_avx512(m, r, tiles, tw, [rows, ow], part)
}

/// [`transform_output`], compiled for AVX-512 so that its loops take 16 lanes.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
fn transform_output_avx512(
    m: &[[[f32; NR]; MR]],
    r: usize,
    tiles: std::ops::Range<usize>,
    tw: usize,
    [rows, ow]: [usize; 2],
    part: &mut [f32],
) {
    let m: [&[f32; NR]; 16] = std::array::from_fn(|p| &m[p][r]);
    // Down the columns (`Aᵀ M`): `col[dy][b]`, for each of the 4 columns `b`.
    let mut col = [[[0f32; NR]; 4]; 2];
    for b in 0..4 {
        let (m0, m1, m2, m3) = (m[b], m[4 + b], m[8 + b], m[12 + b]);
        for i in 0..NR {
            col[0][b][i] = m0[i] + m1[i] + m2[i];
            col[1][b][i] = m1[i] - m2[i] - m3[i];
        }
    }
    // Along the rows (`· A`): `y[dy][dx][i]`, output (dy, dx) of the tile in lane `i`.
    let mut y = [[[0f32; NR]; 2]; 2];
    for (y, c) in y.iter_mut().zip(&col) {
        for i in 0..NR {
            y[0][i] = c[0][i] + c[1][i] + c[2][i];
            y[1][i] = c[1][i] - c[2][i] - c[3][i];
        }
    }
    // Runs of tiles along one tile row.
    let mut t = tiles.start;
    while t < tiles.end {
        let (ly, tx) = (t / tw, t % tw);
        let run = (tw - tx).min(tiles.end - t);
        let i0 = t - tiles.start;
        // Tiles of the run with both columns in the plane; an odd width cuts the last.
        let whole = run.min((ow - 2 * tx) / 2);
        for (dy, y) in y.iter().enumerate() {
            let row = 2 * ly + dy;
            if row >= rows {
                continue;
            }
            let dst = &mut part[row * ow + 2 * tx..][..(ow - 2 * tx).min(2 * run)];
            for (pair, (&a, &b)) in dst
                .chunks_exact_mut(2)
                .zip(y[0][i0..i0 + whole].iter().zip(&y[1][i0..i0 + whole]))
            {
                pair[0] = a;
                pair[1] = b;
            }
            if whole < run {
                dst[2 * whole] = y[0][i0 + whole];
            }
        }
        t += run;
    }
}
