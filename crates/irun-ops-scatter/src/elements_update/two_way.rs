//! The two-bucket partition of a flat histogram in AVX-512 vectors: eight positions at a
//! time, each `(offset, update)` pair compressed into the list of its side of the cut
//! ([`put_prefix`], for [`super::buckets::TwoLists`]).
//!
//! The scalar loop writes each pair to both lists and advances one cursor, about 3 cycles a
//! position; the split rounds' partitioning task ran at 1.2-1.3 ns a position on the 16M f32
//! sums and 1.55 on the f64 ones, slower than the lean task it shares each round with, so
//! the lean task took most of every round. Eight pairs compressed in registers and stored
//! whole take about a third of that (a stand-alone loop, 1M i64 indices into two lists of
//! f32 pairs: 0.36 ns a position in cache against 1.1-1.5 for the scalar loop). The stores
//! are register compresses followed by plain stores: Zen 4 runs a compress straight to
//! memory in microcode, far slower.

use std::mem::MaybeUninit;

use crate::kernel::{IndexWidth, NativeIndex};

/// One listed update: its output offset and the update. Aligned to 4 bytes, not the
/// update's 8, so that an f64 or i64 update's pair takes 12 bytes instead of 16: the lists'
/// writes and reads are most of the partition's and the apply's memory traffic.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, packed(4))]
pub(super) struct Pair<T> {
    pub(super) off: u32,
    pub(super) val: T,
}

const _: () =
    assert!(std::mem::size_of::<Pair<f64>>() == 12 && std::mem::size_of::<Pair<f32>>() == 8);

/// Positions per vector step.
const STEP: usize = 8;

/// Puts the pairs of the first whole steps of eight positions of `vals` into `low` (targets
/// below `cut`) and `high` (the others), at the cursors, which it advances; stops before the
/// first step with a value outside `0..along` (the scalar loop then reports or wraps it) or
/// whose stores would not fit the lists' room, and returns the positions it put. Each store
/// writes a whole step's slots from the cursor on, so up to seven slots past the new cursor
/// hold pairs that are not part of the list: spare room, which the next stores overwrite.
/// Puts nothing (returns 0) without AVX-512 or for updates other than 4 or 8 bytes wide.
/// The pairs are those the scalar loop puts, in the same order.
pub(super) fn put_prefix<T: Copy, V: NativeIndex>(
    vals: &[V],
    ups: &[T],
    along: usize,
    cut: usize,
    low: &mut [MaybeUninit<Pair<T>>],
    high: &mut [MaybeUninit<Pair<T>>],
    cursors: &mut (usize, usize),
) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let width = std::mem::size_of::<T>();
        // The kernels read updates as raw 4- or 8-byte words and write pairs whose update
        // follows its 4-byte offset with no padding (`Pair` is packed to 4).
        let laid_out = std::mem::size_of::<Pair<T>>() == 4 + width;
        if !(laid_out && (width == 4 || width == 8) && avx512()) {
            return 0;
        }
        let steps = vals.len().min(ups.len()) / STEP;
        let (along, cut) = (along as u64, cut as u64);
        let mut lists = Lists {
            low: low.as_mut_ptr().cast::<u8>(),
            low_room: low.len(),
            high: high.as_mut_ptr().cast::<u8>(),
            high_room: high.len(),
            cursors: *cursors,
        };
        let vals = vals.as_ptr().cast::<u8>();
        let ups = ups.as_ptr().cast::<u8>();
        // SAFETY: AVX-512F/VL and POPCNT were detected. The kernels read `steps` whole steps of `vals`
        // (as `V::WIDTH` integers: `NativeIndex` is only i32 and i64) and of `ups` (`width`
        // bytes each), which both hold; they store a step's pairs only after checking that
        // `cursor + STEP` slots fit the list's room (`Lists::fits`), in slots of
        // `4 + width` bytes, the size of `Pair<T>`.
        let taken = unsafe {
            match (V::WIDTH, width) {
                (IndexWidth::I64, 4) => {
                    avx512::narrow::<true>(vals, ups, steps, along, cut, &mut lists)
                }
                (IndexWidth::I32, 4) => {
                    avx512::narrow::<false>(vals, ups, steps, along, cut, &mut lists)
                }
                (IndexWidth::I64, _) => {
                    avx512::wide::<true>(vals, ups, steps, along, cut, &mut lists)
                }
                (IndexWidth::I32, _) => {
                    avx512::wide::<false>(vals, ups, steps, along, cut, &mut lists)
                }
            }
        };
        *cursors = lists.cursors;
        taken
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (vals, ups, along, cut, low, high, cursors);
        0
    }
}

