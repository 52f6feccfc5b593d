//! A levels output finished as the kernel leaves each block: every op the convolution took
//! over and the level of the result, in one pass over a run of one channel's sums while
//! they are in L1. Done as separate passes over a block's planes (the epilogue, the
//! FakeQuantize, the residual and the levels), with the sums first moved from the block's
//! rows into planes, these were a sixth of ResNet-18's time at two threads.
//!
//! The vector pass computes each op as the scalar one does ([`Int8Conv::finish`], then
//! [`FakeQuantizeRange::levels_into`]), one f32 operation for each of theirs and in the same
//! order, so the levels are the same bits (the tests compare them).

use irun_opkit::epilogue::{Activation, Addend};
use irun_opkit::quantize::FakeQuantizeRange;

use super::channel_lanes::{CHANNELS, MAX_POSITIONS};
use super::Int8Conv;

/// How one convolution's levels output is finished.
pub(super) struct LevelsFinish<'a> {
    conv: &'a Int8Conv,
    /// The range whose levels are written.
    q: &'a FakeQuantizeRange,
    plane: usize,
    vectorised: bool,
}

/// A run of consecutive outputs in a block's rows: the row's values `row..row + len` are the
/// plane's outputs `at..at + len`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Run {
    pub row: usize,
    pub at: usize,
    pub len: usize,
}

impl<'a> LevelsFinish<'a> {
    /// For `conv`'s output planes of `plane` values, written as the levels of `q`;
    /// `vectorised` only where AVX-512 F, BW and VL are available.
    pub fn new(
        conv: &'a Int8Conv,
        q: &'a FakeQuantizeRange,
        plane: usize,
        vectorised: bool,
    ) -> Self {
        LevelsFinish {
            conv,
            q,
            plane: plane.max(1),
            vectorised,
        }
    }

    /// The finishing of the blocks of channels `first..first + lanes` (at most
    /// [`MAX_LANES`]): their ops looked up once for all their blocks.
    pub fn channels(&self, first: usize, lanes: usize) -> ChannelsFinish<'_> {
        debug_assert!(lanes <= MAX_LANES);
        let conv = self.conv;
        let (bias, activation) = match &conv.epilogue {
            Some(e) => (e.bias.as_deref(), e.activation),
            None => (None, Activation::None),
        };
        let residual = conv.residual.as_ref().map(|r| r.relu);
        // A ReLU whose output goes straight to levels that are 0 for every value at or below
        // 0 (an input range from 0 or above) changes no level: the level does its work.
        let levels_clamp_at_zero = self.q.input_low >= 0.0;
        // Without a residual the last FakeQuantize is the levels' own.
        #[cfg(target_arch = "x86_64")]
        let quantize = match residual {
            Some(_) => &conv.quantize[..],
            None => &[],
        };
        let lanes = lanes.min(MAX_LANES);
        let channel = |lane: usize| first + lane;
        ChannelsFinish {
            finish: self,
            first,
            lanes,
            bias: bias.map(|b| std::array::from_fn(|l| b[channel(l) % b.len()])),
            activation_before_levels: match activation {
                Activation::Relu if residual.is_none() && levels_clamp_at_zero => Activation::None,
                other => other,
            },
            #[cfg(target_arch = "x86_64")]
            quantize_lanes: (!quantize.is_empty()).then(|| {
                let ranges = std::array::from_fn(|l| quantize[channel(l) % quantize.len()]);
                vector::RangeLanes::new(&ranges, conv.quantize_by_reciprocal)
            }),
            residual: residual.map(|relu| relu && !levels_clamp_at_zero),
            addend_levels: conv.addend_range,
        }
    }
}

/// Channels per block, at most (the channel lanes' 32).
pub(super) const MAX_LANES: usize = CHANNELS;

