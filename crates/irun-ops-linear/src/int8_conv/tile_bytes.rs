//! A channel-lane tile's bytes (32 channels of up to 16 positions, position-major) moved to
//! and from the channels' planes: by two-source byte permutes where the CPU has AVX-512
//! VBMI, else a byte at a time. The int8 finishing pass writes its levels through
//! [`levels_to_planes`] and reads a residual addend's through [`planes_to_levels`].

use std::arch::x86_64::*;

use super::channel_lanes::CHANNELS;

/// Whether the permute forms run here: AVX-512 F, BW, VL and VNNI
/// ([`super::avx512::available`]) and VBMI.
fn permutes_available() -> bool {
    super::avx512::available() && std::arch::is_x86_feature_detected!("avx512vbmi")
}

/// Moves a tile's levels (`bytes[j][lane]`, position `at + j` of channel `lane`'s plane,
/// `j < real`) into the 32 planes of `out`: by byte permutes where the CPU has AVX-512
/// VBMI, else a byte at a time (384 loads and stores a tile, a third of the tile pass).
#[inline]
pub(super) fn levels_to_planes(
    bytes: &[[u8; CHANNELS]; 16],
    real: usize,
    at: usize,
    plane: usize,
    out: &mut [u8],
) {
    assert!(
        real <= 16 && at + real <= plane && out.len() >= CHANNELS * plane,
        "int8 Convolution: a tile's positions must lie in its 32 planes"
    );
    if permutes_available() {
        // SAFETY: AVX-512 F, BW, VL and VBMI were just detected; the assert above bounds
        // every store (channel `c`'s `real` bytes at `c * plane + at`).
        unsafe { transpose_levels(bytes, real, at, plane, out) };
        return;
    }
    super::channel_lanes::tile_into_planes(bytes, real, at, plane, out);
}

/// The levels of 32 planes at positions `at..at + real` (`real <= 16`), moved into a
/// tile's layout: `bytes[j][lane]` is channel `lane`'s level at position `at + j`, and
/// the rows from `real` on are 0. By byte permutes where the CPU has AVX-512 VBMI, else a
/// byte at a time. The inverse of [`levels_to_planes`].
#[inline]
pub(super) fn planes_to_levels(
    k: &[u8],
    real: usize,
    at: usize,
    plane: usize,
) -> [[u8; CHANNELS]; 16] {
    assert!(
        real <= 16 && at + real <= plane && k.len() >= CHANNELS * plane,
        "int8 Convolution: a tile's positions must lie in its 32 planes"
    );
    if permutes_available() {
        // SAFETY: AVX-512 F, BW, VL and VBMI were just detected; the assert above bounds
        // every load (channel `c`'s `real` bytes at `c * plane + at`).
        return unsafe { transpose_planes(k, real, at, plane) };
    }
    let mut bytes = [[0u8; CHANNELS]; 16];
    for (lane, src) in k.chunks_exact(plane).take(CHANNELS).enumerate() {
        for (row, &b) in bytes.iter_mut().zip(&src[at..at + real]) {
            row[lane] = b;
        }
    }
    bytes
}

/// [`planes_to_levels`] by permutes: each channel's sixteen positions loaded (those from
/// `real` on as 0), four channels a register; output register `s` (positions `2s` and
/// `2s + 1`, 32 channels each) gathered from each pair of those registers by one
/// two-source byte permute and kept where its eight channels are.
///
/// # Safety
/// AVX-512 F, BW, VL and VBMI must be available; `real <= 16`, `at + real <= plane` and
/// `k` must hold 32 planes of `plane` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
unsafe fn transpose_planes(k: &[u8], real: usize, at: usize, plane: usize) -> [[u8; CHANNELS]; 16] {
    let lanes: __mmask16 = if real >= 16 { !0 } else { (1 << real) - 1 };
    let base = k.as_ptr();
    // The masked loads read only channel `c`'s bytes `c * plane + at..` + `real`.
    let load = |c: usize| _mm_maskz_loadu_epi8(lanes, base.add(c * plane + at).cast());
    let columns: [__m512i; 8] = std::array::from_fn(|r| {
        let low =
            _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(load(4 * r)), load(4 * r + 1));
        let high =
            _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(load(4 * r + 2)), load(4 * r + 3));
        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(low), high)
    });
    let mut bytes = [[0u8; CHANNELS]; 16];
    for (s, index) in GATHER_INDEX.iter().enumerate() {
        let z = from_pairs(&columns, index, &GATHER_KEEP);
        // Rows `2s` and `2s + 1`, adjacent in `bytes`.
        _mm512_storeu_si512(bytes[2 * s].as_mut_ptr().cast(), z);
    }
    bytes
}