/// The kit's detection of AVX-512 (F, VL, BW, DQ, found once), and POPCNT, which the
/// kernels count each step's sides with.
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    irun_opkit::simd::unit() == irun_opkit::simd::Unit::Avx512
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// The two lists' slots as bytes, their room in slots and the cursors.
#[cfg(target_arch = "x86_64")]
struct Lists {
    low: *mut u8,
    low_room: usize,
    high: *mut u8,
    high_room: usize,
    cursors: (usize, usize),
}

#[cfg(target_arch = "x86_64")]
impl Lists {
    /// Both lists have room for a whole step's slots from their cursors.
    #[inline(always)]
    fn fits(&self) -> bool {
        let (l, h) = self.cursors;
        l + STEP <= self.low_room && h + STEP <= self.high_room
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{Lists, STEP};
    use std::arch::x86_64::*;

    /// Eight targets as u64 lanes from a step of i64 (`WIDE_INDEX`) or i32 indices, sign
    /// extended, so that a negative index reads as nearly 2^64, outside `0..along`.
    ///
    /// # Safety
    /// AVX-512F; `vals` holds step `step`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn targets<const WIDE_INDEX: bool>(vals: *const u8, step: usize) -> __m512i {
        unsafe {
            match WIDE_INDEX {
                true => _mm512_loadu_si512(vals.add(step * STEP * 8).cast()),
                false => {
                    _mm512_cvtepi32_epi64(_mm256_loadu_si256(vals.add(step * STEP * 4).cast()))
                }
            }
        }
    }

    /// The steps both kernels share: each step's targets checked (a value outside
    /// `0..along`, or a list without room for a whole step, ends the loop before it) and
    /// sided by the cut, then `put(step, targets, high, cursors)` stores its pairs at the
    /// cursors, which advance by the lanes on each side. Returns the positions taken.
    ///
    /// # Safety
    /// AVX-512F/VL; `vals` holds `steps` steps; `put` may store a whole step's slots from
    /// each cursor, which `fits` checked.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl,popcnt")]
    unsafe fn each_step<const WIDE_INDEX: bool>(
        vals: *const u8,
        steps: usize,
        along: u64,
        cut: u64,
        lists: &mut Lists,
        mut put: impl FnMut(usize, __m512i, __mmask8, (usize, usize)),
    ) -> usize {
        let (along, cut) = (
            _mm512_set1_epi64(along as i64),
            _mm512_set1_epi64(cut as i64),
        );
        for s in 0..steps {
            // SAFETY: step `s` lies in `vals` (the caller's contract).
            let t = unsafe { targets::<WIDE_INDEX>(vals, s) };
            if _mm512_cmpge_epu64_mask(t, along) != 0 || !lists.fits() {
                return s * STEP;
            }
            let high = _mm512_cmpge_epu64_mask(t, cut);
            let (l, h) = lists.cursors;
            put(s, t, high, (l, h));
            let to_high = high.count_ones() as usize;
            lists.cursors = (l + STEP - to_high, h + to_high);
        }
        steps * STEP
    }

    /// 4-byte updates: a pair is one 64-bit lane, the target's low half below the update.
    ///
    /// # Safety
    /// AVX-512F/VL; `vals` and `ups` hold `steps` steps; the lists' pointers address their
    /// room of 8-byte slots.
    #[target_feature(enable = "avx512f,avx512vl,popcnt")]
    pub(super) unsafe fn narrow<const WIDE_INDEX: bool>(
        vals: *const u8,
        ups: *const u8,
        steps: usize,
        along: u64,
        cut: u64,
        lists: &mut Lists,
    ) -> usize {
        let (low, high_list) = (lists.low, lists.high);
        let put = |s: usize, t: __m512i, high: __mmask8, (l, h): (usize, usize)| {
            // SAFETY: step `s` lies in `ups`; STEP slots from each cursor lie in its
            // list's room (`each_step`'s contract and the caller's).
            unsafe {
                let u = _mm256_loadu_si256(ups.add(s * STEP * 4).cast());
                let u = _mm512_slli_epi64::<32>(_mm512_cvtepu32_epi64(u));
                // Odd dwords from the updates, even ones the targets' low halves.
                let pairs = _mm512_mask_blend_epi32(0xaaaa, t, u);
                let (to_low, to_high) = (
                    _mm512_maskz_compress_epi64(!high, pairs),
                    _mm512_maskz_compress_epi64(high, pairs),
                );
                _mm512_storeu_si512(low.add(l * 8).cast(), to_low);
                _mm512_storeu_si512(high_list.add(h * 8).cast(), to_high);
            }
        };
        // SAFETY: the caller's contract.
        unsafe { each_step::<WIDE_INDEX>(vals, steps, along, cut, lists, put) }
    }

