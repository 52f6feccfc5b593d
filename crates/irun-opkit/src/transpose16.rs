//! 16 x 16 transposes of 4-byte values in AVX-512 registers where the CPU has them: sixteen
//! f32 planes to vectors of sixteen lanes (one per plane) and back, the moves between the
//! planar layout of the model's tensors and a kernel that keeps sixteen channels in the
//! lanes of a vector (the depthwise channel blocks), and the blocks of a Transpose of 4-byte
//! values (`strided.rs`). A gather per position costs several times as much, and a scalar
//! loop a store per value.

const LANES: usize = 16;

/// `dst[16 * j + i] = src[i * step + j]` for `j < cols`, `i < rows`, and `0` for
/// `rows <= i < 16`: columns `0..cols` of `rows` runs `step` apart, as `cols` vectors of
/// sixteen lanes (`rows, cols <= 16`).
#[inline]
pub fn to_lanes(src: &[f32], step: usize, rows: usize, cols: usize, dst: &mut [f32]) {
    assert!(
        rows <= LANES
            && cols <= LANES
            && LANES * cols <= dst.len()
            && (rows == 0
                || cols == 0
                || (rows - 1)
                    .checked_mul(step)
                    .and_then(|r| r.checked_add(cols))
                    .is_some_and(|r| r <= src.len())),
        "transpose to lanes out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    if avx512f() {
        // SAFETY: AVX-512F is available; the assert bounds every read (row `i < rows` at
        // `i * step .. + cols`) and write (`dst[.. 16 * cols]`).
        unsafe { avx512::to_lanes(src.as_ptr(), step, rows, cols, dst.as_mut_ptr()) };
        return;
    }
    for j in 0..cols {
        for i in 0..LANES {
            dst[LANES * j + i] = if i < rows { src[i * step + j] } else { 0.0 };
        }
    }
}

/// `dst[i * step + j] = src[16 * j + i]` for `i < rows`, `j < cols`: `cols` vectors of
/// sixteen lanes as the first `cols` values of `rows` runs `step` apart (`rows, cols <= 16`);
/// nothing else of `dst` is written.
#[inline]
pub fn from_lanes(src: &[f32], cols: usize, rows: usize, dst: &mut [f32], step: usize) {
    assert!(
        rows <= LANES
            && cols <= LANES
            && LANES * cols <= src.len()
            && (rows == 0
                || cols == 0
                || (rows - 1)
                    .checked_mul(step)
                    .and_then(|r| r.checked_add(cols))
                    .is_some_and(|r| r <= dst.len())),
        "transpose from lanes out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    if avx512f() {
        // SAFETY: AVX-512F is available; the assert bounds every read (`src[.. 16 * cols]`)
        // and write (row `i < rows` at `i * step .. + cols`).
        unsafe { avx512::from_lanes(src.as_ptr(), cols, rows, dst.as_mut_ptr(), step) };
        return;
    }
    for i in 0..rows {
        for j in 0..cols {
            dst[i * step + j] = src[LANES * j + i];
        }
    }
}

/// `dst[j * dst_step + i] = src[i * src_step + j]` for `i < rows`, `j < cols` (`rows, cols
/// <= 16`): a block of up to 16 x 16 4-byte values transposed; nothing else of `dst` is
/// written.
#[inline]
pub fn block(
    (src, src_step): (&[u32], usize),
    rows: usize,
    cols: usize,
    (dst, dst_step): (&mut [u32], usize),
) {
    let fits = |n: usize, step: usize, width: usize, have: usize| {
        n == 0
            || width == 0
            || (n - 1)
                .checked_mul(step)
                .and_then(|r| r.checked_add(width))
                .is_some_and(|r| r <= have)
    };
    assert!(
        rows <= LANES
            && cols <= LANES
            && fits(rows, src_step, cols, src.len())
            && fits(cols, dst_step, rows, dst.len()),
        "block transpose out of bounds"
    );
    #[cfg(target_arch = "x86_64")]
    if avx512f() {
        // SAFETY: AVX-512F is available; the assert bounds every read (row `i < rows` at
        // `i * src_step .. + cols`) and write (row `j < cols` at `j * dst_step .. + rows`).
        unsafe {
            avx512::block(
                src.as_ptr().cast(),
                src_step,
                rows,
                cols,
                dst.as_mut_ptr().cast(),
                dst_step,
            )
        };
        return;
    }
    for i in 0..rows {
        for j in 0..cols {
            dst[j * dst_step + i] = src[i * src_step + j];
        }
    }
}

