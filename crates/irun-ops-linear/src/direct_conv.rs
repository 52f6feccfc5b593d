//! Direct f32 convolution at stride 1 (one group, 1 or 2 spatial dims, any kernel size and
//! dilation), for CPUs with AVX-512: no patch matrix and no packing of the input.
//!
//! Why it works: pad each input plane once into a plane `Wp` wide and take the output
//! positions in that padded plane's flat order, `q = oy * Wp + ox`. Then tap `(ky, kx)` of
//! every output reads the padded input at `q + ky * dil_y * Wp + kx * dil_x`: one contiguous
//! run per tap, which the kernel loads as it is. The `Wp - ow` positions at the end of each
//! output row are computed and dropped (under 4% of the work at ResNet-18's 56x56, 22% at its
//! 7x7). The im2col GEMM spent a fifth of its time gathering patches into packed panels, and
//! split small outputs into uneven column blocks.
//!
//! A tile is `MR` output channels by 16, 32 or 48 flat positions (the width that wastes the
//! fewest positions past the last output, preferring the widest), summed in registers over every
//! (input channel, tap) in that order, one fused multiply-add chain per output: the order
//! depends on nothing but the filter's shape, so results do not depend on the thread count.
//! Tasks own `MR` output channels of one batch item (contiguous in the output), so they write
//! disjoint slices.

use crate::op::OpError;
use crate::par::{self, Filler};

/// Output channels of a tile: one broadcast filter value each.
const MR: usize = 8;
/// Flat output positions of a tile, at most: three 16-lane vectors (24 accumulators, with the
/// three input vectors and a broadcast 28 of the 32 registers). Wider tiles load fewer
/// filter values per multiply-add.
const NR: usize = 48;

/// 16-lane vectors per tile row for `flat` positions: the widest whose padding past `flat`
/// is within 5% of the least any width gives (ResNet's 7x7 planes, 63 flat positions, take
/// 32-wide tiles, not 48, which would compute 96).
fn vectors_for(flat: usize) -> usize {
    let padded = |v: usize| flat.next_multiple_of(16 * v);
    let least = (1..=NR / 16).map(padded).min().unwrap_or(0);
    (1..=NR / 16)
        .rev()
        .find(|&v| padded(v) * 20 <= least * 21)
        .unwrap_or(1)
}

/// Filters `[co, ci, kh, kw]` laid out for [`tile`]: per group of `MR` output channels, per
/// input channel, per tap, the `MR` channels' weights (zeros past `co`).
#[derive(Debug)]
pub struct DirectFilters {
    co: usize,
    ci: usize,
    kernel: [usize; 2],
    packed: Vec<f32>,
}

/// One stride-1 convolution's geometry in two spatial dims (a 1-D one has height 1).
#[derive(Clone, Copy, Debug)]
pub struct Shape2 {
    pub n: usize,
    pub input: [usize; 2],
    pub out: [usize; 2],
    pub dil: [usize; 2],
    /// Padding at the start of each dim (the end's follows from the output size).
    pub pad: [usize; 2],
}

impl DirectFilters {
    /// Whether this CPU runs the kernel.
    pub fn supported() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Lays out `w`, the `[co, ci, kh, kw]` filters.
    pub fn new(w: &[f32], co: usize, ci: usize, kernel: [usize; 2]) -> Option<DirectFilters> {
        let taps = kernel[0] * kernel[1];
        if w.len() != co * ci * taps || co == 0 || ci == 0 || taps == 0 {
            return None;
        }
        let tiles = co.div_ceil(MR);
        let mut packed = vec![0f32; tiles * ci * taps * MR];
        for (o, filter) in w.chunks_exact(ci * taps).enumerate() {
            let (tile, r) = (o / MR, o % MR);
            let base = tile * ci * taps * MR;
            for (k, &v) in filter.iter().enumerate() {
                packed[base + k * MR + r] = v;
            }
        }
        Some(DirectFilters {
            co,
            ci,
            kernel,
            packed,
        })
    }

