//! Pointwise convolutions (a 1x1 kernel at stride 1 without padding, one group) on AVX-512
//! and AVX2:
//! each output plane is a weighted sum of the input planes, `out[o][p] = sum over c of
//! w[o][c] * x[c][p]`. The input already is the right-hand matrix of that product, rows of
//! positions, so nothing is packed at run time: a tile of `MR` output channels by up to
//! three vectors of positions loads its vectors straight from the input rows and broadcasts
//! the filters, packed once as `[tile][ci][MR]`.
//!
//! Why not rten-gemm, which ran these before: it packs the input for every call on one
//! thread, and shares the work out by blocks of 64 output channels and by column blocks of at
//! least 128 positions, so MobileNetV3's 7x7 and 14x14 layers (49 and 196 positions, 96 to
//! 576 channels) ran on one thread or split 2:1 (576 to 96 channels on 7x7: 58 us on two
//! threads, 55 us on one). Here the tasks take equal runs of (channel tile, position block)
//! units.
//!
//! Same bits as rten-gemm: it sums the inner dim in blocks of 256 (`DEPTH`), each a chain
//! of fused multiply-adds from 0 in order, and adds each block's chain to the output after
//! the first. So does this kernel, so that prepared and run-time convolutions agree bit for
//! bit (the tests compare them with the GEMM), whatever the thread count.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::op::{codes, OpError};
use crate::par;
use irun_opkit::epilogue::{Activation, Epilogue};

/// Output channels per tile: one broadcast filter value each.
const MR: usize = 8;
/// 16-lane vectors of positions per tile, at most (24 accumulators, three input vectors and
/// a broadcast: 28 of the 32 registers).
const MAX_V: usize = 3;
/// Planes of at least this many positions (rows 4 KiB apart or more) have each unit's
/// input block copied out before it is read.
const COPY_POSITIONS: usize = 1024;
/// rten-gemm's depth block for f32 (1 KiB of values): each block of the inner dim is summed
/// on its own and added to the output.
const DEPTH: usize = 256;

/// Filters `[co, ci]` packed as `[co / MR][ci][MR]` (the last tile's missing channels 0).
#[derive(Debug)]
pub struct PointwiseFilters {
    co: usize,
    ci: usize,
    packed: Vec<f32>,
}

impl PointwiseFilters {
    /// The filters `w` (`[co, ci]` in row-major order) packed, where this CPU runs the kernel
    /// (AVX-512F, or AVX2 and FMA) and neither dim is 0.
    pub fn new(w: &[f32], co: usize, ci: usize) -> Option<PointwiseFilters> {
        if !Self::supported() || co == 0 || ci == 0 || w.len() != co.checked_mul(ci)? {
            return None;
        }
        let tiles = co.div_ceil(MR);
        let mut packed = vec![0f32; tiles * ci * MR];
        for (o, row) in w.chunks_exact(ci).enumerate() {
            let tile = &mut packed[(o / MR) * ci * MR..][..ci * MR];
            for (c, &v) in row.iter().enumerate() {
                tile[c * MR + o % MR] = v;
            }
        }
        Some(PointwiseFilters { co, ci, packed })
    }

    /// Whether this CPU runs the kernel: AVX-512F, or AVX2 and FMA.
    pub fn supported() -> bool {
        crate::avx512f() || crate::simd::unit() == crate::simd::Unit::Avx2
    }

    pub fn output_channels(&self) -> usize {
        self.co
    }

    pub fn input_channels(&self) -> usize {
        self.ci
    }

    /// Bytes held: the packed filters.
    pub fn byte_size(&self) -> usize {
        self.packed.len() * 4
    }

