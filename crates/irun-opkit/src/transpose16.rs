//! 16 x 16 transposes of 4-byte values in AVX-512 registers where the CPU has them: sixteen
//! f32 planes to vectors of sixteen lanes (one per plane) and back, the moves between the
//! planar layout of the model's tensors and a kernel that keeps sixteen channels in the
//! lanes of a vector (the depthwise channel blocks), the blocks of a Transpose of 4-byte
//! values (`strided.rs`), and images moved channel-last ([`channels_last`]: ROIAlign, the
//! convolution's patch rows). Without AVX-512, all three move 8 x 8 tiles through eight
//! AVX2 registers (a tile cut by the edge by masked loads), or without AVX2 through arrays.
//! A gather per position costs several times as much, and a scalar loop a store per value.

use std::mem::MaybeUninit;

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
    // By 8 x 8 tiles where the rows reach them, then the lanes past `rows` zeroed.
    block(
        (bytemuck::cast_slice(src), step),
        rows,
        cols,
        (bytemuck::cast_slice_mut(&mut dst[..LANES * cols]), LANES),
    );
    if rows < LANES {
        for lanes in dst[..LANES * cols].chunks_exact_mut(LANES) {
            lanes[rows..].fill(0.0);
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
    // The `cols` vectors are rows of 16 values: by 8 x 8 tiles where they reach them.
    block(
        (bytemuck::cast_slice(&src[..LANES * cols]), LANES),
        cols,
        rows,
        (bytemuck::cast_slice_mut(dst), step),
    );
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
    // SAFETY: `MaybeUninit<u32>` has `u32`'s layout, and `block_uninit` writes only
    // initialised values, so `dst` holds initialised `u32`s whatever it does.
    let dst = unsafe { &mut *(dst as *mut [u32] as *mut [MaybeUninit<u32>]) };
    block_uninit((src, src_step), rows, cols, (dst, dst_step));
}

/// [`block`] into memory that may not be initialised yet: what it writes is initialised,
/// the rest of `dst` left as it was.
#[inline]
fn block_uninit(
    (src, src_step): (&[u32], usize),
    rows: usize,
    cols: usize,
    (dst, dst_step): (&mut [MaybeUninit<u32>], usize),
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
    #[cfg(target_arch = "x86_64")]
    if crate::simd::unit() == crate::simd::Unit::Avx2 {
        // SAFETY: AVX2 is available; the assert bounds every read and write as above.
        unsafe {
            avx2::block(
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
    block_by_eights((src, src_step), rows, cols, (dst, dst_step));
}

/// `dst[j * rows + i] = src[i * cols + j]`: the row-major `rows x cols` matrix `src`
/// transposed into `dst`, by [`block`]s (a kernel's `[channels, positions]` product into a
/// channel-last output).
///
/// Panics when either slice is not `rows * cols` long (a caller's bug).
pub fn matrix_into<'a>(
    src: &[f32],
    rows: usize,
    cols: usize,
    dst: &'a mut [MaybeUninit<f32>],
) -> &'a mut [f32] {
    assert!(
        rows.checked_mul(cols)
            .is_some_and(|n| src.len() == n && dst.len() == n),
        "matrix transpose of the wrong size"
    );
    transposed_into((src, cols), rows, cols, dst)
}

/// `dst[j * rows + i] = src[i * step + j]` for `i < rows`, `j < cols`: columns `0..cols` of
/// `rows` runs `step` apart, transposed by [`block`]s into the whole of `dst`, which may not
/// have been initialised (writing zeros first was a tenth of a convolution's time); returned
/// initialised.
///
/// Panics when `dst` is not `rows * cols` long or `src` does not reach (a caller's bug).
pub fn transposed_into<'a>(
    (src, step): (&[f32], usize),
    rows: usize,
    cols: usize,
    dst: &'a mut [MaybeUninit<f32>],
) -> &'a mut [f32] {
    assert!(
        rows.checked_mul(cols).is_some_and(|n| dst.len() == n),
        "transpose into a slice of the wrong size"
    );
    let src: &[u32] = bytemuck::cast_slice(src);
    // SAFETY: `MaybeUninit<f32>` and `MaybeUninit<u32>` have one layout, and only `u32`
    // bit patterns (each valid as an `f32`) are written through the cast.
    let dst32 = unsafe { &mut *(dst as *mut [MaybeUninit<f32>] as *mut [MaybeUninit<u32>]) };
    for i0 in (0..rows).step_by(LANES) {
        for j0 in (0..cols).step_by(LANES) {
            // `block_uninit` checks that `src` reaches row `i0 + 15`'s columns.
            block_uninit(
                (&src[(i0 * step + j0).min(src.len())..], step),
                LANES.min(rows - i0),
                LANES.min(cols - j0),
                (&mut dst32[j0 * rows + i0..], rows),
            );
        }
    }
    // SAFETY: the blocks tile `0..rows x 0..cols`, and the block at `(i0, j0)` wrote
    // `dst[j * rows + i]` for each of its `i`, `j`: together every index `j * rows + i`
    // with `i < rows`, `j < cols`, which is each of the `rows * cols` slots of `dst` (its
    // length, asserted). `MaybeUninit<f32>` has `f32`'s layout.
    unsafe { &mut *(dst as *mut [MaybeUninit<f32>] as *mut [f32]) }
}