/// For output register `s`, byte `b` (position `2s + b / 32`, channel `c = b % 32`): the
/// byte of that channel and position in the pair of loaded registers holding `c`
/// (channels `8q..8q + 8` for pair `q`; `0..64` the first register, `64..128` the second).
const GATHER_INDEX: [[u8; 64]; 8] = {
    let mut t = [[0u8; 64]; 8];
    let mut s = 0;
    while s < 8 {
        let mut b = 0;
        while b < 64 {
            let (p, c) = (2 * s + b / 32, b % 32);
            t[s][b] = (((c / 4) % 2) * 64 + (c % 4) * 16 + p) as u8;
            b += 1;
        }
        s += 1;
    }
    t
};

/// The bytes of an output register whose channels are in the `q`-th pair of loaded
/// registers (channels `8q..8q + 8` of each position's 32).
const GATHER_KEEP: [__mmask64; 4] = pair_masks(32);

/// A register of bytes from the four pairs of `sources`: byte `b` is byte `index[b]` of
/// pair `q` (`0..64` its first register, `64..128` its second) where `keep[q]` has `b`.
///
/// # Safety
/// AVX-512 F, BW and VBMI must be available.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
unsafe fn from_pairs(sources: &[__m512i; 8], index: &[u8; 64], keep: &[__mmask64; 4]) -> __m512i {
    let index = _mm512_loadu_si512(index.as_ptr().cast());
    let mut z = _mm512_setzero_si512();
    for (q, &keep) in keep.iter().enumerate() {
        let pair = _mm512_permutex2var_epi8(sources[2 * q], index, sources[2 * q + 1]);
        z = _mm512_mask_blend_epi8(keep, z, pair);
    }
    z
}

/// For a register whose bytes take runs of `period / 4` from each of four pairs of
/// sources in turn, the bytes from each pair.
const fn pair_masks(period: usize) -> [__mmask64; 4] {
    let mut m = [0u64; 4];
    let mut b = 0;
    while b < 64 {
        m[(b % period) / (period / 4)] |= 1 << b;
        b += 1;
    }
    m
}

/// Every tile length, at the start, middle and end of a plane: the permutes read each
/// channel's levels as the byte-at-a-time move does, and the rows past the tile are 0.
#[test]
fn planes_move_into_the_tile_as_one_at_a_time() {
    if !permutes_available() {
        return;
    }
    let plane = 37;
    let k: Vec<u8> = (0..CHANNELS * plane)
        .map(|i| (i * 7 % 251) as u8 ^ 0x5a)
        .collect();
    for real in 1..=16 {
        for at in [0, 9, plane - real] {
            // SAFETY: VBMI (and F, BW, VL) found above; `at + real <= plane`, and `k`
            // holds 32 planes.
            let got = unsafe { transpose_planes(&k, real, at, plane) };
            let mut want = [[0u8; CHANNELS]; 16];
            for (j, row) in want.iter_mut().enumerate().take(real) {
                for (c, b) in row.iter_mut().enumerate() {
                    *b = k[c * plane + at + j];
                }
            }
            assert_eq!(got, want, "real {real}, at {at}");
        }
    }
}

