//! The patch product written channel-last, for a convolution whose consumer reads its
//! output so (ROIAlign, `Prepared::set_channels_last_output`): `out [cols, co]` = `x [k,
//! cols]ᵀ x w [k, co]`, the output channels in the lanes (16 to 64 of them, one to four
//! AVX-512 vectors) and a row of positions in registers, each patch value broadcast against
//! the tap's row of filters.
//!
//! Why: the pointwise tiles write `[co, cols]` with positions in the lanes, which the blocks
//! then transposed into the channel-last output: a detector head's 3 -> 32 channel 3x3 stem
//! onto 160x160 spent a fifth of its time on that transpose.
//!
//! Each output is the chain of fused multiply-adds over the patch in order from 0, plus the
//! channel's bias, through the activation: the sums and bits of the pointwise tiles
//! (`pointwise.rs`) for patches of one depth block (at most 256 values), which is all the
//! blocks give them.

use irun_opkit::epilogue::{Activation, Epilogue};
use std::mem::MaybeUninit;

/// The deepest patches taken: one depth block of the pointwise tiles' sums.
const MAX_DEPTH: usize = 256;
/// The most output channels taken: four vectors.
const MAX_CO: usize = 64;

/// Filters `[co, k]` as rows `[k][co]`: the tap's filter values of every output channel.
#[derive(Debug)] // at most 256 x 64 values
pub(crate) struct ChannelRows {
    co: usize,
    k: usize,
    rows: Vec<f32>,
}

impl ChannelRows {
    /// The filters `w` (`[co, k]`) as rows, where this CPU and the shape suit: AVX-512F,
    /// `co` a multiple of 16 up to 64, `k` up to 256.
    pub(crate) fn new(w: &[f32], co: usize, k: usize) -> Option<ChannelRows> {
        let fits = crate::avx512f()
            && co.is_multiple_of(16)
            && (16..=MAX_CO).contains(&co)
            && (1..=MAX_DEPTH).contains(&k)
            && w.len() == co * k;
        fits.then(|| ChannelRows {
            co,
            k,
            rows: (0..k)
                .flat_map(|t| (0..co).map(move |o| w[o * k + t]))
                .collect(),
        })
    }

    /// `out[p * co + o]` = the sum over `t < k` in order, by fused multiply-adds from 0, of
    /// `x[t * stride + p] * w[o][t]`, plus `bias[o]`, through `activation`, for `p < cols`
    /// (the patch rows of `cols` positions `stride` values apart); every slot of `out`
    /// written, and handed back initialised.
    ///
    /// Panics when the lengths do not fit (a caller's bug).
    pub(crate) fn product<'o>(
        &self,
        (x, stride): (&[f32], usize),
        cols: usize,
        out: &'o mut [MaybeUninit<f32>],
        epilogue: Option<&Epilogue>,
    ) -> &'o mut [f32] {
        let (bias, activation) = Epilogue::parts(epilogue);
        assert!(
            cols <= stride
                && x.len() >= (self.k - 1) * stride + cols
                && out.len() == cols * self.co
                && bias.is_none_or(|b| b.len() >= self.co),
            "channel-row product out of bounds"
        );
        let bias = bias.map(|b| &b[..self.co]);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `new` made this only where AVX-512F holds, with `co` a multiple of 16
        // from 16 to 64; the assert bounds the reads of `x` (`t * stride + p`, t < k,
        // p < cols), of `rows` (`k * co` values) and of `bias` (`co`), and the writes of
        // `out` (`p * co + o`, p < cols, o < co).
        unsafe {
            let run = avx512::Run {
                w: self.rows.as_ptr(),
                x: x.as_ptr(),
                stride,
                k: self.k,
                bias: bias.map(<[f32]>::as_ptr),
                activation,
            };
            let o = out.as_mut_ptr().cast::<f32>();
            match self.co / 16 {
                1 => run.positions::<1, 16>(cols, o),
                2 => run.positions::<2, 12>(cols, o),
                3 => run.positions::<3, 8>(cols, o),
                _ => run.positions::<4, 6>(cols, o),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("ChannelRows::new returns None off x86_64");
        // SAFETY: the kernel wrote every one of the `cols * co` slots of `out` (each
        // position's `co` values, for every position below `cols`); `MaybeUninit<f32>`
        // has the layout of `f32`.
        #[allow(unreachable_code)]
        unsafe {
            &mut *(out as *mut [MaybeUninit<f32>] as *mut [f32])
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Activation;
    use std::arch::x86_64::*;

    /// One product's operands: rows `w [k][16 V]`, patch rows `x` `stride` apart.
    pub(super) struct Run {
        pub w: *const f32,
        pub x: *const f32,
        pub stride: usize,
        pub k: usize,
        pub bias: Option<*const f32>,
        pub activation: Activation,
    }

    impl Run {
        /// Positions `0..cols` in tiles of `P` (then one at a time), each position's `16 V`
        /// channels stored at `out + p * 16 V`.
        ///
        /// # Safety
        /// AVX-512F must be available; `w` readable at `.. k * 16 V`, `x` at `t * stride + p`
        /// for `t < k`, `p < cols`, `bias` at `.. 16 V`; `out` writable at `.. cols * 16 V`.
        #[target_feature(enable = "avx512f")]
        pub(super) unsafe fn positions<const V: usize, const P: usize>(
            &self,
            cols: usize,
            out: *mut f32,
        ) {
            let whole = cols / P * P;
            for p0 in (0..whole).step_by(P) {
                self.tile::<V, P>(p0, out);
            }
            for p0 in whole..cols {
                self.tile::<V, 1>(p0, out);
            }
        }

        /// Positions `p0 .. p0 + P`.
        ///
        /// # Safety
        /// As [`Self::positions`], with `p0 + P <= cols`.
        #[target_feature(enable = "avx512f")]
        unsafe fn tile<const V: usize, const P: usize>(&self, p0: usize, out: *mut f32) {
            let mut sums = [[_mm512_setzero_ps(); V]; P];
            for t in 0..self.k {
                let w = self.w.add(t * 16 * V);
                let ws: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(w.add(16 * v)));
                let x = self.x.add(t * self.stride + p0);
                for (p, s) in sums.iter_mut().enumerate() {
                    let xp = _mm512_set1_ps(*x.add(p));
                    for (s, &wv) in s.iter_mut().zip(&ws) {
                        *s = _mm512_fmadd_ps(xp, wv, *s);
                    }
                }
            }
            // The sums stored as they are, then finished from memory (L1): finishing them
            // in this loop kept LLVM from holding them in registers across the taps (a
            // store after every multiply-add, at a third of the speed).
            let o = out.add(p0 * 16 * V);
            for (p, s) in sums.iter().enumerate() {
                for (v, &s) in s.iter().enumerate() {
                    _mm512_storeu_ps(o.add((p * V + v) * 16), s);
                }
            }
            if self.bias.is_none() && matches!(self.activation, Activation::None) {
                return;
            }
            for i in 0..P * V {
                let at = o.add(16 * i);
                let s = match self.bias {
                    Some(b) => {
                        _mm512_add_ps(_mm512_loadu_ps(at), _mm512_loadu_ps(b.add(16 * (i % V))))
                    }
                    None => _mm512_loadu_ps(at),
                };
                _mm512_storeu_ps(at, crate::lanes_epilogue::activate(self.activation, s));
            }
        }
    }
}