    /// `x [n, ci, positions]` into `[n, co, positions]`, with `epilogue` (a bias by output
    /// channel, an activation) applied to each tile in registers before it is stored: the
    /// same f32 add and activation as [`Epilogue::apply`], which cost a quarter of the
    /// kernel's time as a pass over each stored row.
    pub fn run(
        &self,
        x: &[f32],
        n: usize,
        positions: usize,
        epilogue: Option<&Epilogue>,
    ) -> Result<Vec<f32>, OpError> {
        let (co, ci) = (self.co, self.ci);
        let overflow = || OpError::new(codes::MEMORY, "a pointwise convolution overflows memory");
        let len = irun_tensor::element_count(&[n, co, positions]).ok_or_else(overflow)?;
        let in_len = irun_tensor::element_count(&[n, ci, positions]).ok_or_else(overflow)?;
        if x.len() != in_len {
            return Err(OpError::new(
                codes::INTERNAL,
                format!(
                    "a pointwise convolution of {} values, not {in_len}",
                    x.len()
                ),
            ));
        }
        let (bias, activation) = Epilogue::parts(epilogue);
        if bias.is_some_and(|b| b.len() != co) {
            return Err(OpError::new(
                codes::INTERNAL,
                format!(
                    "a bias of {} values for {co} channels",
                    bias.map_or(0, <[f32]>::len)
                ),
            ));
        }
        let mut out: Vec<f32> = crate::kernel::try_with_capacity(len)?;
        if len == 0 {
            return Ok(out);
        }
        let blocks = Blocks::new(positions);
        let tiles = co.div_ceil(MR);
        let units = n * tiles * blocks.count;
        // About PAR_MIN_ELEMENTS multiply-adds a task at least.
        let per_unit = (MR * 16 * MAX_V * ci).max(1);
        let grain = crate::kernel::PAR_MIN_ELEMENTS.div_ceil(per_unit).max(1);
        let dst = OutPtr(out.spare_capacity_mut().as_mut_ptr().cast::<f32>());
        let written = AtomicUsize::new(0);
        par::for_each_range(units, grain, &|range| {
            let mut count = 0;
            // The unit's input block `[ci, p1 - p0]`, copied once for the channel tiles that
            // share it where rows lie 4 KiB apart or more: read in place, the rows of a
            // 160x160 plane (100 KiB apart, a multiple of 4 KiB) all fell in one L1 set and
            // missed on every load. Shorter rows are read where they lie (the copy and its
            // growth were a sixth of MobileNetV3's 1x1 layers on 7x7 to 28x28 planes).
            let copy = positions >= COPY_POSITIONS;
            let mut block_x: Vec<f32> = Vec::with_capacity(if copy { ci * 16 * MAX_V } else { 0 });
            let mut held = None;
            for u in range {
                let (item, rest) = (u / (tiles * blocks.count), u % (tiles * blocks.count));
                let (block, tile) = (rest / tiles, rest % tiles);
                let (p0, p1) = blocks.range(block);
                let rows = MR.min(co - tile * MR);
                let xi = &x[item * ci * positions..][..ci * positions];
                if copy && held != Some((item, block)) {
                    block_x.clear();
                    for row in xi.chunks_exact(positions) {
                        block_x.extend_from_slice(&row[p0..p1]);
                    }
                    held = Some((item, block));
                }
                let w = &self.packed[tile * ci * MR..][..ci * MR];
                let first = (item * co + tile * MR) * positions;
                let store = Store {
                    out: dst.ptr(),
                    at: first + p0,
                    stride: positions,
                    rows,
                    bias: tile_biases(bias, tile, rows),
                    activation,
                };
                // SAFETY: the unit's rectangle, rows `first / positions ..+ rows` by columns
                // `p0..p1`, lies inside the output's `len` slots (`tile * MR + rows <= co`,
                // `p1 <= positions`), and no two units share a cell: each (item, tile, block)
                // is one unit, and the blocks of a row are disjoint ranges. So no slot is
                // written twice or by two tasks at once.
                unsafe {
                    if copy {
                        tile_into(w, ci, &block_x, p1 - p0, (0, p1 - p0), &store);
                    } else {
                        tile_into(w, ci, xi, positions, (p0, p1), &store);
                    }
                }
                count += rows * (p1 - p0);
            }
            written.fetch_add(count, Ordering::Relaxed);
        });
        if written.into_inner() != len {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: a pointwise convolution left part of its output unwritten",
            ));
        }
        // SAFETY: every unit wrote its rectangle in full (`tile_into` stores every value of
        // each row slice), the rectangles tile the `len` slots without overlap (above), and
        // their sizes add up to `len` (checked). `f32: Copy`.
        unsafe { out.set_len(len) };
        Ok(out)
    }

    /// `out [co, cols] = filters [co, ci] x x [ci, cols]` (row-major; `x`'s rows `stride`
    /// values apart) on this thread, with `epilogue` applied as [`Self::run`] applies it, its
    /// bias taken from `channel0` on (the group's first output channel): the sums and bits
    /// of [`Self::run`] over the same columns. The convolution by blocks of patches runs its
    /// patch blocks through it.
    ///
    /// Panics when the lengths do not fit (a caller's bug).
    pub(crate) fn product(
        &self,
        (x, stride): (&[f32], usize),
        cols: usize,
        out: &mut [f32],
        (epilogue, channel0): (Option<&Epilogue>, usize),
    ) {
        let (co, ci) = (self.co, self.ci);
        let (bias, activation) = Epilogue::parts(epilogue);
        assert!(
            cols <= stride
                && x.len() == ci * stride
                && out.len() == co * cols
                && bias.is_none_or(|b| b.len() >= channel0 + co),
            "pointwise product out of bounds"
        );
        let bias = bias.map(|b| &b[channel0..][..co]);
        let blocks = Blocks::new(cols);
        for tile in 0..co.div_ceil(MR) {
            let rows = MR.min(co - tile * MR);
            let w = &self.packed[tile * ci * MR..][..ci * MR];
            for block in 0..blocks.count {
                let (p0, p1) = blocks.range(block);
                let store = Store {
                    out: out.as_mut_ptr(),
                    at: tile * MR * cols + p0,
                    stride: cols,
                    rows,
                    bias: tile_biases(bias, tile, rows),
                    activation,
                };
                // SAFETY: rows `tile * MR ..+ rows` (`<= co`) by columns `p0..p1`
                // (`<= cols`) lie inside `out` (`co * cols` values, checked), which this
                // call borrows mutably for its length.
                unsafe { tile_into(w, ci, x, stride, (p0, p1), &store) };
            }
        }
    }
}