    pub fn byte_size(&self) -> usize {
        self.packed.len() * 4
    }

    pub fn output_channels(&self) -> usize {
        self.co
    }

    pub fn input_channels(&self) -> usize {
        self.ci
    }

    pub fn kernel(&self) -> [usize; 2] {
        self.kernel
    }

    /// The convolution of `x [n, ci, *input]` into `[n, co, *out]`; `each` is called on
    /// every run of output channels (`(index of the first, n * co + c, values)`) as soon as
    /// they are computed.
    pub fn run(
        &self,
        x: &[f32],
        s: &Shape2,
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<Vec<f32>, OpError> {
        let [kh, kw] = self.kernel;
        let [oh, ow] = s.out;
        let wp = ow + (kw - 1) * s.dil[1];
        let hp = oh + (kh - 1) * s.dil[0];
        let taps: Vec<usize> = (0..kh)
            .flat_map(|ky| (0..kw).map(move |kx| ky * s.dil[0] * wp + kx * s.dil[1]))
            .collect();
        let reach = taps.last().copied().unwrap_or(0);
        // Flat positions computed, rounded up to whole tiles; each plane holds every value a
        // tile reads (zeros past the padded plane).
        let vectors = vectors_for(oh * wp);
        let nr = 16 * vectors;
        let flat = (oh * wp).next_multiple_of(nr);
        let plane = (hp * wp).max(flat + reach);
        let positions = oh * ow;
        let in_plane = s.input[0] * s.input[1];
        // Both buffers are written in parallel straight into their capacity: zero-filling
        // them first, on one thread, cost as much as a tenth of a 56x56 convolution.
        let padded = par::build(s.n * self.ci * plane, plane, &|start, fill| {
            let mut p = start / plane;
            while fill.remaining() > 0 {
                pad_plane(&x[p * in_plane..][..in_plane], s, [hp, wp], plane, fill);
                p += 1;
            }
        })?;
        let weights_per_tile = self.ci * taps.len() * MR;
        let channels = s.n * self.co;
        par::build(
            channels * positions,
            (MR * positions).max(1),
            &|start, fill| {
                let mut stage = vec![0f32; MR * positions];
                let mut acc = [[0f32; NR]; MR];
                let mut g = start / positions.max(1);
                while fill.remaining() > 0 && g < channels {
                    // Channels `c .. c + rows` of item `item`, in tile `c / MR` from its row
                    // `c % MR`: a chunk starts on a tile unless `co` is not a multiple of MR.
                    let (item, c) = (g / self.co, g % self.co);
                    let (tile_of, first) = (c / MR, c % MR);
                    let rows = (MR - first)
                        .min(self.co - c)
                        .min(fill.remaining() / positions.max(1));
                    let w = &self.packed[tile_of * weights_per_tile..][..weights_per_tile];
                    let xi = &padded[item * self.ci * plane..][..self.ci * plane];
                    for q0 in (0..oh * wp).step_by(nr) {
                        tile(vectors, w, xi, plane, &taps, q0, &mut acc);
                        // Keep the tile's positions that are outputs (not past an output row).
                        let end = (q0 + nr).min(oh * wp);
                        let mut q = q0;
                        while q < end {
                            let (oy, ox) = (q / wp, q % wp);
                            let run = (wp - ox).min(end - q);
                            let keep = run.min(ow.saturating_sub(ox));
                            for (r, a) in acc[first..first + rows].iter().enumerate() {
                                let at = r * positions + oy * ow + ox;
                                stage[at..at + keep].copy_from_slice(&a[q - q0..q - q0 + keep]);
                            }
                            q += run;
                        }
                    }
                    let done = &mut stage[..rows * positions];
                    each(g, done);
                    fill.extend_from_slice(done);
                    g += rows;
                }
            },
        )
    }
}

/// Appends input plane `x [ih, iw]` at `pad` in a `[hp, wp]` plane of zeros, and zeros up
/// to `plane` values, to `fill`.
fn pad_plane(x: &[f32], s: &Shape2, [hp, wp]: [usize; 2], plane: usize, fill: &mut Filler<f32>) {
    let [ih, iw] = s.input;
    let [pt, pl] = s.pad;
    let (rows, cols) = (ih.min(hp.saturating_sub(pt)), iw.min(wp.saturating_sub(pl)));
    fill.repeat(0.0, pt * wp);
    for y in 0..rows {
        fill.repeat(0.0, pl);
        fill.extend_from_slice(&x[y * iw..][..cols]);
        fill.repeat(0.0, wp - pl - cols);
    }
    fill.repeat(0.0, plane - (pt + rows) * wp);
}

/// `acc[r][i]` = the output of channel `r` of the tile at flat position `q0 + i`: for each
/// input channel `c`, for each tap, `w[(c, tap, r)] * x[c * plane + q0 + tap offset + i]`,
/// summed in that order by fused multiply-adds from 0.
fn tile(
    vectors: usize,
    w: &[f32],
    x: &[f32],
    plane: usize,
    taps: &[usize],
    q0: usize,
    acc: &mut [[f32; NR]; MR],
) {
    let ci = x.len() / plane;
    let reach = taps.iter().copied().max().unwrap_or(0);
    // Every read below is within these bounds: the kernel reads `x[c * plane + q0 + off ..
    // + 16 * vectors]` for c < ci and off <= reach, and `w[.. ci * taps * MR]`.
    assert!(
        x.len() >= ci * plane
            && (1..=NR / 16).contains(&vectors)
            && (ci == 0 || q0 + reach + 16 * vectors <= plane)
            && w.len() >= ci * taps.len() * MR,
        "tile out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    // SAFETY: callers construct `DirectFilters` only where `supported()` (AVX-512F) holds,
    // and the assert above bounds every pointer the kernel reads.
    unsafe {
        let (w, x) = (w.as_ptr(), x.as_ptr());
        match vectors {
            1 => avx512::tile::<1>(w, x, plane, ci, taps, q0, acc),
            2 => avx512::tile::<2>(w, x, plane, ci, taps, q0, acc),
            _ => avx512::tile::<3>(w, x, plane, ci, taps, q0, acc),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("DirectFilters::supported() is false off x86_64");
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX-512F must be available; `x` must be readable at `c * plane + q0 + off + i` for
    /// `c < ci`, `off` in `taps`, `i < 16 * V`, and `w` at `0 .. ci * taps.len() * MR`;
    /// `V <= NR / 16`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn tile<const V: usize>(
        w: *const f32,
        x: *const f32,
        plane: usize,
        ci: usize,
        taps: &[usize],
        q0: usize,
        out: &mut [[f32; NR]; MR],
    ) {
        let mut acc = [[_mm512_setzero_ps(); V]; MR];
        let mut wp = w;
        for c in 0..ci {
            let xc = x.add(c * plane + q0);
            for &off in taps {
                let next = xc.wrapping_add(plane + off) as *const i8;
                _mm_prefetch::<_MM_HINT_T0>(next);
                _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(64 * V));
                let mut b = [_mm512_setzero_ps(); V];
                for (v, b) in b.iter_mut().enumerate() {
                    *b = _mm512_loadu_ps(xc.add(off + 16 * v));
                }
                for (r, a) in acc.iter_mut().enumerate() {
                    let f = _mm512_set1_ps(*wp.add(r));
                    for (a, &b) in a.iter_mut().zip(&b) {
                        *a = _mm512_fmadd_ps(f, b, *a);
                    }
                }
                wp = wp.add(MR);
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            for (v, a) in a.iter().enumerate() {
                _mm512_storeu_ps(o.as_mut_ptr().add(16 * v), *a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The convolution by its definition, in f64.
    fn reference(
        x: &[f32],
        w: &[f32],
        co: usize,
        ci: usize,
        k: [usize; 2],
        s: &Shape2,
    ) -> Vec<f64> {
        let [ih, iw] = s.input;
        let [oh, ow] = s.out;
        let mut out = vec![0f64; s.n * co * oh * ow];
        for n in 0..s.n {
            for o in 0..co {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut sum = 0f64;
                        for c in 0..ci {
                            for ky in 0..k[0] {
                                for kx in 0..k[1] {
                                    let y = (oy + ky * s.dil[0]) as isize - s.pad[0] as isize;
                                    let xx = (ox + kx * s.dil[1]) as isize - s.pad[1] as isize;
                                    if y < 0 || xx < 0 || y >= ih as isize || xx >= iw as isize {
                                        continue;
                                    }
                                    let v = x[((n * ci + c) * ih + y as usize) * iw + xx as usize];
                                    let f = w[((o * ci + c) * k[0] + ky) * k[1] + kx];
                                    sum += v as f64 * f as f64;
                                }
                            }
                        }
                        out[((n * co + o) * oh + oy) * ow + ox] = sum;
                    }
                }
            }
        }
        out
    }

    fn values(len: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn matches_the_definition_at_every_thread_count() {
        if !DirectFilters::supported() {
            return;
        }
        // (n, co, ci, input, kernel, dil, pad begin, pad end): channel counts off the tile
        // sizes, asymmetric and no padding, dilation, 1-D, a plane narrower than a tile.
        let cases = [
            (1, 8, 3, [9, 11], [3, 3], [1, 1], [1, 1], [1, 1]),
            (2, 13, 5, [7, 6], [3, 2], [1, 1], [0, 1], [2, 0]),
            (1, 17, 4, [12, 12], [3, 3], [2, 2], [2, 2], [2, 2]),
            (1, 9, 6, [1, 40], [1, 5], [1, 1], [0, 2], [0, 2]),
            (1, 3, 2, [3, 3], [3, 3], [1, 1], [0, 0], [0, 0]),
            (1, 16, 16, [14, 14], [5, 5], [1, 1], [2, 2], [2, 2]),
        ];
        for (i, &(n, co, ci, input, k, dil, pad, pad_end)) in cases.iter().enumerate() {
            let out = [0, 1].map(|d| input[d] + pad[d] + pad_end[d] - (k[d] - 1) * dil[d]);
            let s = Shape2 {
                n,
                input,
                out,
                dil,
                pad,
            };
            let x = values(n * ci * input[0] * input[1], 7 + i as u32);
            let w = values(co * ci * k[0] * k[1], 99 + i as u32);
            let f = DirectFilters::new(&w, co, ci, k).unwrap();
            let want = reference(&x, &w, co, ci, k, &s);
            let runs: Vec<Vec<f32>> = [1, 2, 3]
                .map(|t| crate::testing::on_threads(t, || f.run(&x, &s, &|_, _| {}).unwrap()))
                .into();
            for (got, w) in runs[0].iter().zip(&want) {
                assert!(
                    (*got as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "case {i}: {got} vs {w}"
                );
            }
            assert_eq!(runs[0], runs[1], "case {i}: 1 and 2 threads");
            assert_eq!(runs[0], runs[2], "case {i}: 1 and 3 threads");
        }
    }

    #[test]
    fn each_sees_every_channel_once_with_its_index() {
        if !DirectFilters::supported() {
            return;
        }
        let (co, ci, k) = (19, 2, [3, 3]);
        let s = Shape2 {
            n: 2,
            input: [5, 5],
            out: [5, 5],
            dil: [1, 1],
            pad: [1, 1],
        };
        let f = DirectFilters::new(&values(co * ci * 9, 3), co, ci, k).unwrap();
        let seen = std::sync::Mutex::new(Vec::new());
        f.run(&values(2 * ci * 25, 4), &s, &|c, v| {
            seen.lock().unwrap().push((c, v.len() / 25))
        })
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        // Runs of channels back to back from 0 to 2 * 19, none across the two items.
        let mut next = 0;
        for &(first, rows) in &seen {
            assert_eq!(first, next, "{seen:?}");
            assert!(
                rows > 0 && first / co == (first + rows - 1) / co,
                "{seen:?}"
            );
            next += rows;
        }
        assert_eq!(next, 2 * co);
    }
}
