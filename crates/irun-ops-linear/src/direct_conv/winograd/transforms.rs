//! The input and output transforms of F(2x2, 3x3) and F(4x4, 3x3), on whole rows of tiles
//! at a time so that every loop runs down 16-lane vectors.
//!
//! Each 2-D transform is its 1-D one applied down the columns, then along the rows. Every
//! formula below is written out with a fixed order of operations (Rust does not reorder or
//! fuse float arithmetic), which is what makes the results independent of the tasks.

use super::{Geometry, Tiles, NR};
use crate::direct_conv::{Shape2, MR};
use crate::kernel::try_zeroed;
use crate::op::{codes, OpError};
use crate::simd::{unit, widest, Unit};

/// `Bᵀ` down the lanes: `r[b][i] = Σ_j Bᵀ[b][j] d[j][i]` for the `n` rows of `tiles` (the
/// slots past `n` are unused); every slice of `r` as long as the first, every one of `d` at
/// least that long.
#[inline(always)]
fn forward(tiles: Tiles, d: [&[f32]; 6], r: [&mut [f32]; 6]) {
    let [d0, d1, d2, d3, d4, d5] = d;
    let [r0, r1, r2, r3, r4, r5] = r;
    match tiles {
        Tiles::F2 => by_lanes([d0, d1, d2, d3], [r0, r1, r2, r3], forward2),
        Tiles::F4 => by_lanes([d0, d1, d2, d3, d4, d5], [r0, r1, r2, r3, r4, r5], forward4),
    }
}

/// `Aᵀ` down the lanes: `y[k][i] = Σ_j Aᵀ[k][j] d[j][i]` for the `m` outputs from the `n`
/// rows of `tiles`; lengths as in [`forward`].
#[inline(always)]
fn backward(tiles: Tiles, d: [&[f32]; 6], y: [&mut [f32]; 4]) {
    let [y0, y1, y2, y3] = y;
    match tiles {
        Tiles::F2 => by_lanes([d[0], d[1], d[2], d[3]], [y0, y1], backward2),
        Tiles::F4 => by_lanes(d, [y0, y1, y2, y3], backward4),
    }
}

/// F2's `Bᵀ` on one column.
#[inline(always)]
fn forward2([d0, d1, d2, d3]: [f32; 4]) -> [f32; 4] {
    [d0 - d2, d1 + d2, d2 - d1, d1 - d3]
}

/// F4's `Bᵀ` on one column; rows 1-2 are `t1 ± t2`, rows 3-4 `t3 ± t4`.
#[inline(always)]
fn forward4([d0, d1, d2, d3, d4, d5]: [f32; 6]) -> [f32; 6] {
    let (t1, t2) = (d4 - 4.0 * d2, d3 - 4.0 * d1);
    let (t3, t4) = (d4 - d2, 2.0 * (d3 - d1));
    [
        4.0 * d0 - 5.0 * d2 + d4,
        t1 + t2,
        t1 - t2,
        t3 + t4,
        t3 - t4,
        4.0 * d1 - 5.0 * d3 + d5,
    ]
}

/// F2's `Aᵀ` on one column.
#[inline(always)]
fn backward2([d0, d1, d2, d3]: [f32; 4]) -> [f32; 2] {
    [d0 + d1 + d2, d1 - d2 - d3]
}

/// F4's `Aᵀ` on one column.
#[inline(always)]
fn backward4([d0, d1, d2, d3, d4, d5]: [f32; 6]) -> [f32; 4] {
    let (s1, e1) = (d1 + d2, d1 - d2);
    let (s2, e2) = (d3 + d4, d3 - d4);
    [
        d0 + s1 + s2,
        e1 + 2.0 * e2,
        s1 + 4.0 * s2,
        e1 + 8.0 * e2 + d5,
    ]
}

/// `r[o][i] = f(d[..][i])[o]` for every lane `i` of `r[0]` (each `r[o]` as long, each `d[j]`
/// at least as long): by blocks of 16 lanes copied into registers and back, so the loop
/// runs down vectors whatever the slices' lengths and whether or not they could overlap.
#[inline(always)]
fn by_lanes<const I: usize, const O: usize>(
    d: [&[f32]; I],
    mut r: [&mut [f32]; O],
    f: impl Fn([f32; I]) -> [f32; O],
) {
    let len = r[0].len();
    let mut k = 0;
    while k + 16 <= len {
        let mut x = [[0f32; 16]; I];
        for (x, d) in x.iter_mut().zip(&d) {
            x.copy_from_slice(&d[k..k + 16]);
        }
        let mut y = [[0f32; 16]; O];
        for i in 0..16 {
            let mut column = [0f32; I];
            for (c, x) in column.iter_mut().zip(&x) {
                *c = x[i];
            }
            for (y, v) in y.iter_mut().zip(f(column)) {
                y[i] = v;
            }
        }
        for (r, y) in r.iter_mut().zip(&y) {
            r[k..k + 16].copy_from_slice(y);
        }
        k += 16;
    }
    for i in k..len {
        let mut column = [0f32; I];
        for (c, d) in column.iter_mut().zip(&d) {
            *c = d[i];
        }
        for (r, v) in r.iter_mut().zip(f(column)) {
            r[i] = v;
        }
    }
}

