//! Direct f32 convolution (one group, 1 or 2 spatial dims, any kernel size, stride and
//! dilation), for CPUs with AVX-512: no patch matrix and no packing of the input.
//!
//! Why it works, at stride 1: pad each input plane once into a plane `Wp` wide and take the
//! output positions in that padded plane's flat order, `q = oy * Wp + ox`. Then tap `(ky, kx)`
//! of every output reads the padded input at `q + ky * dil_y * Wp + kx * dil_x`: one
//! contiguous run per tap, which the kernel loads as it is. The `Wp - ow` positions at the end
//! of each output row are computed and dropped (under 4% of the work at ResNet-18's 56x56).
//! At stride `s` the padded plane is first split into its `s x s` phases (the rows `a, a + s,
//! ...` and columns `b, b + s, ...`), of which only those some tap reads are kept: a tap lies
//! in one phase, where the outputs read it at stride 1, so the same kernel runs with each
//! tap's offset counted from its channel's first phase. The im2col GEMM spent a fifth of its
//! time gathering patches into packed panels, and split small outputs into uneven column
//! blocks.
//!
//! A tile is `MR` output channels by 16, 32 or 48 flat positions (the width that wastes the
//! fewest positions past the last output, preferring the widest), summed in registers over every
//! (input channel, tap) in that order, one fused multiply-add chain per output: the order
//! depends on nothing but the filter's shape, so results do not depend on the thread count.
//! Tasks own `MR` output channels of one batch item (contiguous in the output), so they write
//! disjoint slices.

use irun_tensor::Tensor;

use crate::op::{codes, OpError};
use crate::par::{self, Filler};
use crate::spatial::gather_run;

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

/// Filters `[co, ci, kh, kw]` for [`tile`], which reads the `MR` rows of a tile in place:
/// the model's tensor is shared, not copied (no packing at load, and the weights are held
/// once); only the last tile, when `co` is not a multiple of `MR`, is copied with zero rows
/// after it.
#[derive(Debug)]
pub struct DirectFilters {
    co: usize,
    ci: usize,
    kernel: [usize; 2],
    weights: Tensor,
    tail: Vec<f32>,
}

/// One convolution's geometry in two spatial dims (a 1-D one has height 1).
#[derive(Clone, Copy, Debug)]
pub struct Shape2 {
    pub n: usize,
    pub input: [usize; 2],
    pub out: [usize; 2],
    pub stride: [usize; 2],
    pub dil: [usize; 2],
    /// Padding at the start of each dim (the end's follows from the output size).
    pub pad: [usize; 2],
}

impl DirectFilters {
    /// Whether this CPU runs the kernel.
    pub fn supported() -> bool {
        crate::avx512f()
    }

    /// The f32 filters `[co, ci, kh, kw]` (any leading unit dims); `None` for another type
    /// or size.
    pub fn new(
        filters: &Tensor,
        co: usize,
        ci: usize,
        kernel: [usize; 2],
    ) -> Option<DirectFilters> {
        let taps = kernel[0] * kernel[1];
        let w = filters.values::<f32>()?;
        if w.len() != co * ci * taps || co == 0 || ci == 0 || taps == 0 {
            return None;
        }
        let k = ci * taps;
        let whole = co / MR * MR;
        let tail = if whole == co {
            Vec::new()
        } else {
            let mut t = w[whole * k..].to_vec();
            t.resize(MR * k, 0.0);
            t
        };
        Some(DirectFilters {
            co,
            ci,
            kernel,
            weights: filters.clone(),
            tail,
        })
    }

    /// Bytes held beyond the shared filters.
    pub fn byte_size(&self) -> usize {
        self.tail.len() * 4
    }