/// The biases of channel tile `tile`'s `rows` channels (the rest 0), where there is a bias.
fn tile_biases(bias: Option<&[f32]>, tile: usize, rows: usize) -> Option<[f32; MR]> {
    bias.map(|b| {
        let mut biases = [0f32; MR];
        biases[..rows].copy_from_slice(&b[tile * MR..][..rows]);
        biases
    })
}

/// The output's first slot, shared by the tasks, each of which writes only its own units.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);

// SAFETY: the pointer is only written through by `tile_into`, whose callers hand each task
// disjoint rectangles of one live allocation.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The pointer (a method, so that closures capture the `Sync` wrapper, not its field).
    fn ptr(self) -> *mut f32 {
        self.0
    }
}

/// Positions cut into blocks of one to three vectors, their vector counts differing by at
/// most one (196 positions, 13 vectors: 3, 3, 3, 2, 2), so that no block is a lone vector
/// when it can be helped (a lone vector is 8 chains, too few to hide the FMA latency).
struct Blocks {
    positions: usize,
    vectors: usize,
    count: usize,
}

impl Blocks {
    fn new(positions: usize) -> Blocks {
        let vectors = positions.div_ceil(16);
        Blocks {
            positions,
            vectors,
            count: vectors.div_ceil(MAX_V),
        }
    }

    /// The positions of block `b`.
    fn range(&self, b: usize) -> (usize, usize) {
        let v0 = b * self.vectors / self.count;
        let v1 = (b + 1) * self.vectors / self.count;
        (16 * v0, (16 * v1).min(self.positions))
    }
}

/// Where a tile's sums go: `rows` rows of the output from flat index `at` (the tile's first
/// position in its first row), `stride` apart,
/// each value plus its row's bias (when there is one) through the activation.
pub(crate) struct Store {
    out: *mut f32,
    at: usize,
    stride: usize,
    rows: usize,
    bias: Option<[f32; MR]>,
    activation: Activation,
}