/// One input channel's rows of a band, padded, and their transforms: scratch that
/// [`transform_input`] reuses. Every row is a whole number of 16-lane vectors long, so that
/// no loop over it has a scalar tail.
pub(super) struct InputRows {
    /// Values per phase of a row: `tw + 1` (a tile's last columns are the next tile's
    /// first), rounded up to a vector.
    phase: usize,
    /// Padded row width, `m phase`: every tile's `n = m + 2` columns.
    wide: usize,
    /// One tile row's `n` input rows `[n][wide]`, zeros outside the input.
    padded: Vec<f32>,
    /// `Bᵀ` applied down their columns: `[n][wide]`.
    down: Vec<f32>,
    /// One row split in two, `[2][wide / 2]`: the first step of a split into four.
    halves: Vec<f32>,
    /// One row of `down` split into its `m` phases (columns `k, k + m, ...`): `[m][phase]`.
    phases: Vec<f32>,
    /// For each row `a` of `down` and tile column `j`, the value of every tile of the band:
    /// `[n][n][tp]`, the band's tile rows one after another.
    columns: Vec<f32>,
}

/// A scratch length past `usize`: a memory error, as an allocation that fails would be.
pub(super) fn scratch_overflow() -> OpError {
    OpError::new(codes::MEMORY, "the Winograd scratch overflows memory")
}

impl InputRows {
    pub(super) fn new(g: &Geometry) -> Result<InputRows, OpError> {
        let (m, n) = (g.tiles.m(), g.tiles.n());
        let phase = (g.tw + 1).next_multiple_of(16);
        let wide = m * phase;
        let zeros = |len: Option<usize>| try_zeroed::<f32>(len.ok_or_else(scratch_overflow)?);
        Ok(InputRows {
            phase,
            wide,
            padded: zeros(n.checked_mul(wide))?,
            down: zeros(n.checked_mul(wide))?,
            halves: zeros(Some(wide))?,
            phases: zeros(Some(wide))?,
            columns: zeros((n * n).checked_mul(g.tp))?,
        })
    }
}

/// `v[ξ][c][t]` = point `ξ` of `Bᵀ d B` for input channel `c` and tile `t` of tile rows
/// `ty`, where `d` is the tile's `n x n` patch of the padded input (tile `(ty, tx)` starts
/// at padded row `m ty`, column `m tx`). Values of `v` past the band's tiles, up to a whole
/// vector, are written too, from stale scratch: the products compute them and drop them.
pub(super) fn transform_input(
    x: &[f32],
    s: &Shape2,
    g: &Geometry,
    ty: std::ops::Range<usize>,
    v: &mut [f32],
    rows: &mut InputRows,
) {
    widest(|| transform_input_inlined(x, s, g, ty, v, rows))
}

/// [`transform_input`], inlined into [`widest`]'s wrapper so that its loops take the
/// widest vectors.
#[inline(always)]
fn transform_input_inlined(
    x: &[f32],
    s: &Shape2,
    g: &Geometry,
    ty: std::ops::Range<usize>,
    v: &mut [f32],
    rows: &mut InputRows,
) {
    let [ih, iw] = s.input;
    let [pt, pl] = s.pad;
    let (m, n, tw, tp) = (g.tiles.m(), g.tiles.n(), g.tw, g.tp);
    let ci = x.len() / (ih * iw).max(1);
    let (wide, phase) = (rows.wide, rows.phase);
    // Tiles of the band, rounded up to a vector (within `tp`, a multiple of 16).
    let lanes = (ty.len() * tw).next_multiple_of(16);
    // The input columns a padded row holds: padded column `u` is input column `u - pl`.
    let lo = pl.min(wide);
    let count = iw.min(wide - lo);
    for c in 0..ci {
        let xc = &x[c * ih * iw..][..ih * iw];
        for (ly, y0) in ty.clone().map(|t| m * t).enumerate() {
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
            forward(
                g.tiles,
                six(rows.padded.chunks_exact(wide)),
                six_mut(rows.down.chunks_exact_mut(wide)),
            );
            // Each row split into its phases, and those into the tiles' columns: column `j`
            // of tile `tx` is phase `j` at `tx`, for `j >= m` phase `j - m` at `tx + 1`.
            for (w, columns) in rows
                .down
                .chunks_exact(wide)
                .zip(rows.columns.chunks_exact_mut(n * tp))
            {
                split_phases(m, w, &mut rows.halves, &mut rows.phases);
                for (j, column) in columns.chunks_exact_mut(tp).enumerate() {
                    let from = &rows.phases[(j % m) * phase + j / m..][..tw];
                    column[ly * tw..][..tw].copy_from_slice(from);
                }
            }
        }
        // Along the rows (`· B`), over every tile of the band at once.
        for (a, columns) in rows.columns.chunks_exact(n * tp).enumerate() {
            let start = a * n * ci * tp + c * tp;
            let points = v[start..]
                .chunks_mut(ci * tp)
                .take(n)
                .map(|p| &mut p[..lanes]);
            forward(
                g.tiles,
                six(columns.chunks_exact(tp).map(|c| &c[..lanes])),
                six_mut(points),
            );
        }
    }
}