    /// The `MR` rows of tile `t`, each `ci * kh * kw` long.
    fn tile_weights(&self, t: usize) -> &[f32] {
        let k = self.ci * self.kernel[0] * self.kernel[1];
        if (t + 1) * MR <= self.co {
            let w = self.weights.values::<f32>().expect("checked by new");
            &w[t * MR * k..][..MR * k]
        } else {
            &self.tail
        }
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
    /// every stretch of the output (`(flat index of its first value, values)`) as soon as it
    /// is computed, once per value.
    pub fn run(
        &self,
        x: &[f32],
        s: &Shape2,
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<Vec<f32>, OpError> {
        self.run_within(x, s, each, L2_INPUT_BYTES)
    }

    /// [`Self::run`], keeping about `l2_bytes` of input per task in cache.
    fn run_within(
        &self,
        x: &[f32],
        s: &Shape2,
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
        l2_bytes: usize,
    ) -> Result<Vec<f32>, OpError> {
        let [kh, kw] = self.kernel;
        let [oh, ow] = s.out;
        // Tap (ky, kx) lies in phase (ky * dy % sy, kx * dx % sx), at (ky * dy / sy, kx *
        // dx / sx) of it; the phases are `[hp, wp]`, with room for every tap of every output.
        let at = |k: usize, d: usize| (k * s.dil[d] % s.stride[d], k * s.dil[d] / s.stride[d]);
        let (hp, wp) = (oh + at(kh - 1, 0).1, ow + at(kw - 1, 1).1);
        let mut phases: Vec<[usize; 2]> = Vec::new();
        let mut tap_at: Vec<(usize, usize)> = Vec::with_capacity(kh * kw);
        for ky in 0..kh {
            for kx in 0..kw {
                let ((a, y), (b, x)) = (at(ky, 0), at(kx, 1));
                let phase = match phases.iter().position(|&p| p == [a, b]) {
                    Some(i) => i,
                    None => {
                        phases.push([a, b]);
                        phases.len() - 1
                    }
                };
                tap_at.push((phase, y * wp + x));
            }
        }
        let reach = tap_at.iter().map(|t| t.1).max().unwrap_or(0);
        // The sizes are bounded by the input's and output's, which the executor checked
        // against memory, but checked anyway: a hostile model must not wrap them into a short
        // buffer (the tiles' bounds check would reject it, with a panic).
        let too_large = || OpError::new(codes::MEMORY, "the padded input overflows memory");
        let phase_area = hp.checked_mul(wp).ok_or_else(too_large)?;
        // Flat positions computed, rounded up to whole tiles; each phase holds every value a
        // tile reads (zeros past its plane).
        let vectors = vectors_for(oh * wp);
        let nr = 16 * vectors;
        let flat = (oh * wp).next_multiple_of(nr);
        let phase_len = phase_area.max(flat + reach);
        let plane = phases.len().checked_mul(phase_len).ok_or_else(too_large)?;
        let padded_len = [self.ci, s.n]
            .iter()
            .try_fold(plane, |a, &b| a.checked_mul(b))
            .ok_or_else(too_large)?;
        let taps: Vec<usize> = tap_at.iter().map(|&(p, o)| p * phase_len + o).collect();
        let in_plane = s.input[0] * s.input[1];
        // Both buffers are written in parallel straight into their capacity: zero-filling
        // them first, on one thread, cost as much as a tenth of a 56x56 convolution.
        let padded = par::build(padded_len, plane, &|start, fill| {
            let mut row = vec![0f32; wp];
            let mut c = start / plane;
            while fill.remaining() > 0 {
                let x = &x[c * in_plane..][..in_plane];
                for &phase in &phases {
                    pad_phase(x, s, phase, [hp, wp], phase_len, &mut row, fill);
                }
                c += 1;
            }
        })?;
        let layout = Layout {
            taps,
            plane,
            phase_len,
            wp,
            vectors,
            out: s.out,
        };
        if self.ci * plane * 4 <= l2_bytes {
            self.run_whole(&layout, s.n, &padded, each)
        } else {
            self.run_blocked(&layout, s.n, &padded, each, l2_bytes)
        }
    }

    /// Tasks of `MR` output channels over all positions, written straight into the output
    /// in order: the padded input of an item stays in L2 from tile to tile.
    fn run_whole(
        &self,
        l: &Layout,
        n: usize,
        padded: &[f32],
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) -> Result<Vec<f32>, OpError> {
        let positions = l.out[0] * l.out[1];
        let channels = n * self.co;
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
                    let w = self.tile_weights(tile_of);
                    let xi = &padded[item * self.ci * l.plane..][..self.ci * l.plane];
                    for q0 in (0..l.flat()).step_by(l.nr()) {
                        tile(l.vectors, w, xi, l.plane, &l.taps, q0, &mut acc);
                        l.keep(&acc[first..first + rows], q0, &mut stage);
                    }
                    let done = &mut stage[..rows * positions];
                    each(g * positions, done);
                    fill.extend_from_slice(done);
                    g += rows;
                }
            },
        )
    }

    /// For inputs larger than L2 (PointPillars' 64 x 256 x 256): each task takes a share
    /// of the output channels and walks the positions in blocks whose input fits in L2,
    /// running all its channels over a block before the next, so the input is read from
    /// memory once per task rather than once per tile of `MR` channels.
    fn run_blocked(
        &self,
        l: &Layout,
        n: usize,
        padded: &[f32],
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
        l2_bytes: usize,
    ) -> Result<Vec<f32>, OpError> {
        let positions = l.out[0] * l.out[1];
        let tiles = self.co.div_ceil(MR);
        let per_task = tiles.div_ceil(par::threads().max(1)).max(1);
        let group = per_task * MR * positions;
        let reach = l.taps.iter().map(|t| t % l.phase_len).max().unwrap_or(0);
        let phases = l.taps.iter().map(|t| t / l.phase_len).max().unwrap_or(0) + 1;
        let block = (l2_bytes / 4 / (self.ci * phases).max(1))
            .saturating_sub(reach)
            .max(l.nr())
            .next_multiple_of(l.nr());
        // Zeroed in parallel, then each task owns its channels' slice.
        let mut out = par::build(n * self.co * positions, group.max(1), &|_, fill| {
            fill.repeat(0.0, fill.remaining())
        })?;
        let mut tasks: Vec<(usize, &mut [f32])> = Vec::new();
        for (item, o) in out.chunks_mut((self.co * positions).max(1)).enumerate() {
            for (t, dst) in o.chunks_mut(group.max(1)).enumerate() {
                tasks.push((item * self.co + t * per_task * MR, dst));
            }
        }
        par::for_each_mut(&mut tasks, &|_, (g, dst)| {
            let (item, c0) = (*g / self.co, *g % self.co);
            let xi = &padded[item * self.ci * l.plane..][..self.ci * l.plane];
            let rows = dst.len() / positions.max(1);
            let mut acc = [[0f32; NR]; MR];
            for b0 in (0..l.flat()).step_by(block) {
                let b1 = (b0 + block).min(l.flat());
                // The outputs among flat positions b0..b1, which `keep` writes.
                let (p0, p1) = (l.position(b0), l.position(b1));
                for r0 in (0..rows).step_by(MR) {
                    let tile_of = (c0 + r0) / MR;
                    let w = self.tile_weights(tile_of);
                    let tile_rows = (rows - r0).min(MR);
                    let dst = &mut dst[r0 * positions..][..tile_rows * positions];
                    for q0 in (b0..b1).step_by(l.nr()) {
                        tile(l.vectors, w, xi, l.plane, &l.taps, q0, &mut acc);
                        l.keep(&acc[..tile_rows], q0, dst);
                    }
                    for (r, plane) in dst.chunks_mut(positions.max(1)).enumerate() {
                        each((*g + r0 + r) * positions + p0, &mut plane[p0..p1]);
                    }
                }
            }
        });
        Ok(out)
    }
}

