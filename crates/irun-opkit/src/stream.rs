//! Copies that write around the cache.
//!
//! A plain store to a line that is not in cache first reads the line from memory (a read for
//! ownership), so writing a large output costs twice its size in memory traffic. A
//! non-temporal ("streaming") store fills a write-combining buffer instead and sends the whole
//! line to memory: the output costs its size once. That pays for output nobody reads soon,
//! finished in a cache-resident scratch buffer first; it does not for data about to be read
//! again, which the streaming store leaves out of cache.

use std::mem::MaybeUninit;

/// Outputs from this size on are written with streaming stores (the scatters' whole copies
/// of their data, `FillFrom::copy_all` in irun-ops-scatter, and [`crate::halves::widen`]):
/// half of a 32 MB L3 or more, they leave the cache before their reader reaches most of
/// them, so the read for ownership of each line a plain store costs buys nothing.
pub const STREAM_MIN_BYTES: usize = 16 << 20;

/// Copies `src` into `dst` (of the same length) with streaming stores where the machine has
/// them (x86-64), else with plain ones. On return every element of `dst` is written, and the
/// stores are ordered before any later store of this thread (a fence follows them), so a
/// thread that learns of the copy through a later release (a task's end) sees it whole.
pub fn copy_streaming<T: Copy>(dst: &mut [MaybeUninit<T>], src: &[T]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "a streaming copy between equal lengths"
    );
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(src);
        // SAFETY: `dst` and `src` are valid for `bytes` bytes (equal lengths of the same `T`),
        // and do not overlap (`dst` is borrowed mutably while `src` is borrowed); `T: Copy`,
        // so its bytes may be copied as bytes into `MaybeUninit<T>` slots, which then hold
        // `src`'s values.
        unsafe { x86::copy_bytes(dst.as_mut_ptr().cast(), src.as_ptr().cast(), bytes) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.write_copy_of_slice(src);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};

    /// Copies `n` bytes from `src` to `dst`: the bytes before `dst`'s first 16-byte boundary
    /// and after its last one plainly, the 16-byte blocks between with streaming stores, then
    /// a store fence.
    ///
    /// # Safety
    /// `dst` must be valid for `n` bytes of writes and `src` for `n` bytes of reads, and the
    /// two must not overlap.
    pub(super) unsafe fn copy_bytes(dst: *mut u8, src: *const u8, n: usize) {
        let head = dst.align_offset(16).min(n);
        let blocks = (n - head) / 16;
        let tail = n - head - blocks * 16;
        // SAFETY: the three stretches `0..head`, `head..head + 16 * blocks` and the `tail`
        // bytes after them partition `0..n`, within both buffers by the caller's contract.
        // `dst + head` is 16-byte aligned (`align_offset`), so every block's store address is
        // aligned as `_mm_stream_si128` requires; the loads are unaligned ones. SSE2, which
        // both intrinsics need, is part of every x86-64 CPU. The fence orders the streaming
        // stores, which are weakly ordered, before the caller's later stores.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, head);
            let (mut d, mut s) = (
                dst.add(head).cast::<__m128i>(),
                src.add(head).cast::<__m128i>(),
            );
            for _ in 0..blocks {
                _mm_stream_si128(d, _mm_loadu_si128(s));
                d = d.add(1);
                s = s.add(1);
            }
            let done = head + blocks * 16;
            std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), tail);
            _mm_sfence();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length and every alignment of both ends around the 16-byte blocks copies each
    /// element once and touches nothing outside `dst`.
    #[test]
    fn every_alignment_and_length_copies_exactly() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for from in 0..17 {
            for at in 0..17 {
                for len in [0, 1, 5, 15, 16, 17, 31, 32, 33, 64, 100, 250] {
                    let mut buf = vec![MaybeUninit::new(0xEEu8); 300];
                    copy_streaming(&mut buf[at..at + len], &src[from..from + len]);
                    // SAFETY: every byte of `buf` was initialised above.
                    let got: Vec<u8> = buf.iter().map(|b| unsafe { b.assume_init() }).collect();
                    assert!(
                        got[..at].iter().all(|&b| b == 0xEE),
                        "before, {from} {at} {len}"
                    );
                    assert_eq!(
                        &got[at..at + len],
                        &src[from..from + len],
                        "{from} {at} {len}"
                    );
                    assert!(got[at + len..].iter().all(|&b| b == 0xEE), "after");
                }
            }
        }
    }

    /// Wider elements keep their values whatever their start's alignment within 16 bytes.
    #[test]
    fn wide_elements_copy_by_value() {
        let src: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5 - 7.0).collect();
        let mut dst = vec![MaybeUninit::new(0.0f64); 1001];
        copy_streaming(&mut dst[1..], &src);
        // SAFETY: every slot of `dst` was initialised above.
        let got: Vec<f64> = dst[1..]
            .iter()
            .map(|v| unsafe { v.assume_init() })
            .collect();
        assert_eq!(got, src);
    }
}
