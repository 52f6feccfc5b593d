//! Copies of many short runs of f32 (rows of 7 to 112 values between a kernel's scratch and a
//! plane), in AVX-512 vectors with a masked tail where the CPU has it. Not `copy_from_slice`:
//! it calls `memcpy`, whose dispatch cost more than a 7-value row's share of a depthwise
//! convolution's multiply-adds, and as much as the whole tile of a 3-channel stem convolution.

/// Copies `rows` runs of `len` values, run `r` from `src[r * src_step..]` to
/// `dst[r * dst_step..]`.
#[inline]
pub fn copy_rows(
    (src, src_step): (&[f32], usize),
    (dst, dst_step): (&mut [f32], usize),
    rows: usize,
    len: usize,
) {
    if rows == 0 || len == 0 {
        return;
    }
    let reach = |step: usize| {
        (rows - 1)
            .checked_mul(step)
            .and_then(|r| r.checked_add(len))
    };
    assert!(
        reach(src_step).is_some_and(|r| r <= src.len())
            && reach(dst_step).is_some_and(|r| r <= dst.len()),
        "row copy out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    if crate::avx512f() {
        // SAFETY: AVX-512F is available; the assert bounds every read and write, and `src`
        // and `dst` are distinct borrows.
        unsafe {
            avx512::copy_rows(
                src.as_ptr(),
                src_step,
                dst.as_mut_ptr(),
                dst_step,
                rows,
                len,
            )
        };
        return;
    }
    for r in 0..rows {
        dst[r * dst_step..][..len].copy_from_slice(&src[r * src_step..][..len]);
    }
}

/// Moves the first `len` values of each of `rows` runs of `buf`, `from` apart, to runs `len`
/// apart from the start, in place (a tile's flat positions to an output plane, dropping the
/// positions past each output row).
#[inline]
pub fn pack_rows(buf: &mut [f32], from: usize, rows: usize, len: usize) {
    if rows == 0 || len == 0 {
        return;
    }
    assert!(
        len <= from
            && (rows - 1)
                .checked_mul(from)
                .and_then(|r| r.checked_add(len))
                .is_some_and(|r| r <= buf.len()),
        "row pack out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    if crate::avx512f() {
        // SAFETY: AVX-512F is available; the assert bounds every read and write. Run `r`
        // moves from `r * from` to `r * len`, no later: each vector is loaded before it is
        // stored, and a store ends at or before the next load of its run (`len <= from`) and
        // before the next run's first value, so nothing is overwritten before it is read.
        unsafe {
            let p = buf.as_mut_ptr();
            avx512::copy_rows(p, from, p, len, rows, len)
        };
        return;
    }
    for r in 0..rows {
        buf.copy_within(r * from..r * from + len, r * len);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// # Safety
    /// AVX-512F must be available; `src` readable and `dst` writable at `r * step + i`
    /// (their steps) for `r < rows`, `i < len`. They may overlap only if no run's store
    /// reaches a value a later load reads (see `pack_rows`).
    #[target_feature(enable = "avx512f")]
    pub unsafe fn copy_rows(
        src: *const f32,
        src_step: usize,
        dst: *mut f32,
        dst_step: usize,
        rows: usize,
        len: usize,
    ) {
        let tail = (len % 16) as u32;
        let mask = ((1u32 << tail) - 1) as __mmask16;
        for r in 0..rows {
            let (s, d) = (src.add(r * src_step), dst.add(r * dst_step));
            let mut i = 0;
            while i + 16 <= len {
                _mm512_storeu_ps(d.add(i), _mm512_loadu_ps(s.add(i)));
                i += 16;
            }
            if tail > 0 {
                // Masked-off lanes are neither read nor written (nor can they fault).
                _mm512_mask_storeu_ps(d.add(i), mask, _mm512_maskz_loadu_ps(mask, s.add(i)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies between steps and the in-place pack, for runs of every length around a
    /// vector's 16: the values land where they should and nothing else is touched.
    #[test]
    fn rows_copy_and_pack_in_place() {
        for len in [1, 7, 15, 16, 17, 33] {
            let src: Vec<f32> = (0..4 * (len + 3)).map(|v| v as f32).collect();
            let mut dst = vec![-1f32; 4 * (len + 5)];
            copy_rows((&src, len + 3), (&mut dst, len + 5), 4, len);
            for r in 0..4 {
                assert_eq!(&dst[r * (len + 5)..][..len], &src[r * (len + 3)..][..len]);
                assert!(dst[r * (len + 5) + len..][..5].iter().all(|&v| v == -1.0));
            }
            let mut buf = src.clone();
            pack_rows(&mut buf, len + 3, 4, len);
            let want: Vec<f32> = (0..4)
                .flat_map(|r| src[r * (len + 3)..][..len].to_vec())
                .collect();
            assert_eq!(&buf[..4 * len], &want[..]);
        }
    }
}