/// Block sizes above: the bytes of padded input a task keeps in L2 (2 MiB per core here).
const L2_INPUT_BYTES: usize = 1 << 20;

/// Where a convolution's tiles read and write.
struct Layout {
    /// Offset of each tap from its channel's first phase.
    taps: Vec<usize>,
    /// Values per input channel (all its phases).
    plane: usize,
    /// Values per phase.
    phase_len: usize,
    /// Width of a phase, which the flat positions step through.
    wp: usize,
    vectors: usize,
    out: [usize; 2],
}

impl Layout {
    fn nr(&self) -> usize {
        16 * self.vectors
    }

    /// Flat positions to compute: `oh` rows of `wp`.
    fn flat(&self) -> usize {
        self.out[0] * self.wp
    }

    /// The output position of flat position `q` (of the first output at or after it).
    fn position(&self, q: usize) -> usize {
        (q / self.wp) * self.out[1] + (q % self.wp).min(self.out[1])
    }

    /// Copies the outputs among the tile's flat positions `q0..` (not those past an output
    /// row) of each row of `acc` into the channel planes of `dst`.
    fn keep(&self, acc: &[[f32; NR]], q0: usize, dst: &mut [f32]) {
        let [_, ow] = self.out;
        let positions = self.out[0] * ow;
        let end = (q0 + self.nr()).min(self.flat());
        let mut q = q0;
        while q < end {
            let (oy, ox) = (q / self.wp, q % self.wp);
            let run = (self.wp - ox).min(end - q);
            let keep = run.min(ow.saturating_sub(ox));
            // One short run per channel (a row of the tile), with no `memcpy` call each.
            crate::rows::copy_rows(
                (&acc.as_flattened()[q - q0..], NR),
                (&mut dst[oy * ow + ox..], positions),
                acc.len(),
                keep,
            );
            q += run;
        }
    }
}