/// The first six slices of `it` (empty ones past its end).
#[inline]
fn six<'a>(mut it: impl Iterator<Item = &'a [f32]>) -> [&'a [f32]; 6] {
    let mut next = || it.next().unwrap_or_default();
    [next(), next(), next(), next(), next(), next()]
}

/// [`six`] for mutable slices.
#[inline]
fn six_mut<'a>(mut it: impl Iterator<Item = &'a mut [f32]>) -> [&'a mut [f32]; 6] {
    let mut next = || it.next().unwrap_or_default();
    [next(), next(), next(), next(), next(), next()]
}

/// `phases[k][i] = w[m i + k]` for `m` of 2 or 4 and `i < phases.len() / m`; `halves` is
/// scratch of `w.len()` values.
#[inline(always)]
fn split_phases(m: usize, w: &[f32], halves: &mut [f32], phases: &mut [f32]) {
    let len = phases.len() / m;
    let (even, odd) = phases.split_at_mut(phases.len() / 2);
    if m == 2 {
        split_even_odd(w, even, odd);
        return;
    }
    // Four phases: the even and odd halves, each split again (`w[4 i + k]` is half `k % 2`
    // at `2 i + k / 2`), so phase order 0, 2 | 1, 3 is rearranged in the last step.
    let (he, ho) = halves[..4 * len].split_at_mut(2 * len);
    split_even_odd(w, he, ho);
    let (p0, p1) = even.split_at_mut(len);
    let (p2, p3) = odd.split_at_mut(len);
    split_even_odd(he, p0, p2);
    split_even_odd(ho, p1, p3);
}

/// `even[i] = w[2 i]`, `odd[i] = w[2 i + 1]`, for `i < even.len()` (= `odd.len()`, `2 i + 1 <
/// w.len()`): by 16 or 8 pairs at a time in registers, where the compiler's loop took one
/// value at a time.
#[inline(always)]
fn split_even_odd(w: &[f32], even: &mut [f32], odd: &mut [f32]) {
    let n = even.len();
    assert!(odd.len() == n && w.len() >= 2 * n, "split out of bounds");
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `unit()` names only units whose features this CPU has; the assert above
    // bounds what the kernels read and write (they stop at `n`).
    let i = unsafe {
        match unit() {
            Unit::Avx512 => split_even_odd_avx512(w, even, odd),
            Unit::Avx2 => split_even_odd_avx2(w, even, odd),
            Unit::Baseline => 0,
        }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let i = 0;
    for ((pair, e), o) in w[2 * i..]
        .chunks_exact(2)
        .zip(&mut even[i..])
        .zip(&mut odd[i..])
    {
        *e = pair[0];
        *o = pair[1];
    }
}

/// [`split_even_odd`] by 16 pairs while a whole 16 remain; returns how many it did.
///
/// # Safety
/// AVX-512F must be available; `odd.len() == even.len()` and `w.len() >= 2 even.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn split_even_odd_avx512(w: &[f32], even: &mut [f32], odd: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let mut i = 0;
    while i + 16 <= even.len() {
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
        i += 16;
    }
    i
}