    /// 8-byte updates: a pair is 12 bytes, so the offsets and the updates of each side are
    /// compressed apart and then interleaved into eight 12-byte pairs, 96 bytes.
    ///
    /// # Safety
    /// As [`narrow`], with 12-byte slots.
    #[target_feature(enable = "avx512f,avx512vl,popcnt")]
    pub(super) unsafe fn wide<const WIDE_INDEX: bool>(
        vals: *const u8,
        ups: *const u8,
        steps: usize,
        along: u64,
        cut: u64,
        lists: &mut Lists,
    ) -> usize {
        // Dwords 0-7 of the first source are the offsets, 16-31 the updates (low, high).
        let first = _mm512_setr_epi32(0, 16, 17, 1, 18, 19, 2, 20, 21, 3, 22, 23, 4, 24, 25, 5);
        let rest = _mm512_setr_epi32(26, 27, 6, 28, 29, 7, 30, 31, 0, 0, 0, 0, 0, 0, 0, 0);
        let (low, high_list) = (lists.low, lists.high);
        let put = |s: usize, t: __m512i, high: __mmask8, (l, h): (usize, usize)| {
            let offs = _mm512_cvtepi64_epi32(t);
            // SAFETY: as in `narrow`, with 12-byte slots.
            unsafe {
                let u = _mm512_loadu_si512(ups.add(s * STEP * 8).cast());
                put_wide(low.add(l * 12), !high, offs, u, first, rest);
                put_wide(high_list.add(h * 12), high, offs, u, first, rest);
            }
        };
        // SAFETY: the caller's contract.
        unsafe { each_step::<WIDE_INDEX>(vals, steps, along, cut, lists, put) }
    }