/// [`levels_to_planes`] by permutes: the 16 positions x 32 channels of bytes in eight
/// registers (two positions each); output register `k` holds channels `4k..4k + 4`,
/// sixteen positions each, gathered from each pair of input registers by one two-source
/// byte permute and kept where its four positions are; then each channel's first `real`
/// bytes stored.
///
/// # Safety
/// AVX-512 F, BW, VL and VBMI must be available; `real <= 16`, `at + real <= plane` and
/// `out` must hold 32 planes of `plane` bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vbmi")]
unsafe fn transpose_levels(
    bytes: &[[u8; CHANNELS]; 16],
    real: usize,
    at: usize,
    plane: usize,
    out: &mut [u8],
) {
    // Input register `s` holds positions `2s` and `2s + 1` (bytes `0..32`, `32..64`).
    let rows: [__m512i; 8] =
        std::array::from_fn(|s| _mm512_loadu_si512(bytes[2 * s].as_ptr().cast()));
    let lanes: __mmask16 = if real >= 16 { !0 } else { (1 << real) - 1 };
    let base = out.as_mut_ptr();
    for (k, index) in TRANSPOSE_INDEX.iter().enumerate() {
        let z = from_pairs(&rows, index, &TRANSPOSE_KEEP);
        let to = |a: usize| base.add((4 * k + a) * plane + at).cast();
        _mm_mask_storeu_epi8(to(0), lanes, _mm512_extracti32x4_epi32::<0>(z));
        _mm_mask_storeu_epi8(to(1), lanes, _mm512_extracti32x4_epi32::<1>(z));
        _mm_mask_storeu_epi8(to(2), lanes, _mm512_extracti32x4_epi32::<2>(z));
        _mm_mask_storeu_epi8(to(3), lanes, _mm512_extracti32x4_epi32::<3>(z));
    }
}

/// Every tile length, at the start, middle and end of a plane: the permutes put each
/// channel's levels where the byte-at-a-time move does, and write nothing else.
#[test]
fn levels_move_into_the_planes_as_one_at_a_time() {
    if !permutes_available() {
        return;
    }
    let plane = 37;
    let bytes: [[u8; CHANNELS]; 16] =
        std::array::from_fn(|j| std::array::from_fn(|c| (j * 32 + c) as u8 ^ 0x5a));
    for real in 1..=16 {
        for at in [0, 9, plane - real] {
            let mut got = vec![0xeeu8; CHANNELS * plane];
            // SAFETY: VBMI (and F, BW, VL) found above; `at + real <= plane`, and `got`
            // holds 32 planes.
            unsafe { transpose_levels(&bytes, real, at, plane, &mut got) };
            let mut want = vec![0xeeu8; CHANNELS * plane];
            for (c, dst) in want.chunks_exact_mut(plane).enumerate() {
                for j in 0..real {
                    dst[at + j] = bytes[j][c];
                }
            }
            assert_eq!(got, want, "real {real}, at {at}");
        }
    }
}

/// For output register `k`, byte `b` (channel `4k + b / 16`, position `p = b % 16`): the
/// byte of that channel at position `p` in the pair of input registers holding `p`
/// (`0..64` the first, `64..128` the second).
const TRANSPOSE_INDEX: [[u8; 64]; 8] = {
    let mut t = [[0u8; 64]; 8];
    let mut k = 0;
    while k < 8 {
        let mut b = 0;
        while b < 64 {
            let (channel, p) = (4 * k + b / 16, b % 16);
            t[k][b] = (((p / 2) % 2) * 64 + (p % 2) * 32 + channel) as u8;
            b += 1;
        }
        k += 1;
    }
    t
};

/// The bytes of an output register whose positions are in the `q`-th pair of input
/// registers (positions `4q..4q + 4` of each channel's sixteen).
const TRANSPOSE_KEEP: [__mmask64; 4] = pair_masks(16);
