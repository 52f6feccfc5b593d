//! Direct f32 convolution (one group, 1 or 2 spatial dims, any kernel size, stride and
//! dilation), for CPUs with AVX-512 or AVX2: no patch matrix and no packing of the input.
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
//!
//! Those are the position tiles. For many input channels by taps, `lanes.rs` puts output
//! channels in the lanes instead, over the same padded input and with the same sums in the
//! same order, so the same bits; `Tiling` and `lanes::suits` say which runs.

use std::sync::OnceLock;

use irun_tensor::Tensor;

use crate::op::{codes, OpError};
use crate::par::{self, Filler};
use crate::simd::{unit, Unit};
use crate::spatial::inside_run;
use tiles::tile;

/// The most output positions on which small filters at a stride run direct (AVX-512): 64x64.
/// See [`DirectFilters::runs`].
const STRIDED_PLANE: usize = 64 * 64;

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

/// Filters `[co, ci, kh, kw]` for `tile`, which reads the `MR` rows of a tile in place:
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
    /// The filters packed for [`lanes`], on the first run of a plane they suit.
    channels: OnceLock<Option<lanes::ChannelFilters>>,
    /// The filters transformed for [`winograd`], on the first run of a plane they suit.
    winograd: OnceLock<Option<winograd::WinogradFilters>>,
}

/// Which tiles run a convolution: flat positions in the vector lanes (this file) or output
/// channels ([`lanes`]); they give the same bits, so the choice is one of speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tiling {
    /// Whichever runs the filters' shape faster ([`lanes::suits`]).
    Fastest,
    #[cfg(test)]
    Positions,
    #[cfg(test)]
    Channels,
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

impl Shape2 {
    /// Where tap `k` of dim `d` lies: its phase of the stride (`k * dil % stride`) and its
    /// offset within that phase (`k * dil / stride`).
    fn tap_at(&self, k: usize, d: usize) -> (usize, usize) {
        let reach = k * self.dil[d];
        (reach % self.stride[d], reach / self.stride[d])
    }
}