    /// Writes the pairs of the lanes `keep` selects, in lane order, as 12-byte slots from
    /// `dst`: the offsets and updates compressed apart, then interleaved by the two
    /// permutations `first` (slots 0-4 and the offset of 5) and `rest`.
    ///
    /// # Safety
    /// AVX-512F/VL; `dst` has room for STEP 12-byte slots.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn put_wide(
        dst: *mut u8,
        keep: __mmask8,
        offs: __m256i,
        u: __m512i,
        first: __m512i,
        rest: __m512i,
    ) {
        let offs = _mm512_castsi256_si512(_mm256_maskz_compress_epi32(keep, offs));
        let u = _mm512_maskz_compress_epi64(keep, u);
        // SAFETY: 64 + 32 bytes from `dst`, the STEP slots the caller has room for.
        unsafe {
            _mm512_storeu_si512(dst.cast(), _mm512_permutex2var_epi32(offs, first, u));
            _mm256_storeu_si256(
                dst.add(64).cast(),
                _mm512_castsi512_si256(_mm512_permutex2var_epi32(offs, rest, u)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64).
    struct Bits(u64);

    impl Bits {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// The scalar loop's pairs for `vals` up to its first value outside `0..along`, and
    /// where that is.
    #[allow(clippy::type_complexity)]
    fn scalar<T: Copy, V: NativeIndex>(
        vals: &[V],
        ups: &[T],
        along: usize,
        cut: usize,
    ) -> (Vec<(u32, T)>, Vec<(u32, T)>, usize) {
        let (mut low, mut high) = (Vec::new(), Vec::new());
        for (k, (&v, &u)) in vals.iter().zip(ups).enumerate() {
            let t = Into::<i64>::into(v) as usize;
            if t >= along {
                return (low, high, k);
            }
            match t < cut {
                true => low.push((t as u32, u)),
                false => high.push((t as u32, u)),
            }
        }
        (low, high, vals.len())
    }

    fn pairs<T: Copy>(slots: &[MaybeUninit<Pair<T>>], n: usize) -> Vec<(u32, T)> {
        slots[..n]
            .iter()
            .map(|s| {
                // SAFETY: the test reads only the slots below a cursor, which were written.
                let p = unsafe { s.assume_init() };
                (p.off, p.val)
            })
            .collect()
    }

    /// Runs `put_prefix` on `vals` with lists of `room` slots (of a larger buffer, whose
    /// rest must stay untouched), after `before` pairs in each list, and checks its pairs
    /// against the scalar loop's for the positions it took.
    fn check<T: Copy + PartialEq + std::fmt::Debug, V: NativeIndex>(
        vals: &[V],
        ups: &[T],
        along: usize,
        cut: usize,
        room: usize,
        before: usize,
    ) -> usize {
        let guard = 16;
        let blank = || {
            vec![
                MaybeUninit::new(Pair {
                    off: u32::MAX,
                    val: ups[0]
                });
                room + guard
            ]
        };
        let (mut low, mut high) = (blank(), blank());
        let mut cursors = (before, before);
        let taken = put_prefix(
            vals,
            ups,
            along,
            cut,
            &mut low[..room],
            &mut high[..room],
            &mut cursors,
        );
        let (want_low, want_high, valid) = scalar(&vals[..taken], &ups[..taken], along, cut);
        assert_eq!(valid, taken, "a vector step took an invalid value");
        assert_eq!(taken % STEP, 0);
        assert_eq!(cursors, (before + want_low.len(), before + want_high.len()));
        assert_eq!(pairs(&low[before..], want_low.len()), want_low);
        assert_eq!(pairs(&high[before..], want_high.len()), want_high);
        for list in [&low, &high] {
            assert!(pairs(&list[room..], guard).iter().all(|p| p.0 == u32::MAX));
        }
        if avx512() {
            // It stops only before an invalid step, after the last whole one, or where the
            // next step might not fit a list's room.
            let (_, _, first_bad) = scalar(vals, ups, along, cut);
            let bound = first_bad.min(vals.len()) / STEP * STEP;
            let full = cursors.0 + STEP > room || cursors.1 + STEP > room;
            assert!(
                taken == bound || full,
                "stopped early at {taken} of {bound}"
            );
        }
        taken
    }

    fn values<V: NativeIndex>(bits: &mut Bits, n: usize, along: usize) -> Vec<V> {
        (0..n)
            .map(|_| {
                let t = (bits.next() % along as u64) as i64;
                V::try_from(t).ok().expect("the test's targets fit")
            })
            .collect()
    }

    fn every_width<V: NativeIndex>() {
        let mut bits = Bits(0x9e37_79b9_7f4a_7c15);
        let along = 1000;
        for (n, cut) in [
            (0, 500),
            (7, 500),
            (8, 500),
            (203, 500),
            (4096, 1),
            (4096, 0),
            (999, 1000),
            (999, usize::MAX),
        ] {
            let vals: Vec<V> = values(&mut bits, n, along);
            // Without NaNs, which compare unequal to themselves: exponents below all ones.
            let f32s: Vec<f32> = (0..n)
                .map(|_| f32::from_bits(bits.next() as u32 & 0xbfff_ffff))
                .collect();
            let f64s: Vec<u64> = (0..n).map(|_| bits.next()).collect();
            let i32s: Vec<i32> = (0..n).map(|_| bits.next() as i32).collect();
            if n == 0 {
                continue;
            }
            let taken = check(&vals, &f32s, along, cut, n + 1, 0);
            if avx512() {
                assert_eq!(taken, n / STEP * STEP);
            }
            check(&vals, &f64s, along, cut, n + 1, 0);
            check(&vals, &i32s, along, cut, n + 1, 3);
        }
    }

    #[test]
    fn vector_steps_put_the_scalar_loops_pairs() {
        every_width::<i64>();
        every_width::<i32>();
    }

    #[test]
    fn vector_steps_stop_before_an_invalid_value() {
        let mut bits = Bits(7);
        let along = 1 << 20;
        for bad in [0, 5, 8, 13, 100, 1023] {
            for value in [-1i64, along as i64, i64::MIN, i64::MAX, -(along as i64)] {
                let mut vals: Vec<i64> = values(&mut bits, 1024, along);
                vals[bad] = value;
                let ups: Vec<f64> = (0..1024).map(|k| k as f64).collect();
                let taken = check(&vals, &ups, along, along / 3, 1025, 0);
                assert!(taken <= bad);
                if avx512() {
                    assert_eq!(taken, bad / STEP * STEP);
                }
                let narrow: Vec<i32> = vals.iter().map(|&v| v as i32).collect();
                let ups32: Vec<f32> = ups.iter().map(|&u| u as f32).collect();
                check(&narrow, &ups32, along, along / 3, 1025, 0);
            }
        }
    }

    #[test]
    fn vector_steps_stay_in_the_lists_room() {
        let mut bits = Bits(11);
        let along = 64;
        let vals: Vec<i64> = values(&mut bits, 256, along);
        let ups: Vec<i64> = (0..256).collect();
        for room in [0, 7, 8, 9, 15, 16, 40, 100] {
            for before in [0, 1, 5] {
                if before > room {
                    continue;
                }
                // `check` finds any slot written past the room.
                check(&vals, &ups, along, 20, room, before);
                let ups32: Vec<u32> = (0..256).collect();
                check(&vals, &ups32, along, 20, room, before);
            }
        }
    }
}