/// [`block`] without AVX-512 or AVX2: whole 8 x 8 tiles through fixed-size arrays, the
/// edges a value at a time. The caller checked the bounds.
#[inline(always)]
fn block_by_eights(
    (src, src_step): (&[u32], usize),
    rows: usize,
    cols: usize,
    (dst, dst_step): (&mut [MaybeUninit<u32>], usize),
) {
    const T: usize = 8;
    let (whole_rows, whole_cols) = (rows / T * T, cols / T * T);
    for i0 in (0..whole_rows).step_by(T) {
        for j0 in (0..whole_cols).step_by(T) {
            let tile: [[u32; T]; T] = std::array::from_fn(|i| {
                src[(i0 + i) * src_step + j0..][..T]
                    .try_into()
                    .expect("T values")
            });
            for j in 0..T {
                let row = &mut dst[(j0 + j) * dst_step + i0..][..T];
                for (i, v) in row.iter_mut().enumerate() {
                    v.write(tile[i][j]);
                }
            }
        }
    }
    for i in 0..rows {
        let from = if i < whole_rows { whole_cols } else { 0 };
        for j in from..cols {
            dst[j * dst_step + i].write(src[i * src_step + j]);
        }
    }
}

/// `x`, `items` images `[channels, *spatial]` (the spatial dims flattened), moved to
/// `[*spatial, channels]` in parallel runs of 16 pixels by [`block`]s of 16 channels: a
/// kernel that reads every channel of a pixel at a time (ROIAlign's bins, a convolution's
/// patch rows) reads them as one run. Each block reads 16 channels' runs of one cache line
/// and writes 16 pixels' runs; reading a pixel of every channel at a time read `channels`
/// runs whose planes lie a multiple of 4 KiB apart on power-of-two images (one L1 set), and a
/// scalar store per value took twice as long as the tiles.
pub fn channels_last(
    x: &[f32],
    items: usize,
    channels: usize,
) -> Result<Vec<f32>, crate::error::OpError> {
    let c = channels.max(1);
    let plane = x.len() / (items * c).max(1);
    crate::par::build(x.len(), LANES * c, &|start, fill| {
        let mut pixel = start / c;
        while fill.remaining() > 0 {
            let (item, p0) = (pixel / plane, pixel % plane);
            let len = LANES.min(plane - p0).min(fill.remaining() / c);
            let src = &x[(item * c * plane + p0).min(x.len())..];
            fill.init_with(len * c, |dst| transposed_into((src, plane), c, len, dst));
            pixel += len;
        }
    })
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
mod avx2 {
    use std::arch::x86_64::*;

    /// [`super::avx512::block`] on AVX2: 8 x 8 tiles through eight registers (the
    /// fixed-size arrays of `block_by_eights` compiled to a shuffle and a 4-byte store per
    /// value: the depthwise channel blocks spent eight times their multiply-adds' time in
    /// them). A tile cut by the block's edge loads its rows' first lanes by masked loads and
    /// stores its columns' first values through a buffer (AVX2's masked stores are
    /// microcoded on AMD); 7- and 14-wide planes have such tiles in every row.
    ///
    /// # Safety
    /// AVX2 must be available; `src` readable at `i * src_step + j` and `dst` writable at
    /// `j * dst_step + i` for `i < rows`, `j < cols`.
    #[target_feature(enable = "avx2")]
    pub unsafe fn block(
        src: *const f32,
        src_step: usize,
        rows: usize,
        cols: usize,
        dst: *mut f32,
        dst_step: usize,
    ) {
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for i0 in (0..rows).step_by(8) {
            let height = 8.min(rows - i0);
            for j0 in (0..cols).step_by(8) {
                let width = 8.min(cols - j0);
                let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(width as i32), lanes);
                // Eight registers whatever `height`, so that the rows stay in registers.
                let mut r = [_mm256_setzero_ps(); 8];
                for (i, v) in r.iter_mut().enumerate() {
                    let at = src.add((i0 + i) * src_step + j0);
                    if i < height {
                        *v = if width == 8 {
                            _mm256_loadu_ps(at)
                        } else {
                            _mm256_maskload_ps(at, mask)
                        };
                    }
                }
                for (j, v) in transpose(r).iter().enumerate().take(width) {
                    let at = dst.add((j0 + j) * dst_step + i0);
                    if height == 8 {
                        _mm256_storeu_ps(at, *v);
                    } else {
                        let mut buf = [0f32; 8];
                        _mm256_storeu_ps(buf.as_mut_ptr(), *v);
                        for (i, &b) in buf.iter().enumerate().take(height) {
                            *at.add(i) = b;
                        }
                    }
                }
            }
        }
    }

    /// Row `j` of the result is column `j` of `r`: interleaves of row pairs, then of pairs
    /// of pairs within each 128-bit half, then the halves exchanged. Moves and shuffles
    /// only, so any bits pass unchanged.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn transpose(r: [__m256; 8]) -> [__m256; 8] {
        let mut t = [_mm256_setzero_ps(); 8];
        for i in 0..4 {
            t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        // Per half: `u[4g + m]` holds column `m` (and `m + 4` in the upper half) of rows
        // `4g .. 4g + 4`.
        let mut u = [_mm256_setzero_ps(); 8];
        for g in 0..2 {
            let [a, b, c, d] = [t[4 * g], t[4 * g + 1], t[4 * g + 2], t[4 * g + 3]];
            u[4 * g] = _mm256_shuffle_ps::<0x44>(a, c);
            u[4 * g + 1] = _mm256_shuffle_ps::<0xEE>(a, c);
            u[4 * g + 2] = _mm256_shuffle_ps::<0x44>(b, d);
            u[4 * g + 3] = _mm256_shuffle_ps::<0xEE>(b, d);
        }
        let mut out = [_mm256_setzero_ps(); 8];
        for m in 0..4 {
            out[m] = _mm256_permute2f128_ps::<0x20>(u[m], u[4 + m]);
            out[m + 4] = _mm256_permute2f128_ps::<0x31>(u[m], u[4 + m]);
        }
        out
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
        let mut r = [_mm512_setzero_ps(); 16];
        for (i, v) in r.iter_mut().enumerate() {
            if i < rows {
                *v = _mm512_maskz_loadu_ps(m, src.add(i * step));
            }
        }
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
        let mut r = [_mm512_setzero_ps(); 16];
        for (j, v) in r.iter_mut().enumerate() {
            if j < cols {
                *v = _mm512_loadu_ps(src.add(16 * j));
            }
        }
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
        let mut r = [_mm512_setzero_ps(); 16];
        for (i, v) in r.iter_mut().enumerate() {
            if i < rows {
                *v = _mm512_maskz_loadu_ps(mc, src.add(i * src_step));
            }
        }
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
    /// column. A function with the feature enabled is inlined only as its optimiser sees
    /// fit (called, it passed the sixteen registers through memory), and one without it
    /// does not inline the intrinsics, so every caller has its own copy; loops, not
    /// closures, which would not inherit the feature.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn transpose(r: [__m512; 16]) -> [__m512; 16] {
        let mut t = [_mm512_setzero_ps(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
        }
        let mut u = [_mm512_setzero_pd(); 16];
        for g in 0..4 {
            let [a, b, c, d] = [t[4 * g], t[4 * g + 1], t[4 * g + 2], t[4 * g + 3]];
            let (a, b) = (_mm512_castps_pd(a), _mm512_castps_pd(b));
            let (c, d) = (_mm512_castps_pd(c), _mm512_castps_pd(d));
            u[4 * g] = _mm512_unpacklo_pd(a, c);
            u[4 * g + 1] = _mm512_unpackhi_pd(a, c);
            u[4 * g + 2] = _mm512_unpacklo_pd(b, d);
            u[4 * g + 3] = _mm512_unpackhi_pd(b, d);
        }
        let mut out = [_mm512_setzero_ps(); 16];
        for m in 0..4 {
            // Chunks 0 and 2, then 1 and 3, of row groups 0 and 1 (`v0`, `v1`) and 2 and 3.
            let (r0, r1) = (_mm512_castpd_ps(u[m]), _mm512_castpd_ps(u[4 + m]));
            let (r2, r3) = (_mm512_castpd_ps(u[8 + m]), _mm512_castpd_ps(u[12 + m]));
            let v0 = _mm512_shuffle_f32x4::<0x88>(r0, r1);
            let v1 = _mm512_shuffle_f32x4::<0xdd>(r0, r1);
            let w0 = _mm512_shuffle_f32x4::<0x88>(r2, r3);
            let w1 = _mm512_shuffle_f32x4::<0xdd>(r2, r3);
            out[m] = _mm512_shuffle_f32x4::<0x88>(v0, w0);
            out[8 + m] = _mm512_shuffle_f32x4::<0xdd>(v0, w0);
            out[4 + m] = _mm512_shuffle_f32x4::<0x88>(v1, w1);
            out[12 + m] = _mm512_shuffle_f32x4::<0xdd>(v1, w1);
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

    /// The AVX2 tiles where the CPU has AVX2 (else the plain ones), whatever the entry point
    /// picks here.
    fn by_avx2(src: (&[u32], usize), rows: usize, cols: usize, dst: (&mut [u32], usize)) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let fits = |n: usize, step: usize, width: usize, have: usize| {
                n == 0 || width == 0 || (n - 1) * step + width <= have
            };
            assert!(fits(rows, src.1, cols, src.0.len()) && fits(cols, dst.1, rows, dst.0.len()));
            // SAFETY: AVX2 is available, and the assert bounds every read and write.
            unsafe {
                avx2::block(
                    src.0.as_ptr().cast(),
                    src.1,
                    rows,
                    cols,
                    dst.0.as_mut_ptr().cast(),
                    dst.1,
                )
            };
            return;
        }
        by_eights(src, rows, cols, dst);
    }

    /// [`block_by_eights`] into initialised values, which it leaves as they were where it
    /// does not write.
    fn by_eights(src: (&[u32], usize), rows: usize, cols: usize, dst: (&mut [u32], usize)) {
        let mut slots: Vec<MaybeUninit<u32>> = dst.0.iter().map(|&v| MaybeUninit::new(v)).collect();
        block_by_eights(src, rows, cols, (&mut slots, dst.1));
        for (d, s) in dst.0.iter_mut().zip(&slots) {
            // SAFETY: every slot was initialised from `dst` above and only written since.
            *d = unsafe { s.assume_init() };
        }
    }

    /// Blocks of every size up to 16 x 16 between steps wider than the block, as the
    /// definition puts them, every bit kept (NaN payloads, subnormals); nothing else of the
    /// destination is written. The entry point (AVX-512 or AVX2 where the CPU has them), the
    /// AVX2 tiles and the plain 8 x 8 tiles.
    #[test]
    fn transposes_blocks_of_any_size() {
        let (ss, ds) = (19, 23);
        let src: Vec<u32> = (0..16 * ss as u32)
            .map(|v| match v % 3 {
                0 => v,
                1 => 0x7fc0_0000 | v,
                _ => 0xff80_0001 + v,
            })
            .collect();
        type Transpose = fn((&[u32], usize), usize, usize, (&mut [u32], usize));
        let ways: [Transpose; 3] = [block, by_avx2, by_eights];
        for (rows, cols) in (0..=16).flat_map(|r| (0..=16).map(move |c| (r, c))) {
            for way in ways {
                let mut dst = vec![u32::MAX; 16 * ds];
                way((&src, ss), rows, cols, (&mut dst, ds));
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

    /// Matrices cut by the 16 x 16 blocks unevenly on both sides, and ones of a single row
    /// or column, land transposed, every value (NaN payloads too) bit for bit.
    #[test]
    fn transposes_whole_matrices() {
        for (rows, cols) in [
            (1, 1),
            (1, 37),
            (37, 1),
            (16, 16),
            (32, 513),
            (45, 20),
            (3, 50),
        ] {
            let src: Vec<f32> = (0..rows * cols)
                .map(|v| f32::from_bits(0x7fc0_0000 | v as u32))
                .collect();
            let mut slots = vec![MaybeUninit::uninit(); rows * cols];
            let dst = matrix_into(&src, rows, cols, &mut slots);
            for i in 0..rows {
                for j in 0..cols {
                    let (got, want) = (dst[j * rows + i], src[i * cols + j]);
                    assert_eq!(got.to_bits(), want.to_bits(), "{rows}x{cols} at {i},{j}");
                }
            }
            // The first `cols` columns of rows 3 values longer.
            let step = cols + 3;
            let wide: Vec<f32> = (0..rows * step).map(|v| v as f32).collect();
            let mut slots = vec![MaybeUninit::uninit(); rows * cols];
            let dst = transposed_into((&wide, step), rows, cols, &mut slots);
            for i in 0..rows {
                for j in 0..cols {
                    assert_eq!(
                        dst[j * rows + i],
                        wide[i * step + j],
                        "{rows}x{cols} at {i},{j}"
                    );
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "wrong size")]
    fn refuses_a_matrix_of_the_wrong_size() {
        matrix_into(&[0.0; 6], 2, 3, &mut [MaybeUninit::uninit(); 5]);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn rejects_a_source_too_short() {
        to_lanes(&[0.0; 20], 5, 4, 6, &mut [0.0; 96]);
    }
}