/// `store.rows` output channels of one tile by positions `p0..p1` (at most three vectors):
/// output `store.at + r * store.stride + j - p0` (`store.at` is row 0's `p0`) = the product for channel row `r` and
/// position `j`, summed in depth blocks as rten-gemm sums them, then the epilogue.
///
/// # Safety
/// The output must be writable at `store.at + r * store.stride + j` for `r < store.rows`,
/// `j < p1 - p0`, and no other thread may touch those slots meanwhile.
unsafe fn tile_into(
    w: &[f32],
    ci: usize,
    x: &[f32],
    positions: usize,
    (p0, p1): (usize, usize),
    store: &Store,
) {
    let cols = p1 - p0;
    assert!(
        (1..=16 * MAX_V).contains(&cols)
            && p1 <= positions
            && w.len() == ci * MR
            && x.len() == ci * positions
            && store.rows <= MR,
        "pointwise tile out of bounds"
    );
    for d0 in (0..ci).step_by(DEPTH) {
        let depth = DEPTH.min(ci - d0);
        let pass = Pass {
            first: d0 == 0,
            last: d0 + depth == ci,
        };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `PointwiseFilters::new` exists only where AVX-512F, or AVX2 and FMA,
        // hold, and each kernel runs only where its own features do. The kernel reads
        // `w[(d0 + c) * MR + r]` for c < depth, r < MR (within `w`: d0 + depth <= ci), and
        // `x[(d0 + c) * positions + p0 + j]` for j < cols by masked loads (lanes past
        // `cols` are not read: p0 + cols = p1 <= positions); it writes (and after the first
        // depth block reads) the output where the caller allows.
        unsafe {
            let (wp, xp) = (w.as_ptr().add(d0 * MR), x.as_ptr().add(d0 * positions + p0));
            match cols.div_ceil(16) {
                _ if !crate::avx512f() => avx2::tile(wp, xp, positions, depth, cols, store, pass),
                1 => avx512::tile::<1>(wp, xp, positions, depth, cols, store, pass),
                2 => avx512::tile::<2>(wp, xp, positions, depth, cols, store, pass),
                _ => avx512::tile::<3>(wp, xp, positions, depth, cols, store, pass),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("PointwiseFilters::new returns None off x86_64");
    }
}

/// Which depth block a kernel call sums: the first stores its sums, later ones add theirs
/// to the output, and the last applies the epilogue.
#[derive(Clone, Copy)]
struct Pass {
    first: bool,
    last: bool,
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// The sum over `c < depth` in order, by fused multiply-adds from 0, of `w[c * 8 + r] *
    /// x[c * stride + j]`, for `r < store.rows` and `j < cols`: stored to the output row `r`
    /// (`store.at + r * store.stride`) at `j` on the first pass, else added to it; on the
    /// last pass plus the row's bias, through the activation.
    ///
    /// # Safety
    /// AVX-512F must be available; `w` readable at `0 .. depth * 8`, `x` at `c * stride + j`
    /// for `c < depth`, `j < cols`; the output writable (and readable after the first pass)
    /// at row `r < store.rows`, `j < cols`; `cols` in `16 * (V - 1) + 1 ..= 16 * V`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile<const V: usize>(
        w: *const f32,
        x: *const f32,
        stride: usize,
        depth: usize,
        cols: usize,
        store: &super::Store,
        pass: super::Pass,
    ) {
        // Every vector but the last is whole; the last loads and stores only its lanes.
        let tail = cols - 16 * (V - 1);
        let last: __mmask16 = if tail >= 16 { 0xffff } else { (1 << tail) - 1 };
        let mask = |v: usize| if v + 1 == V { last } else { 0xffff };
        let mut sums = [[_mm512_setzero_ps(); V]; super::MR];
        for c in 0..depth {
            let row = x.add(c * stride);
            let mut xs = [_mm512_setzero_ps(); V];
            for (v, xv) in xs.iter_mut().enumerate() {
                *xv = _mm512_maskz_loadu_ps(mask(v), row.add(16 * v));
            }
            let wc = w.add(c * super::MR);
            for (r, s) in sums.iter_mut().enumerate() {
                let f = _mm512_set1_ps(*wc.add(r));
                for (v, s) in s.iter_mut().enumerate() {
                    *s = _mm512_fmadd_ps(f, xs[v], *s);
                }
            }
        }
        for (r, s) in sums.iter().enumerate().take(store.rows) {
            let o = store.out.add(store.at + r * store.stride);
            for (v, s) in s.iter().enumerate() {
                let at = o.add(16 * v);
                let mut s = if pass.first {
                    *s
                } else {
                    _mm512_add_ps(_mm512_maskz_loadu_ps(mask(v), at), *s)
                };
                if pass.last {
                    if let Some(b) = &store.bias {
                        s = _mm512_add_ps(s, _mm512_set1_ps(b[r]));
                    }
                    s = crate::lanes_epilogue::activate(store.activation, s);
                }
                _mm512_mask_storeu_ps(at, mask(v), s);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Channels of a register block: 4 channels by 16 positions are 8 accumulators (12, as
    /// in the direct convolution's tiles, spill to the stack).
    const ROWS: usize = 4;

    /// [`super::avx512::tile`] on AVX2: the same sums in the same order, by blocks of
    /// [`ROWS`] channels and 16 positions.
    ///
    /// # Safety
    /// AVX2 and FMA must be available; the bounds are those of [`super::avx512::tile`], with
    /// `cols` in `1..=48`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile(
        w: *const f32,
        x: *const f32,
        stride: usize,
        depth: usize,
        cols: usize,
        store: &super::Store,
        pass: super::Pass,
    ) {
        for r0 in (0..store.rows).step_by(ROWS) {
            for j0 in (0..cols).step_by(16) {
                let part = Part {
                    r0,
                    j0,
                    n: 16.min(cols - j0),
                };
                let (w, x) = (w.add(r0), x.add(j0));
                match (ROWS.min(store.rows - r0), part.n == 16) {
                    (4, true) => block::<4, true>(w, x, stride, depth, part, store, pass),
                    (4, false) => block::<4, false>(w, x, stride, depth, part, store, pass),
                    (3, true) => block::<3, true>(w, x, stride, depth, part, store, pass),
                    (3, false) => block::<3, false>(w, x, stride, depth, part, store, pass),
                    (2, true) => block::<2, true>(w, x, stride, depth, part, store, pass),
                    (2, false) => block::<2, false>(w, x, stride, depth, part, store, pass),
                    (_, true) => block::<1, true>(w, x, stride, depth, part, store, pass),
                    (_, false) => block::<1, false>(w, x, stride, depth, part, store, pass),
                }
            }
        }
    }

    /// Where a block lies in its tile: channels from `r0`, `n` positions from `j0`.
    #[derive(Clone, Copy)]
    struct Part {
        r0: usize,
        j0: usize,
        n: usize,
    }

    /// Lane `i` of the mask is set where `i < n` (`n` may be past 8 or below 0).
    #[inline(always)]
    unsafe fn lanes_below(n: isize) -> __m256i {
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n.clamp(0, 8) as i32), lanes)
    }

    /// Vector `v` of 8 values from `p`: whole when `FULL`, else the lanes `masks[v]` sets.
    #[inline(always)]
    unsafe fn load<const FULL: bool>(p: *const f32, masks: &[__m256i; 2], v: usize) -> __m256 {
        if FULL {
            _mm256_loadu_ps(p.add(8 * v))
        } else {
            _mm256_maskload_ps(p.add(8 * v), masks[v])
        }
    }

    /// Channels `part.r0 ..+ R` (filters from `w`, `MR` apart per input channel) by positions
    /// `part.j0 ..+ part.n` (inputs from `x`, rows `stride` apart): one fused multiply-add
    /// chain per output over the depth, stored, added or finished as `pass` says. `FULL`:
    /// `part.n == 16`; otherwise the loads are masked, and the stores go through a buffer
    /// (AVX2's masked stores are microcoded on AMD).
    ///
    /// # Safety
    /// As [`tile`], for this block.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn block<const R: usize, const FULL: bool>(
        w: *const f32,
        x: *const f32,
        stride: usize,
        depth: usize,
        part: Part,
        store: &super::Store,
        pass: super::Pass,
    ) {
        let masks = [
            lanes_below(part.n as isize),
            lanes_below(part.n as isize - 8),
        ];
        let mut sums = [[_mm256_setzero_ps(); 2]; R];
        for c in 0..depth {
            let row = x.add(c * stride);
            let xs = [load::<FULL>(row, &masks, 0), load::<FULL>(row, &masks, 1)];
            let wc = w.add(c * super::MR);
            for (r, s) in sums.iter_mut().enumerate() {
                let f = _mm256_broadcast_ss(&*wc.add(r));
                s[0] = _mm256_fmadd_ps(f, xs[0], s[0]);
                s[1] = _mm256_fmadd_ps(f, xs[1], s[1]);
            }
        }
        for (r, s) in sums.iter().enumerate() {
            let row = part.r0 + r;
            let o = store.out.add(store.at + row * store.stride + part.j0);
            for (v, &s) in s.iter().enumerate() {
                let lanes = part.n.saturating_sub(8 * v).min(8);
                if lanes == 0 {
                    break;
                }
                let at = o.add(8 * v);
                let mut s = if pass.first {
                    s
                } else {
                    _mm256_add_ps(load::<FULL>(o, &masks, v), s)
                };
                if pass.last {
                    if let Some(b) = &store.bias {
                        s = _mm256_add_ps(s, _mm256_set1_ps(b[row]));
                    }
                    s = crate::lanes_epilogue::activate8(store.activation, s);
                }
                if lanes == 8 {
                    _mm256_storeu_ps(at, s);
                } else {
                    let mut buf = [0f32; 8];
                    _mm256_storeu_ps(buf.as_mut_ptr(), s);
                    std::ptr::copy_nonoverlapping(buf.as_ptr(), at, lanes);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spatial::{AutoPad, Rounding, Spatial};
    use crate::testing::on_threads;
    use irun_tensor::Tensor;

    /// rten-gemm's sums, written out: per output, a chain of fused multiply-adds from 0 over
    /// each block of 256 input channels, the blocks' chains added in order.
    fn reference(w: &[f32], x: &[f32], n: usize, co: usize, ci: usize, p: usize) -> Vec<f32> {
        let mut out = vec![0f32; n * co * p];
        for i in 0..n {
            for o in 0..co {
                for j in 0..p {
                    let mut total = 0f32;
                    for d0 in (0..ci).step_by(DEPTH) {
                        let mut chain = 0f32;
                        for c in d0..(d0 + DEPTH).min(ci) {
                            chain = w[o * ci + c].mul_add(x[(i * ci + c) * p + j], chain);
                        }
                        total = if d0 == 0 { chain } else { total + chain };
                    }
                    out[(i * co + o) * p + j] = total;
                }
            }
        }
        out
    }

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0) * 1.7)
            .collect()
    }

    /// The kernel this machine runs for 1x1 convolutions: these filters where AVX-512 or
    /// AVX2 is found, else the GEMM over the input planes, which the tests check instead of
    /// skipping.
    fn machine_path() -> &'static str {
        if crate::avx512f() {
            "pointwise filters (AVX-512)"
        } else if PointwiseFilters::supported() {
            "pointwise filters (AVX2)"
        } else {
            "GEMM over the input planes (no AVX-512)"
        }
    }

    /// Two spatial dims, stride 1, no padding.
    fn unit_spatial() -> Spatial {
        Spatial {
            strides: vec![1, 1],
            pads_begin: vec![0, 0],
            pads_end: vec![0, 0],
            dilations: vec![1, 1],
            auto_pad: AutoPad::Explicit,
            rounding: Rounding::Floor,
        }
    }

    /// The 1x1 convolution of `x` `[n, ci, p]` (as `[n, ci, 1, p]`) as the Convolution op
    /// runs it on this machine from filters it did not prepare, on `threads` threads, with
    /// `epilogue` applied as the op applies it.
    fn through_the_op(
        (w, x): (&[f32], &[f32]),
        (n, co, ci, p): (usize, usize, usize, usize),
        threads: usize,
        epilogue: Option<&Epilogue>,
    ) -> Vec<f32> {
        let sp = unit_spatial();
        let data = std::sync::Arc::new(Tensor::from_f32(vec![n, ci, 1, p], x.to_vec()).unwrap());
        let filters = Tensor::from_f32(vec![1, co, ci, 1, 1], w.to_vec()).unwrap();
        let out = on_threads(threads, || {
            crate::conv::grouped_with(
                &data,
                &filters,
                1,
                &sp,
                "Convolution-1",
                None,
                crate::conv::Finish::epilogue(epilogue),
            )
        })
        .unwrap();
        out.values::<f32>().unwrap().to_vec()
    }

    /// Partial channel tiles, position tails of every width, several depth blocks, batches,
    /// at 1, 2 and 3 threads: the reference's bits every time.
    #[test]
    fn sums_as_rten_gemm_does_at_any_thread_count() {
        eprintln!("1x1 convolution path: {}", machine_path());
        let cases = [
            (1, 8, 16, 48),
            (1, 3, 5, 1),
            (2, 13, 7, 17),
            (1, 24, 40, 49),
            (1, 16, 300, 196),
            (3, 9, 600, 33),
            (1, 72, 16, 3136),
            // Input blocks copied out (rows of 1024 or more), two items.
            (2, 10, 12, 1100),
        ];
        for (n, co, ci, p) in cases {
            let (w, x) = (values(co * ci, 1), values(n * ci * p, 2));
            let want = reference(&w, &x, n, co, ci, p);
            let f = PointwiseFilters::new(&w, co, ci);
            assert_eq!(f.is_some(), PointwiseFilters::supported());
            for threads in [1, 2, 3] {
                let got = match &f {
                    Some(f) => on_threads(threads, || f.run(&x, n, p, None).unwrap()),
                    None => through_the_op((&w, &x), (n, co, ci, p), threads, None),
                };
                let bad = got
                    .iter()
                    .zip(&want)
                    .position(|(a, b)| a.to_bits() != b.to_bits());
                assert!(
                    bad.is_none() && got.len() == want.len(),
                    "{n}x{co}x{ci}x{p} at {threads}: {bad:?} {:?}",
                    bad.map(|i| (got[i], want[i]))
                );
            }
        }
    }

    /// The reference is rten-gemm's order: the matrix product that ran these convolutions
    /// before (and runs them off AVX-512) gives the same bits, over several depth blocks.
    #[test]
    fn the_reference_is_the_gemm_s_order() {
        use crate::gemm::Mul;
        for (co, ci, p) in [(24, 40, 49), (16, 600, 33), (7, 257, 70)] {
            let (w, x) = (values(co * ci, 6), values(ci * p, 7));
            let mut gemm = vec![0f32; co * p];
            f32::gemm(
                co,
                ci,
                p,
                &w,
                (ci as isize, 1),
                &x,
                (p as isize, 1),
                &mut gemm,
            );
            let want = reference(&w, &x, 1, co, ci, p);
            crate::testing::assert_same_bits(&gemm, &want, format!("{co} x {ci} x {p}"));
        }
    }

    /// The epilogue in registers gives what `Epilogue::apply_at` gives on the stored sums,
    /// with NaN, -0, infinities and values around HSwish's bends among them.
    #[test]
    fn applies_the_epilogue_as_the_ops_do() {
        eprintln!("1x1 convolution path: {}", machine_path());
        let (co, ci, p) = (11, 3, 37);
        let mut x = values(ci * p, 3);
        let specials = [
            f32::NAN,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -3.0,
            3.0,
            -2.5,
        ];
        for (i, s) in specials.iter().enumerate() {
            x[i * 5] = *s;
        }
        // An identity filter in channel 0 passes the specials through unchanged.
        let mut w = values(co * ci, 4);
        w[..ci]
            .iter_mut()
            .enumerate()
            .for_each(|(c, v)| *v = (c == 0) as u8 as f32);
        let f = PointwiseFilters::new(&w, co, ci);
        let run = |e: Option<&Epilogue>| match &f {
            Some(f) => f.run(&x, 1, p, e).unwrap(),
            None => through_the_op((&w, &x), (1, co, ci, p), 2, e),
        };
        let plain = run(None);
        for activation in [Activation::None, Activation::Relu, Activation::HSwish] {
            for bias in [None, Some(values(co, 5))] {
                let e = Epilogue {
                    bias,
                    bias_axis_from_end: 2,
                    activation,
                };
                let mut want = plain.clone();
                let layout = irun_opkit::epilogue::Channels::Planes {
                    channels: co,
                    plane: p,
                };
                e.apply_at(&mut want, 0, layout);
                let got = run(Some(&e));
                crate::testing::assert_same_bits(&got, &want, format!("{e:?}"));
            }
        }
    }

    /// Input of the wrong length, and sizes that overflow, are errors, not reads past the end.
    #[test]
    fn rejects_an_input_of_the_wrong_size() {
        if !PointwiseFilters::supported() {
            // Never built here, so never run: the op takes the GEMM, whose shapes
            // `grouped_with` checks.
            assert!(PointwiseFilters::new(&values(8, 1), 2, 4).is_none());
            let data =
                std::sync::Arc::new(Tensor::from_f32(vec![1, 3, 1, 9], values(27, 2)).unwrap());
            let filters = Tensor::from_f32(vec![1, 2, 4, 1, 1], values(8, 1)).unwrap();
            let sp = unit_spatial();
            let out = crate::conv::grouped_with(
                &data,
                &filters,
                1,
                &sp,
                "Convolution-1",
                None,
                Default::default(),
            );
            assert!(out.is_err(), "3 input channels for filters of 4");
            return;
        }
        let f = PointwiseFilters::new(&values(8, 1), 2, 4).unwrap();
        assert!(f.run(&values(4 * 9, 2), 1, 10, None).is_err());
        assert!(f.run(&[], usize::MAX, usize::MAX, None).is_err());
        assert!(PointwiseFilters::new(&values(7, 1), 2, 4).is_none());
    }
}