impl DirectFilters {
    /// Whether this CPU runs the kernel.
    pub fn supported() -> bool {
        unit() != Unit::Baseline
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
            channels: OnceLock::new(),
            winograd: OnceLock::new(),
        })
    }

    /// Bytes held beyond the shared filters (the packed ones once made).
    pub fn byte_size(&self) -> usize {
        let packed = self.channels.get().and_then(Option::as_ref);
        let winograd = self.winograd.get().and_then(Option::as_ref);
        self.tail.len() * 4
            + packed.map_or(0, lanes::ChannelFilters::byte_size)
            + winograd.map_or(0, winograd::WinogradFilters::byte_size)
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

    /// Whether the direct kernels run `s` on this CPU at least as fast as the convolution's
    /// GEMM. Small filters at a stride only on AVX-512, onto planes of at most
    /// `STRIDED_PLANE` (64x64) positions, with more than one tap: their strided reads leave
    /// the position tiles short of work on large planes (Zen 4, one thread: 64 -> 20
    /// channels 3x3 stride 2 onto 161x161 14.3 ms either way, 7.5-8.0 against 6.9-7.0 at
    /// two; 32 -> 64 onto 160x160 14.5-15.6 against 12.9-13.3), but onto small ones the GEMM's patch copies
    /// cost more than they save (16 -> 20 channels onto 16x16 30 against 37 us, 64 -> 64
    /// onto 32x32 0.80 against 0.88 ms, onto 48x48 1.81 against 2.27, 32 -> 32 onto 64x64
    /// 0.90 against 1.18), and 1x1 filters at a stride read one phase either way (64 -> 128
    /// onto 28x28 166 against 159-166 us). AVX2 (8-lane blocks of 4 channels, no channel
    /// tiles) keeps every small strided filter on the GEMM (3x3 stride 2, 32 -> 64 channels
    /// onto 160x160: 24 against 20 ms). Else on AVX-512 always: the channel tiles take what
    /// the position tiles run slowly.
    /// On AVX2, measured on one and two threads against the GEMM: the planes Winograd takes
    /// (ResNet-18's 56x56 layers 2.4 against 4.4 ms) and other stride-1 filters (a 64 -> 5
    /// channel 3x3 head on 160x160: 5 against 9 ms), and filters of 25 taps or more (a 7x7
    /// stride-2 stem: 4.7 against 6.3 ms); not small planes of many channels, the ones
    /// `lanes::suits` gives the channel tiles (ResNet-18's 14x14 layers: 5.2 against 3.9
    /// ms; its 7x7 ones even).
    /// Nor the planes of Winograd's F(2x2, 3x3): the GEMM by position rows runs ResNet-18's
    /// 28x28 layers of 128 channels in 4.0-4.2 ms against 4.65-4.7 at one thread, 2.5-2.6
    /// against 2.9-3.1 at two.
    pub fn runs(&self, s: &Shape2) -> bool {
        let [kh, kw] = self.kernel;
        let small_plane = s.out[0] * s.out[1] <= STRIDED_PLANE && kh * kw > 1;
        if s.stride != [1, 1] && kh * kw < 25 && !(small_plane && unit() == Unit::Avx512) {
            return false;
        }
        if unit() == Unit::Avx512 {
            return true;
        }
        match winograd::suits(s, self.kernel, self.ci, self.co) {
            Some(winograd::Tiles::F4) => return true,
            Some(winograd::Tiles::F2) => return false,
            None => {}
        }
        let wp = s.out[1] + s.tap_at(kw - 1, 1).1;
        let flat = s.out[0] * wp;
        let small = s.out[0] * s.out[1] <= SMALL_PLANE;
        !(small && lanes::suits_sizes(flat, s.out, vectors_for(flat), self.ci * kh * kw))
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
        if let Some(tiles) = winograd::suits(s, self.kernel, self.ci, self.co) {
            let w = self.weights.values::<f32>().expect("checked by new");
            let made = self
                .winograd
                .get_or_init(|| winograd::WinogradFilters::new(w, self.co, self.ci, tiles).ok());
            // Filters made for the other tiles (a model whose plane size changes between
            // runs) leave this plane to the direct tiles.
            if let Some(f) = made.as_ref().filter(|f| f.tiles == tiles) {
                return f.run(x, s, each);
            }
        }
        self.run_within(x, s, each, L2_INPUT_BYTES, Tiling::Fastest)
    }

    /// [`Self::run`], keeping about `l2_bytes` of input per task in cache.
    fn run_within(
        &self,
        x: &[f32],
        s: &Shape2,
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
        l2_bytes: usize,
        tiling: Tiling,
    ) -> Result<Vec<f32>, OpError> {
        let [kh, kw] = self.kernel;
        let [oh, ow] = s.out;
        // Tap (ky, kx) lies in phase (ky * dy % sy, kx * dx % sx), at (ky * dy / sy, kx *
        // dx / sx) of it; the phases are `[hp, wp]`, with room for every tap of every output.
        let (hp, wp) = (oh + s.tap_at(kh - 1, 0).1, ow + s.tap_at(kw - 1, 1).1);
        let mut phases: Vec<[usize; 2]> = Vec::new();
        let mut tap_at: Vec<(usize, usize)> = Vec::with_capacity(kh * kw);
        for ky in 0..kh {
            for kx in 0..kw {
                let ((a, y), (b, x)) = (s.tap_at(ky, 0), s.tap_at(kx, 1));
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
        let padded_len =
            irun_tensor::element_count(&[plane, self.ci, s.n]).ok_or_else(too_large)?;
        let taps: Vec<usize> = tap_at.iter().map(|&(p, o)| p * phase_len + o).collect();
        let in_plane = s.input[0] * s.input[1];
        // Both buffers are written in parallel straight into their capacity: zero-filling
        // them first, on one thread, cost as much as a tenth of a 56x56 convolution.
        // By phases, not channels: a 3-channel stem's 12 phase planes share out 6:6 over two
        // threads, where its 3 channels went 2:1.
        let padded = par::build(padded_len, phase_len.max(1), &|start, fill| {
            let mut at = start / phase_len.max(1);
            while fill.remaining() > 0 {
                let (c, phase) = (at / phases.len(), phases[at % phases.len()]);
                let x = &x[c * in_plane..][..in_plane];
                pad_phase(x, s, phase, [hp, wp], phase_len, fill);
                at += 1;
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
        let by_channels = lanes::available()
            && match tiling {
                Tiling::Fastest => lanes::suits(&layout, self.ci * kh * kw, self.co),
                #[cfg(test)]
                Tiling::Positions => false,
                #[cfg(test)]
                Tiling::Channels => true,
            };
        let w = self.weights.values::<f32>().expect("checked by new");
        let k = self.ci * kh * kw;
        if let Some(f) = by_channels
            .then(|| lanes::packed(&self.channels, w, self.co, k))
            .flatten()
        {
            f.run(&layout, s.n, self.co, &padded, each)
        } else if s.n * self.co.div_ceil(MR) < 2 * par::threads() {
            self.run_by_positions(&layout, s.n, &padded, each, l2_bytes)
        } else if self.ci * plane * 4 <= l2_bytes {
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
                    // Written in place: a staging buffer zeroed and copied after cost a seventh
                    // of a stem convolution's time.
                    let done = fill.repeat_mut(0.0, rows * positions);
                    for q0 in (0..l.flat()).step_by(l.nr()) {
                        tile(
                            first + rows,
                            l.vectors,
                            w,
                            xi,
                            l.plane,
                            &l.taps,
                            q0,
                            &mut acc,
                        );
                        l.keep(&acc[first..first + rows], q0, done);
                    }
                    each(g * positions, done);
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
        let block = l.positions_in_l2(self.ci, l2_bytes);
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
                        tile(tile_rows, l.vectors, w, xi, l.plane, &l.taps, q0, &mut acc);
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

    /// For fewer tiles of `MR` output channels than two per thread (a detection head's 5
    /// channels are one tile, which the other two ways give to a single task: 9.5 ms of a
    /// 160x160 head on one of two threads): tasks of position blocks, each running every
    /// channel tile over its block, L2-sized part by part, into a buffer of its own that is
    /// copied into the output after.
    fn run_by_positions(
        &self,
        l: &Layout,
        n: usize,
        padded: &[f32],
        each: &(dyn Fn(usize, &mut [f32]) + Sync),
        l2_bytes: usize,
    ) -> Result<Vec<f32>, OpError> {
        let positions = l.out[0] * l.out[1];
        let (flat, nr) = (l.flat(), l.nr());
        let tiles = self.co.div_ceil(MR);
        // About four blocks per thread over all items, each whole tiles of positions.
        let per_item = (4 * par::threads()).div_ceil(n.max(1)).max(1);
        let block = flat.div_ceil(per_item).next_multiple_of(nr).max(nr);
        let blocks = flat.div_ceil(block);
        let part = l.positions_in_l2(self.ci, l2_bytes);
        let parts = par::try_map_tasks(n * blocks, &|t| {
            let (item, b) = (t / blocks, t % blocks);
            let (b0, b1) = (b * block, ((b + 1) * block).min(flat));
            let (p0, p1) = (l.position(b0), l.position(b1));
            let width = p1 - p0;
            let mut buf = crate::kernel::try_zeroed::<f32>(self.co * width).map_err(|e| (t, e))?;
            let xi = &padded[item * self.ci * l.plane..][..self.ci * l.plane];
            let mut acc = [[0f32; NR]; MR];
            for s0 in (b0..b1).step_by(part) {
                for tile_of in 0..tiles {
                    let w = self.tile_weights(tile_of);
                    let rows = MR.min(self.co - tile_of * MR);
                    let dst = &mut buf[tile_of * MR * width..][..rows * width];
                    for q0 in (s0..(s0 + part).min(b1)).step_by(nr) {
                        tile(rows, l.vectors, w, xi, l.plane, &l.taps, q0, &mut acc);
                        l.keep_from(&acc[..rows], q0, dst, p0, width);
                    }
                }
            }
            for (c, row) in buf.chunks_mut(width.max(1)).enumerate().take(self.co) {
                each((item * self.co + c) * positions + p0, row);
            }
            Ok((item, p0, buf))
        })?;
        let mut out = crate::kernel::try_zeroed::<f32>(n * self.co * positions)?;
        for (item, p0, buf) in parts {
            let width = buf.len() / self.co.max(1);
            for (c, row) in buf.chunks(width.max(1)).enumerate().take(self.co) {
                let at = (item * self.co + c) * positions + p0;
                out[at..at + width].copy_from_slice(row);
            }
        }
        Ok(out)
    }
}

/// Output planes up to this many positions are small for [`DirectFilters::runs`].
const SMALL_PLANE: usize = 32 * 32;

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

    /// Flat positions per block (whole tiles, at least one) whose padded input, `ci`
    /// channels of every phase a tap reads, fits in `l2_bytes`.
    fn positions_in_l2(&self, ci: usize, l2_bytes: usize) -> usize {
        let reach = self
            .taps
            .iter()
            .map(|t| t % self.phase_len)
            .max()
            .unwrap_or(0);
        let phases = self
            .taps
            .iter()
            .map(|t| t / self.phase_len)
            .max()
            .unwrap_or(0)
            + 1;
        (l2_bytes / 4 / (ci * phases).max(1))
            .saturating_sub(reach)
            .max(self.nr())
            .next_multiple_of(self.nr())
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
        self.keep_from(acc, q0, dst, 0, self.out[0] * self.out[1]);
    }

    /// [`Self::keep`] into `dst` holding the output positions from `first` of each channel,
    /// `stride` apart.
    fn keep_from(
        &self,
        acc: &[[f32; NR]],
        q0: usize,
        dst: &mut [f32],
        first: usize,
        stride: usize,
    ) {
        let [_, ow] = self.out;
        let end = (q0 + self.nr()).min(self.flat());
        let mut q = q0;
        while q < end {
            let (oy, ox) = (q / self.wp, q % self.wp);
            let run = (self.wp - ox).min(end - q);
            let keep = run.min(ow.saturating_sub(ox));
            if keep == 0 {
                // Only positions past the row's outputs: nothing of them is kept.
                q += run;
                continue;
            }
            // One short run per channel (a row of the tile), with no `memcpy` call each.
            crate::rows::copy_rows(
                (&acc.as_flattened()[q - q0..], NR),
                (&mut dst[oy * ow + ox - first..], stride),
                acc.len(),
                keep,
            );
            q += run;
        }
    }
}

/// Appends phase `[a, b]` of input plane `x [ih, iw]` padded by `s.pad` (its rows `a, a +
/// sy, ...` and columns `b, b + sx, ...`, `[hp, wp]` of them, zeros outside the input), then
/// zeros up to `len` values, to `fill`.
fn pad_phase(
    x: &[f32],
    s: &Shape2,
    [a, b]: [usize; 2],
    [hp, wp]: [usize; 2],
    len: usize,
    fill: &mut Filler<f32>,
) {
    let [ih, iw] = s.input;
    let [pt, pl] = s.pad;
    let [sy, sx] = s.stride;
    // Phase columns `lo..hi` read input columns `first, first + sx, ...`; the others are
    // padding. The same for every row, so worked out once: per row it cost more than the
    // copy of a small plane's 16 values (a third of a 16x16 stride-2 convolution's time).
    let start = b as isize - pl as isize;
    let (lo, hi) = inside_run(start, sx, iw, wp);
    let first = (start + (lo * sx) as isize).max(0) as usize;
    for i in 0..hp {
        match (i * sy + a).checked_sub(pt).filter(|&y| y < ih) {
            Some(y) => {
                fill.repeat(0.0, lo);
                fill.extend_strided(&x[y * iw..][..iw][first.min(iw)..], sx, hi - lo);
                fill.repeat(0.0, wp - hi);
            }
            None => fill.repeat(0.0, wp),
        }
    }
    fill.repeat(0.0, len - hp * wp);
}

mod lanes;
#[cfg(test)]
mod tests;
mod tiles;
mod winograd;