/// [`split_even_odd`] by 8 pairs: within each 128-bit half, `shuffle_ps` takes the even (odd)
/// values of both sources, and a cross-half permute puts the halves in order.
///
/// # Safety
/// AVX2 must be available; the lengths as for [`split_even_odd_avx512`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn split_even_odd_avx2(w: &[f32], even: &mut [f32], odd: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let mut i = 0;
    while i + 8 <= even.len() {
        let lo = _mm256_loadu_ps(w.as_ptr().add(2 * i));
        let hi = _mm256_loadu_ps(w.as_ptr().add(2 * i + 8));
        // [lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6] -> [lo0 lo2 lo4 lo6 hi0 hi2 hi4 hi6].
        let e = _mm256_shuffle_ps::<0b10_00_10_00>(lo, hi);
        let o = _mm256_shuffle_ps::<0b11_01_11_01>(lo, hi);
        let order = |v: __m256| {
            _mm256_castpd_ps(_mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_castps_pd(v)))
        };
        _mm256_storeu_ps(even.as_mut_ptr().add(i), order(e));
        _mm256_storeu_ps(odd.as_mut_ptr().add(i), order(o));
        i += 8;
    }
    i
}

/// Scratch of [`transform_output`], made once per task: zeroing it per call cost as much as
/// the transform.
pub(super) struct OutputScratch {
    /// `Aᵀ M`: output row `k`, point column `b`.
    col: [[[f32; NR]; 6]; 4],
    /// `Aᵀ M A`: output `(k, l)`.
    y: [[[f32; NR]; 4]; 4],
}

impl OutputScratch {
    pub(super) fn new() -> Box<OutputScratch> {
        Box::new(OutputScratch {
            col: [[[0.0; NR]; 6]; 4],
            y: [[[0.0; NR]; 4]; 4],
        })
    }
}

/// Writes the outputs of channel row `r` of `mb` (the points' products, tiles `tiles` of
/// the band in their lanes from `tiles.start`) into `part`, the band's `[rows, ow]` outputs
/// of that channel: `Aᵀ M A` per tile, each tile's `m x m` outputs cut to the plane.
pub(super) fn transform_output(
    g: &Geometry,
    scratch: &mut OutputScratch,
    mb: &[[[f32; NR]; MR]],
    r: usize,
    tiles: std::ops::Range<usize>,
    [rows, ow]: [usize; 2],
    part: &mut [f32],
) {
    widest(|| transform_output_inlined(g, scratch, mb, r, tiles, [rows, ow], part))
}

/// [`transform_output`], inlined as [`transform_input_inlined`] is.
#[inline(always)]
fn transform_output_inlined(
    g: &Geometry,
    OutputScratch { col, y }: &mut OutputScratch,
    mb: &[[[f32; NR]; MR]],
    r: usize,
    tiles: std::ops::Range<usize>,
    [rows, ow]: [usize; 2],
    part: &mut [f32],
) {
    let (m, n, tw) = (g.tiles.m(), g.tiles.n(), g.tw);
    // Down the columns (`Aᵀ M`): `col[k][b]`, output row `k` of point column `b`.
    for b in 0..n {
        let [c0, c1, c2, c3] = &mut *col;
        backward(
            g.tiles,
            six((0..n).map(|a| &mb[a * n + b][r][..])),
            [
                &mut c0[b][..],
                &mut c1[b][..],
                &mut c2[b][..],
                &mut c3[b][..],
            ],
        );
    }
    // Along the rows (`· A`): `y[k][l][i]`, output `(k, l)` of the tile in lane `i`.
    for (y, col) in y.iter_mut().zip(col.iter()).take(m) {
        let [y0, y1, y2, y3] = y;
        backward(
            g.tiles,
            six(col.iter().map(|c| &c[..])),
            [&mut y0[..], &mut y1[..], &mut y2[..], &mut y3[..]],
        );
    }
    // Runs of tiles along one tile row.
    let mut t = tiles.start;
    while t < tiles.end {
        let (ly, tx) = (t / tw, t % tw);
        let run = (tw - tx).min(tiles.end - t);
        let i0 = t - tiles.start;
        // Tiles of the run with all their columns in the plane, and the columns of the
        // last one when the width cuts it.
        let room = ow - m * tx;
        let whole = run.min(room / m);
        let cut = if whole < run { room - m * whole } else { 0 };
        for (k, y) in y.iter().enumerate().take(m) {
            let row = m * ly + k;
            if row >= rows {
                continue;
            }
            let dst = &mut part[row * ow + m * tx..][..room.min(m * run)];
            for (i, out) in dst.chunks_exact_mut(m).take(whole).enumerate() {
                for (l, o) in out.iter_mut().enumerate() {
                    *o = y[l][i0 + i];
                }
            }
            for (l, o) in dst[m * whole..][..cut].iter_mut().enumerate() {
                *o = y[l][i0 + whole];
            }
        }
        t += run;
    }
}