/// The ops of a task's channels, in order: the bias, the activation, and with a residual
/// (its ReLU the flag) the FakeQuantize before it; then the level of the output range. One
/// value of each per lane.
pub(super) struct ChannelsFinish<'a> {
    finish: &'a LevelsFinish<'a>,
    first: usize,
    lanes: usize,
    bias: Option<[f32; MAX_LANES]>,
    /// The activation, or none for a ReLU that changes no level.
    activation_before_levels: Activation,
    /// With a residual, the FakeQuantize before it: its ranges as arrays of their values,
    /// lane by lane.
    #[cfg(target_arch = "x86_64")]
    quantize_lanes: Option<vector::RangeLanes>,
    /// With a residual, whether a ReLU follows the Add (and changes levels).
    residual: Option<bool>,
    /// The range whose levels a residual addend comes as, where its values may be computed
    /// by the reciprocal rather than looked up.
    addend_levels: Option<FakeQuantizeRange>,
}

impl ChannelsFinish<'_> {
    /// Finishes a block of sums into their levels: `rows[lane]` holds sums of channel
    /// `first + lane`, and each of `runs` (the same in every row) says which are outputs
    /// and where they go. `out` and `addend` (the residual's other input) are the planes of
    /// the channels from `first`, a run's outputs at `lane * plane + run.at`. Whether an
    /// output was NaN (its byte is then 0). The rows are overwritten.
    pub fn block<const W: usize>(
        &self,
        rows: &mut [[f32; W]],
        runs: &[Run],
        addend: Option<Addend>,
        out: &mut [u8],
    ) -> bool {
        let plane = self.finish.plane;
        let rows = &mut rows[..self.lanes];
        // What the vector pass's unchecked loads and stores rely on, checked once a block.
        let planes = rows.len() * plane;
        let addend_len = addend.map_or(planes, |a| match a {
            Addend::Values(v) => v.len(),
            Addend::Levels(k, _) => k.len(),
        });
        assert!(
            out.len() >= planes
                && addend_len >= planes
                && runs
                    .iter()
                    .all(|r| r.row + r.len <= W && r.at + r.len <= plane),
            "int8 Convolution: a block's runs, output and addend must cover its planes"
        );
        #[cfg(target_arch = "x86_64")]
        if self.finish.vectorised {
            // SAFETY: `vectorised` is set only where AVX-512 F, BW and VL are available
            // (`run` checks `avx512::available()`). The assert above: every run lies in its
            // row and in its plane, and `out` and the addend hold the planes of all the rows'
            // channels.
            return unsafe { vector::block(self, rows, runs, plane, addend, out) };
        }
        let mut nan = false;
        for (lane, row) in rows.iter_mut().enumerate() {
            for run in runs {
                let at = lane * plane + run.at;
                let sums = &mut row[run.row..run.row + run.len];
                let addend = addend.map(|a| a.range(at, run.len));
                let finish = self.finish;
                finish
                    .conv
                    .finish(sums, self.first + lane, plane, addend, true);
                nan |= finish.q.levels_into(sums, &mut out[at..at + run.len]);
            }
        }
        nan
    }

    /// [`Self::block`] for a channel-lane block of 32 channels: `tile[j][lane]` the sums of
    /// channel `first + lane` at position `at + j` of its plane, for `j < real`.
    pub fn tile(
        &self,
        tile: &[[f32; CHANNELS]; MAX_POSITIONS],
        real: usize,
        at: usize,
        addend: Option<Addend>,
        out: &mut [u8],
    ) -> bool {
        let plane = self.finish.plane;
        debug_assert!(real <= MAX_POSITIONS && at + real <= plane);
        debug_assert!(CHANNELS * plane <= out.len());
        #[cfg(target_arch = "x86_64")]
        if self.finish.vectorised && self.lanes == CHANNELS {
            // SAFETY: as in `block`, with 32 lanes, `real <= MAX_POSITIONS` and the
            // positions `at..at + real` in the plane (asserted in debug builds; the callers'
            // blocks are of the plane's outputs).
            return unsafe { vector::tile(self, tile, real, at, plane, addend, out) };
        }
        let mut columns = [[0f32; MAX_POSITIONS]; CHANNELS];
        for (j, sums) in tile[..real].iter().enumerate() {
            for (column, &y) in columns.iter_mut().zip(sums) {
                column[j] = y;
            }
        }
        let run = Run {
            row: 0,
            at,
            len: real,
        };
        self.block(&mut columns, &[run], addend, out)
    }
}