/// Appends phase `[a, b]` of input plane `x [ih, iw]` padded by `s.pad` (its rows `a, a +
/// sy, ...` and columns `b, b + sx, ...`, `[hp, wp]` of them, zeros outside the input), then
/// zeros up to `len` values, to `fill`; `row` is scratch of `wp` values.
fn pad_phase(
    x: &[f32],
    s: &Shape2,
    [a, b]: [usize; 2],
    [hp, wp]: [usize; 2],
    len: usize,
    row: &mut [f32],
    fill: &mut Filler<f32>,
) {
    let [ih, iw] = s.input;
    let [pt, pl] = s.pad;
    let [sy, sx] = s.stride;
    let start = b as isize - pl as isize;
    for i in 0..hp {
        match (i * sy + a).checked_sub(pt).filter(|&y| y < ih) {
            Some(y) => {
                gather_run(&x[y * iw..][..iw], start, sx, 0.0, row);
                fill.extend_from_slice(row);
            }
            None => fill.repeat(0.0, wp),
        }
    }
    fill.repeat(0.0, len - hp * wp);
}

/// `acc[r][i]` = the output of channel `r` of the tile at flat position `q0 + i`: for each
/// input channel `c`, for each tap, `w[r][(c, tap)] * x[c * plane + q0 + tap offset + i]`,
/// summed in that order by fused multiply-adds from 0; `w` holds the tile's `MR` rows.
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
    /// `c < ci`, `off` in `taps`, `i < 16 * V`, and `w` at `0 .. MR * ci * taps.len()` (the
    /// tile's rows one after another); `V <= NR / 16`.
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
        let k = ci * taps.len();
        let rows: [*const f32; MR] = std::array::from_fn(|r| w.add(r * k));
        let mut kk = 0;
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
                for (a, row) in acc.iter_mut().zip(&rows) {
                    let f = _mm512_set1_ps(*row.add(kk));
                    for (a, &b) in a.iter_mut().zip(&b) {
                        *a = _mm512_fmadd_ps(f, b, *a);
                    }
                }
                kk += 1;
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
                                    let y = (oy * s.stride[0] + ky * s.dil[0]) as isize
                                        - s.pad[0] as isize;
                                    let xx = (ox * s.stride[1] + kx * s.dil[1]) as isize
                                        - s.pad[1] as isize;
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

    /// A convolution's geometry from its padding (`[begin, end]`), the output sized by the
    /// floor rule; `None` when the dilated kernel does not fit the padded input.
    fn geometry(
        n: usize,
        input: [usize; 2],
        k: [usize; 2],
        stride: [usize; 2],
        dil: [usize; 2],
        [pad, pad_end]: [[usize; 2]; 2],
    ) -> Option<Shape2> {
        let reach = |d: usize| (k[d] - 1) * dil[d] + 1;
        let span = |d: usize| (input[d] + pad[d] + pad_end[d]).checked_sub(reach(d));
        let out = [span(0)? / stride[0] + 1, span(1)? / stride[1] + 1];
        Some(Shape2 {
            n,
            input,
            out,
            stride,
            dil,
            pad,
        })
    }

    /// Every value of `got` within 1e-5 (relative + absolute) of the f64 reference.
    #[track_caller]
    fn assert_close(got: &[f32], want: &[f64], case: &str) {
        assert_eq!(got.len(), want.len(), "{case}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                (*g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{case}: {g} vs {w}"
            );
        }
    }

    fn filters(w: &[f32]) -> Tensor {
        Tensor::from_f32(vec![w.len()], w.to_vec()).unwrap()
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
        // (n, co, ci, input, kernel, stride, dil, pad begin, pad end): channel counts off the
        // tile sizes, asymmetric and no padding, dilation, 1-D, a plane narrower than a tile,
        // strides 2 and 3 (a 7x7 stem, a 1x1 that reads one phase, strides that differ by
        // dim, stride with dilation), padding past what the strided windows reach.
        let cases = [
            (1, 8, 3, [9, 11], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
            (2, 13, 5, [7, 6], [3, 2], [1, 1], [1, 1], [0, 1], [2, 0]),
            (1, 17, 4, [12, 12], [3, 3], [1, 1], [2, 2], [2, 2], [2, 2]),
            (1, 9, 6, [1, 40], [1, 5], [1, 1], [1, 1], [0, 2], [0, 2]),
            (1, 3, 2, [3, 3], [3, 3], [1, 1], [1, 1], [0, 0], [0, 0]),
            (1, 16, 16, [14, 14], [5, 5], [1, 1], [1, 1], [2, 2], [2, 2]),
            (1, 10, 3, [23, 21], [7, 7], [2, 2], [1, 1], [3, 3], [3, 3]),
            (2, 12, 7, [14, 14], [1, 1], [2, 2], [1, 1], [0, 0], [0, 0]),
            (1, 9, 5, [15, 16], [3, 3], [2, 3], [1, 1], [1, 1], [0, 2]),
            (1, 8, 4, [17, 17], [3, 3], [2, 2], [2, 3], [2, 1], [1, 3]),
            (1, 8, 2, [9, 9], [2, 2], [3, 3], [1, 1], [4, 4], [4, 4]),
        ];
        for (i, &(n, co, ci, input, k, stride, dil, pad, pad_end)) in cases.iter().enumerate() {
            let s = geometry(n, input, k, stride, dil, [pad, pad_end]).unwrap();
            let x = values(n * ci * input[0] * input[1], 7 + i as u32);
            let w = values(co * ci * k[0] * k[1], 99 + i as u32);
            let f = DirectFilters::new(&filters(&w), co, ci, k).unwrap();
            let want = reference(&x, &w, co, ci, k, &s);
            // Whole planes at 1, 2 and 3 threads; blocks of positions (a budget of a few
            // hundred bytes) at 1 and 2.
            let run = |t, budget| {
                crate::testing::on_threads(t, || f.run_within(&x, &s, &|_, _| {}, budget)).unwrap()
            };
            let runs = [
                run(1, usize::MAX),
                run(2, usize::MAX),
                run(3, usize::MAX),
                run(1, 600),
                run(2, 600),
            ];
            assert_close(&runs[0], &want, &format!("case {i}"));
            assert_eq!(runs[0], runs[1], "case {i}: 1 and 2 threads");
            assert_eq!(runs[0], runs[2], "case {i}: 1 and 3 threads");
            assert_eq!(runs[0], runs[3], "case {i}: in blocks");
            assert_eq!(runs[0], runs[4], "case {i}: in blocks, 2 threads");
        }
    }

    /// Random small geometries, padding wider than the kernel reaches and strides past the
    /// kernel included, in whole planes and in blocks.
    #[test]
    fn random_geometries_match_the_definition() {
        if !DirectFilters::supported() {
            return;
        }
        let mut seed = 12345u32;
        let mut pick = |n: usize| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as usize % n
        };
        for case in 0..150 {
            let k = [1 + pick(4), 1 + pick(4)];
            let stride = [1 + pick(3), 1 + pick(3)];
            let dil = [1 + pick(2), 1 + pick(2)];
            let input = [1 + pick(12), 1 + pick(12)];
            let pad = [pick(4), pick(4)];
            let pad_end = [pick(4), pick(4)];
            let (n, co, ci) = (1 + pick(2), 1 + pick(20), 1 + pick(5));
            let Some(s) = geometry(n, input, k, stride, dil, [pad, pad_end]) else {
                continue;
            };
            let x = values(n * ci * input[0] * input[1], case);
            let w = values(co * ci * k[0] * k[1], case + 1000);
            let f = DirectFilters::new(&filters(&w), co, ci, k).unwrap();
            let want = reference(&x, &w, co, ci, k, &s);
            for budget in [usize::MAX, 500] {
                let got = crate::testing::on_threads(2, || {
                    f.run_within(&x, &s, &|_, _| {}, budget).unwrap()
                });
                assert_close(
                    &got,
                    &want,
                    &format!("case {case}: {s:?} k {k:?} co {co} ci {ci}"),
                );
            }
        }
    }

    #[test]
    fn each_sees_every_output_once_where_it_lies() {
        if !DirectFilters::supported() {
            return;
        }
        let (co, ci, k) = (19, 2, [3, 3]);
        let s = Shape2 {
            n: 2,
            input: [9, 7],
            out: [9, 7],
            stride: [1, 1],
            dil: [1, 1],
            pad: [1, 1],
        };
        let f = DirectFilters::new(&filters(&values(co * ci * 9, 3)), co, ci, k).unwrap();
        let x = values(2 * ci * 63, 4);
        for budget in [usize::MAX, 300] {
            let seen = std::sync::Mutex::new(Vec::new());
            let out = crate::testing::on_threads(2, || {
                f.run_within(
                    &x,
                    &s,
                    &|at, v| seen.lock().unwrap().push((at, v.to_vec())),
                    budget,
                )
            })
            .unwrap();
            let mut times = vec![0; out.len()];
            for (at, v) in seen.into_inner().unwrap() {
                assert_eq!(&out[at..at + v.len()], &v[..], "budget {budget}");
                times[at..at + v.len()].iter_mut().for_each(|t| *t += 1);
            }
            assert!(times.iter().all(|&t| t == 1), "budget {budget}: {times:?}");
        }
    }
}