fn avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    fn mask(n: usize) -> __mmask16 {
        if n >= 16 {
            0xffff
        } else {
            ((1u32 << n) - 1) as __mmask16
        }
    }

    /// # Safety
    /// AVX-512F must be available; `src` readable at `i * step + j` for `i < rows`,
    /// `j < cols`, `dst` writable at `.. 16 * cols`; `rows, cols <= 16`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn to_lanes(src: *const f32, step: usize, rows: usize, cols: usize, dst: *mut f32) {
        let m = mask(cols);
        // Sixteen values whatever `rows`, so that the rows stay in registers (a loop of
        // `rows` kept them on the stack). Not a load with mask 0 past `rows`: on AMD a
        // masked-off lane on an unmapped page costs a microcode assist (four times the
        // whole layer's time, measured).
        let r: [__m512; 16] = std::array::from_fn(|i| {
            if i < rows {
                _mm512_maskz_loadu_ps(m, src.add(i * step))
            } else {
                _mm512_setzero_ps()
            }
        });
        let t = transpose(r);
        for (j, v) in t.iter().enumerate() {
            if j < cols {
                _mm512_storeu_ps(dst.add(16 * j), *v);
            }
        }
    }

    /// # Safety
    /// AVX-512F must be available; `src` readable at `.. 16 * cols`, `dst` writable at
    /// `i * step + j` for `i < rows`, `j < cols`; `rows, cols <= 16`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn from_lanes(
        src: *const f32,
        cols: usize,
        rows: usize,
        dst: *mut f32,
        step: usize,
    ) {
        let m = mask(cols);
        let r: [__m512; 16] = std::array::from_fn(|j| {
            if j < cols {
                _mm512_loadu_ps(src.add(16 * j))
            } else {
                _mm512_setzero_ps()
            }
        });
        let t = transpose(r);
        for (i, v) in t.iter().enumerate() {
            if i < rows {
                _mm512_mask_storeu_ps(dst.add(i * step), m, *v);
            }
        }
    }

    /// # Safety
    /// AVX-512F must be available; `src` readable at `i * src_step + j` and `dst` writable
    /// at `j * dst_step + i` for `i < rows`, `j < cols`; `rows, cols <= 16`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn block(
        src: *const f32,
        src_step: usize,
        rows: usize,
        cols: usize,
        dst: *mut f32,
        dst_step: usize,
    ) {
        let (mc, mr) = (mask(cols), mask(rows));
        let r: [__m512; 16] = std::array::from_fn(|i| {
            if i < rows {
                _mm512_maskz_loadu_ps(mc, src.add(i * src_step))
            } else {
                _mm512_setzero_ps()
            }
        });
        let t = transpose(r);
        for (j, v) in t.iter().enumerate() {
            if j < cols {
                _mm512_mask_storeu_ps(dst.add(j * dst_step), mr, *v);
            }
        }
    }

    /// Row `j` of the result is column `j` of `r`. Two rounds of interleaves within each
    /// 128-bit chunk leave `r[4g + m]`'s chunk `k` holding column `4k + m` of rows
    /// `4g .. 4g + 4`; two rounds of chunk shuffles then gather the four chunks of each
    /// column.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn transpose(r: [__m512; 16]) -> [__m512; 16] {
        let t: [__m512; 16] = std::array::from_fn(|i| {
            let (a, b) = (r[i & !1], r[i | 1]);
            if i % 2 == 0 {
                _mm512_unpacklo_ps(a, b)
            } else {
                _mm512_unpackhi_ps(a, b)
            }
        });
        let pd = _mm512_castps_pd;
        let r: [__m512; 16] = std::array::from_fn(|i| {
            // Rows 4g .. 4g + 4: columns 4k + (i % 4) from `a, c` (0, 1) or `b, d` (2, 3).
            let g = i / 4 * 4;
            let (x, y) = if i % 4 < 2 {
                (t[g], t[g + 2])
            } else {
                (t[g + 1], t[g + 3])
            };
            _mm512_castpd_ps(if i % 2 == 0 {
                _mm512_unpacklo_pd(pd(x), pd(y))
            } else {
                _mm512_unpackhi_pd(pd(x), pd(y))
            })
        });
        let mut out = [_mm512_setzero_ps(); 16];
        for m in 0..4 {
            // Chunks 0 and 2, then 1 and 3, of row groups 0 and 1 (`u`, `v`) and 2 and 3.
            let u = _mm512_shuffle_f32x4::<0x88>(r[m], r[4 + m]);
            let v = _mm512_shuffle_f32x4::<0xdd>(r[m], r[4 + m]);
            let u2 = _mm512_shuffle_f32x4::<0x88>(r[8 + m], r[12 + m]);
            let v2 = _mm512_shuffle_f32x4::<0xdd>(r[8 + m], r[12 + m]);
            out[m] = _mm512_shuffle_f32x4::<0x88>(u, u2);
            out[8 + m] = _mm512_shuffle_f32x4::<0xdd>(u, u2);
            out[4 + m] = _mm512_shuffle_f32x4::<0x88>(v, v2);
            out[12 + m] = _mm512_shuffle_f32x4::<0xdd>(v, v2);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row and column count up to 16, both ways, with steps wider than the runs: each
    /// value lands where the definition puts it, lanes past `rows` are 0, and nothing else
    /// is written.
    #[test]
    fn moves_planes_to_lanes_and_back() {
        let step = 21;
        let src: Vec<f32> = (0..16 * step).map(|v| v as f32 + 0.5).collect();
        for rows in 0..=16 {
            for cols in 0..=16 {
                let mut lanes = vec![-1f32; 16 * 17];
                to_lanes(&src, step, rows, cols, &mut lanes);
                for (k, &v) in lanes.iter().enumerate() {
                    let (j, i) = (k / 16, k % 16);
                    let want = match (j < cols, i < rows) {
                        (true, true) => src[i * step + j],
                        (true, false) => 0.0,
                        _ => -1.0,
                    };
                    assert_eq!(v, want, "to lanes {rows}x{cols} at {j},{i}");
                }
                let mut back = vec![-1f32; 16 * step];
                from_lanes(&lanes, cols, rows, &mut back, step);
                for (k, &v) in back.iter().enumerate() {
                    let (i, j) = (k / step, k % step);
                    let want = if i < rows && j < cols { src[k] } else { -1.0 };
                    assert_eq!(v, want, "from lanes {rows}x{cols} at {i},{j}");
                }
            }
        }
    }

    /// Blocks of every size up to 16 x 16 between steps wider than the block, as the
    /// definition puts them; nothing else of the destination is written.
    #[test]
    fn transposes_blocks_of_any_size() {
        let (ss, ds) = (19, 23);
        let src: Vec<u32> = (0..16 * ss as u32).collect();
        for rows in 0..=16 {
            for cols in 0..=16 {
                let mut dst = vec![u32::MAX; 16 * ds];
                block((&src, ss), rows, cols, (&mut dst, ds));
                for (k, &v) in dst.iter().enumerate() {
                    let (j, i) = (k / ds, k % ds);
                    let want = if i < rows && j < cols {
                        src[i * ss + j]
                    } else {
                        u32::MAX
                    };
                    assert_eq!(v, want, "{rows}x{cols} at {j},{i}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn rejects_a_source_too_short() {
        to_lanes(&[0.0; 20], 5, 4, 6, &mut [0.0; 96]);
    }
}