/// Whether `k * (1 / last)`, corrected once by its remainder (`e = k - q * last` in an FMA,
/// then `q + e * (1 / last)` in another), is `k / last` as the division rounds it for every
/// integer `k` from 0 to `last` (a whole number of levels, at most 255): checked here for
/// each, so that the vector pass may take the multiply where the check holds.
pub(super) fn exact_by_reciprocal(last: f32) -> bool {
    if !(1.0..=255.0).contains(&last) || last.fract() != 0.0 {
        return false;
    }
    let r = 1.0 / last;
    (0..=last as u32).all(|k| {
        let k = k as f32;
        let q = k * r;
        let e = (-q).mul_add(last, k);
        e.mul_add(r, q).to_bits() == (k / last).to_bits()
    })
}

#[cfg(target_arch = "x86_64")]
mod vector {
    use std::arch::x86_64::*;

    use super::super::avx512::LevelRange;
    use super::super::tile_bytes::{levels_to_planes, planes_to_levels};
    use super::*;

    /// [`LevelsFinish::block`] on AVX-512, 16 sums at a time, the last of a run masked. The
    /// channels of one run are finished one after the other, so that their chains overlap.
    ///
    /// # Safety
    /// AVX-512 F, BW and VL must be available; every run must lie in its row and its
    /// plane, and `out` and the addend must hold the `plane` outputs of every row's channel.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub(super) unsafe fn block<const W: usize>(
        chain: &ChannelsFinish,
        rows: &[[f32; W]],
        runs: &[Run],
        plane: usize,
        addend: Option<Addend>,
        out: &mut [u8],
    ) -> bool {
        let q = chain.finish.q;
        let levels = LevelRange::new(q.input_low, q.input_high, q.last_level);
        let values = chain.addend_levels.as_ref().map(|r| LevelValues::new(r));
        let mut nan: __mmask16 = 0;
        for run in runs {
            let mut i = 0;
            while i < run.len {
                // Lanes `i..min(i + 16, len)` of the run: the others neither load nor store.
                let left = run.len - i;
                let lanes: __mmask16 = if left >= 16 { !0 } else { (1 << left) - 1 };
                for (lane, row) in rows.iter().enumerate() {
                    let at = lane * plane + run.at + i;
                    let y = _mm512_maskz_loadu_ps(lanes, row.as_ptr().add(run.row + i));
                    let bias = chain.bias.as_ref().map(|b| _mm512_set1_ps(b[lane]));
                    let range = chain.quantize_lanes.as_ref().map(|r| r.splat(lane));
                    let other = || match addend {
                        Some(Addend::Values(v)) => _mm512_maskz_loadu_ps(lanes, v.as_ptr().add(at)),
                        Some(Addend::Levels(k, table)) => {
                            let k = _mm_maskz_loadu_epi8(lanes, k.as_ptr().add(at).cast());
                            match &values {
                                Some(values) => values.of(k),
                                // Each index is a byte, below the table's 256 entries.
                                None => _mm512_i32gather_ps::<4>(
                                    _mm512_cvtepu8_epi32(k),
                                    table.as_ptr(),
                                ),
                            }
                        }
                        None => _mm512_setzero_ps(),
                    };
                    let (k, unordered) = finish(chain, &levels, y, bias, range, other);
                    nan |= unordered & lanes;
                    store_bytes(out.as_mut_ptr().add(at), lanes, _mm512_cvtepi32_epi8(k));
                }
                i += 16;
            }
        }
        nan != 0
    }

    /// A tile's residual addend as its finishing loop reads it: levels already moved into
    /// the tile's layout (`bytes[j][lane]`), with the table of their values. One lives on
    /// the stack for a tile; boxing its 512 bytes would allocate once a tile.
    #[allow(clippy::large_enum_variant)]
    enum TileAddend<'a> {
        None,
        Values(&'a [f32]),
        Levels([[u8; CHANNELS]; 16], &'a [f32; 256]),
    }

    /// [`ChannelsFinish::tile`] on AVX-512: each position's 32 channels in two vectors, so
    /// that every vector is whole, their levels then moved into the planes a byte at a time.
    ///
    /// # Safety
    /// AVX-512 F must be available; the chain must have 32 lanes; positions `at..at + real`
    /// must lie in the plane, `real <= MAX_POSITIONS`, and `out` and the addend must hold
    /// the `plane` outputs of each of the 32 channels.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(
        chain: &ChannelsFinish,
        tile: &[[f32; CHANNELS]; MAX_POSITIONS],
        real: usize,
        at: usize,
        plane: usize,
        addend: Option<Addend>,
        out: &mut [u8],
    ) -> bool {
        debug_assert!(chain.lanes == CHANNELS && real <= MAX_POSITIONS);
        let q = chain.finish.q;
        let levels = LevelRange::new(q.input_low, q.input_high, q.last_level);
        let values = chain.addend_levels.as_ref().map(|r| LevelValues::new(r));
        let addend = match addend {
            None => TileAddend::None,
            Some(Addend::Values(v)) => TileAddend::Values(v),
            // Moved into the tile's layout first: read from its 32 planes a byte at a time
            // inside the loop below, it was most of a residual tile's extra time.
            Some(Addend::Levels(k, table)) => {
                TileAddend::Levels(planes_to_levels(k, real, at, plane), table)
            }
        };
        // Rows past `real` stay 0: the transpose below reads all sixteen.
        let mut bytes = [[0u8; CHANNELS]; 16];
        let mut nan: __mmask16 = 0;
        // A half's channel constants (bias and range, up to ten vectors) loaded once for
        // all its positions: with both halves' live at each position they did not fit in
        // the registers, and their spills were reloaded at every position.
        for half in 0..2 {
            let lane0 = half * 16;
            let bias = chain
                .bias
                .as_ref()
                .map(|b| _mm512_loadu_ps(b.as_ptr().add(lane0)));
            let range = chain.quantize_lanes.as_ref().map(|r| r.load(lane0));
            for (j, sums) in tile[..real].iter().enumerate() {
                let y = _mm512_loadu_ps(sums.as_ptr().add(lane0));
                let other = || {
                    // The addend of each channel's plane at this position.
                    let of = |lane: usize| (lane0 + lane) * plane + at + j;
                    match &addend {
                        TileAddend::Values(v) => _mm512_loadu_ps(
                            std::array::from_fn::<f32, 16, _>(|l| v[of(l)]).as_ptr(),
                        ),
                        TileAddend::Levels(bytes, table) => {
                            let k = &bytes[j][lane0..lane0 + 16];
                            match &values {
                                Some(values) => values.of(_mm_loadu_si128(k.as_ptr().cast())),
                                None => _mm512_loadu_ps(
                                    std::array::from_fn::<f32, 16, _>(|l| table[usize::from(k[l])])
                                        .as_ptr(),
                                ),
                            }
                        }
                        TileAddend::None => _mm512_setzero_ps(),
                    }
                };
                let (k, unordered) = finish(chain, &levels, y, bias, range, other);
                nan |= unordered;
                _mm_storeu_si128(
                    bytes[j].as_mut_ptr().add(lane0).cast(),
                    _mm512_cvtepi32_epi8(k),
                );
            }
        }
        levels_to_planes(&bytes, real, at, plane, out);
        nan != 0
    }

    /// The ops on 16 sums `y` whose channels have `bias` and, with a residual, the
    /// FakeQuantize `range` and the addend `other()`: their levels, and the lanes that
    /// were NaN.
    #[inline(always)]
    unsafe fn finish(
        chain: &ChannelsFinish,
        levels: &LevelRange,
        mut y: __m512,
        bias: Option<__m512>,
        range: Option<Range>,
        other: impl FnOnce() -> __m512,
    ) -> (__m512i, __mmask16) {
        if let Some(b) = bias {
            y = _mm512_add_ps(y, b);
        }
        y = activate(chain.activation_before_levels, y);
        if let Some(relu) = chain.residual {
            if let Some(r) = &range {
                y = r.fake_quantize(y);
            }
            y = _mm512_add_ps(y, other());
            if relu {
                y = relu_of(y);
            }
        }
        levels.levels(y)
    }

    /// Stores the bytes of `lanes` (the first few, or all 16) at `to`. A whole vector is
    /// one plain store; a partial one goes through the stack, since the compiler would
    /// otherwise fuse the narrowing and the masked store into `vpmovdb` to memory, which
    /// Zen 4 runs as microcode (it was most of this pass's time).
    ///
    /// # Safety
    /// AVX-512 BW and VL must be available; `to` must be valid for the stores of `lanes`.
    #[inline(always)]
    unsafe fn store_bytes(to: *mut u8, lanes: __mmask16, bytes: __m128i) {
        if lanes == !0 {
            _mm_storeu_si128(to.cast(), bytes);
        } else {
            let bytes = std::hint::black_box(bytes);
            _mm_mask_storeu_epi8(to.cast(), lanes, bytes);
        }
    }

    /// ReLU-1 as [`Activation`]'s: a lane kept if above 0 or NaN, else +0.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn relu_of(y: __m512) -> __m512 {
        let kept = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(y, _mm512_setzero_ps());
        _mm512_maskz_mov_ps(kept, y)
    }

    /// The epilogue's activation, as [`Activation`] computes it.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn activate(activation: Activation, y: __m512) -> __m512 {
        match activation {
            Activation::None => y,
            Activation::Relu => relu_of(y),
            Activation::HSwish => {
                // `x * min(max(x + 3, 0), 6) / 6`, a NaN `x + 3` kept by both bounds.
                let t = _mm512_add_ps(y, _mm512_set1_ps(3.0));
                let t = _mm512_mask_mov_ps(
                    t,
                    _mm512_cmp_ps_mask::<_CMP_LT_OQ>(t, _mm512_setzero_ps()),
                    _mm512_setzero_ps(),
                );
                let six = _mm512_set1_ps(6.0);
                let t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask::<_CMP_GT_OQ>(t, six), six);
                _mm512_div_ps(_mm512_mul_ps(y, t), six)
            }
        }
    }

    /// A FakeQuantize-1 range per lane, as vectors.
    #[derive(Clone, Copy)]
    pub(super) struct Range {
        low: __m512,
        width: __m512,
        last: __m512,
        out_low: __m512,
        out_high: __m512,
        out_width: __m512,
        /// The lower and the higher of the input range's ends.
        below: __m512,
        above: __m512,
        /// `level / last`, exactly as the division rounds it.
        quotient: Quotient,
    }

    impl Range {
        /// FakeQuantize-1's f32 formula ([`irun_opkit::quantize::fake_quantize_f32`]) on
        /// 16 lanes: `output_low` at or below the input range, `output_high` above it,
        /// else `round_half_even((x - il) / (ih - il) * l) / l * (oh - ol) + ol`; NaN for
        /// NaN.
        #[inline(always)]
        unsafe fn fake_quantize(&self, x: __m512) -> __m512 {
            let t = _mm512_mul_ps(
                _mm512_div_ps(_mm512_sub_ps(x, self.low), self.width),
                self.last,
            );
            let k = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
            let v = _mm512_add_ps(
                _mm512_mul_ps(self.quotient.of(k), self.out_width),
                self.out_low,
            );
            let v = _mm512_mask_mov_ps(
                v,
                _mm512_cmp_ps_mask::<_CMP_LE_OQ>(x, self.below),
                self.out_low,
            );
            _mm512_mask_mov_ps(
                v,
                _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, self.above),
                self.out_high,
            )
        }
    }

    /// [`Range`]'s values for each of 32 lanes, as arrays: worked out once for a task's
    /// channels, then loaded (sixteen lanes) or broadcast (one lane) a vector at a time.
    pub(super) struct RangeLanes {
        values: [[f32; CHANNELS]; 9],
        /// Whether the quotients of levels are taken by the reciprocal (`values[8]`).
        by_reciprocal: bool,
    }

    impl RangeLanes {
        /// For `r`, whose quotients of levels may be taken by the reciprocal where
        /// `by_reciprocal` says [`exact_by_reciprocal`] holds.
        pub(super) fn new(r: &[FakeQuantizeRange; CHANNELS], by_reciprocal: bool) -> RangeLanes {
            let of = |f: fn(&FakeQuantizeRange) -> f32| std::array::from_fn(|l| f(&r[l]));
            let values = [
                of(|r| r.input_low),
                of(|r| r.input_high - r.input_low),
                of(|r| r.last_level),
                of(|r| r.output_low),
                of(|r| r.output_high),
                of(|r| r.output_high - r.output_low),
                of(|r| r.input_low.min(r.input_high)),
                of(|r| r.input_low.max(r.input_high)),
                of(|r| 1.0 / r.last_level),
            ];
            RangeLanes {
                values,
                by_reciprocal,
            }
        }

        /// Lanes `lane0..lane0 + 16`.
        #[inline(always)]
        unsafe fn load(&self, lane0: usize) -> Range {
            self.range(|i| _mm512_loadu_ps(self.values[i].as_ptr().add(lane0)))
        }

        /// Lane `lane`'s range in all 16 lanes.
        #[inline(always)]
        unsafe fn splat(&self, lane: usize) -> Range {
            self.range(|i| _mm512_set1_ps(self.values[i][lane]))
        }

        #[inline(always)]
        unsafe fn range(&self, v: impl Fn(usize) -> __m512) -> Range {
            Range {
                quotient: Quotient {
                    last: v(2),
                    reciprocal: self.by_reciprocal.then(|| v(8)),
                },
                low: v(0),
                width: v(1),
                last: v(2),
                out_low: v(3),
                out_high: v(4),
                out_width: v(5),
                below: v(6),
                above: v(7),
            }
        }
    }

    /// `k / last` for integers `k` in `0..=last`, as the division rounds it: by the
    /// reciprocal and one correction where [`exact_by_reciprocal`] checked every such `k`
    /// (`k - q * last` is exact in an FMA, and `q + e / last` then rounds to the quotient),
    /// else by the division. A division a vector was what the residual layers waited on.
    #[derive(Clone, Copy)]
    struct Quotient {
        last: __m512,
        reciprocal: Option<__m512>,
    }

    impl Quotient {
        #[inline(always)]
        unsafe fn new(last: f32, by_reciprocal: bool) -> Quotient {
            Quotient {
                last: _mm512_set1_ps(last),
                reciprocal: by_reciprocal.then(|| _mm512_set1_ps(1.0 / last)),
            }
        }

        #[inline(always)]
        unsafe fn of(&self, k: __m512) -> __m512 {
            match self.reciprocal {
                Some(r) => {
                    let q = _mm512_mul_ps(k, r);
                    let e = _mm512_fnmadd_ps(q, self.last, k);
                    _mm512_fmadd_ps(e, r, q)
                }
                None => _mm512_div_ps(k, self.last),
            }
        }
    }

    /// [`FakeQuantizeRange::value_of_level`] of sixteen levels: the residual addend's
    /// values computed where a table lookup (a gather, or sixteen permutes) cost more.
    pub(super) struct LevelValues {
        quotient: Quotient,
        width: __m512,
        low: __m512,
        high: __m512,
    }

    impl LevelValues {
        /// For the levels of `r`, whose `last_level` [`exact_by_reciprocal`] holds for.
        #[inline(always)]
        pub(super) unsafe fn new(r: &FakeQuantizeRange) -> LevelValues {
            LevelValues {
                quotient: Quotient::new(r.last_level, true),
                width: _mm512_set1_ps(r.output_high - r.output_low),
                low: _mm512_set1_ps(r.output_low),
                high: _mm512_set1_ps(r.output_high),
            }
        }

        /// The values of the sixteen levels `k`: the ends at 0 and from `last` on, else
        /// `k / last * (high - low) + low`.
        #[inline(always)]
        pub(super) unsafe fn of(&self, k: __m128i) -> __m512 {
            let k = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(k));
            let v = _mm512_add_ps(_mm512_mul_ps(self.quotient.of(k), self.width), self.low);
            let v = _mm512_mask_mov_ps(
                v,
                _mm512_cmp_ps_mask::<_CMP_LE_OQ>(k, _mm512_setzero_ps()),
                self.low,
            );
            _mm512_mask_mov_ps(
                v,
                _mm512_cmp_ps_mask::<_CMP_GE_OQ>(k, self.quotient.last),
                self.high,
            )
        }
    }
}
