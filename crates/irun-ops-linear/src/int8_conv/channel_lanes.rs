//! The other blocking, for small planes: 32 output channels in the lanes of two vectors and
//! up to 12 output positions, each input word broadcast. The position blocks (`mod.rs`)
//! compute every position of the padded pitch and whole vectors of 16: a 7x7 output of
//! pitch 9 computes 64 positions for 49 outputs, a 14x14 one 240 for 196. Here only the
//! outputs are computed (the last block repeats the last position), at the same ratio of
//! loads to products (2 weight vectors and `P` broadcasts for `2P` `vpdpbusd`).

use super::layout::{window_sum, Geometry, Scales, MAX_SPAN};
use super::CO_BLOCK;

/// Output channels per block: two vectors of 16.
pub(super) const CHANNELS: usize = 32;
/// [`Scales`] of a block's 32 channels.
pub(super) type ChannelScales = Scales<CHANNELS>;

/// Positions per block, at most (24 accumulators, 2 weights and a broadcast in registers).
pub(super) const MAX_POSITIONS: usize = 12;

/// Moves a block's outputs (`tile[j][lane]`, position `at + j` of channel `lane`'s plane,
/// `j < real`) into the planes of `out` (`plane` values each, at most 32 of them), a value
/// at a time.
pub(super) fn tile_into_planes<T: Copy>(
    tile: &[[T; CHANNELS]],
    real: usize,
    at: usize,
    plane: usize,
    out: &mut [T],
) {
    for (lane, dst) in out.chunks_exact_mut(plane).take(CHANNELS).enumerate() {
        for (d, t) in dst[at..at + real].iter_mut().zip(&tile[..real]) {
            *d = t[lane];
        }
    }
}

/// The weights as this blocking reads them: `[co block of 32][tap][group][32]` words.
pub(super) fn pack(packed_by_eight: &[i32], co: usize, taps: usize, groups: usize) -> Vec<i32> {
    let blocks = co.div_ceil(CHANNELS);
    let mut out = vec![0i32; blocks * taps * groups * CHANNELS];
    for o in 0..co {
        for t in 0..taps {
            for grp in 0..groups {
                let from = (((o / CO_BLOCK) * taps + t) * groups + grp) * CO_BLOCK + o % CO_BLOCK;
                let to = (((o / CHANNELS) * taps + t) * groups + grp) * CHANNELS + o % CHANNELS;
                out[to] = packed_by_eight[from];
            }
        }
    }
    out
}

/// Positions per block for `outputs` positions, if this blocking computes at least 5% fewer
/// than the position blocks of `g` do (for `co` channels): the count from 8 to 12 that
/// leaves the least of the last block empty.
pub(super) fn positions_per_block(g: &Geometry, co: usize) -> Option<usize> {
    let outputs = g.out_h * g.out_w;
    if !co.is_multiple_of(CHANNELS) || outputs == 0 {
        return None;
    }
    let (computed, per_block) = (8..=MAX_POSITIONS)
        .map(|p| (outputs.div_ceil(p) * p, p))
        .min_by_key(|&(computed, p)| (computed, usize::MAX - p))?;
    let by_position = g.positions * co.div_ceil(CO_BLOCK) * CO_BLOCK / co;
    // A product costs more here (10 loads for 16 `vpdpbusd` at 8 positions, against 11 for
    // 24 in the position blocks), so the lanes must save 5% of them: ResNet-18's 28x28
    // layers (784 of 864 positions) ran 5% faster on them, its 56x56 layers and stem (96%
    // and 97%) slower.
    (computed * 100 < by_position * 95).then_some(per_block)
}

/// The word index (without tap and group) of each of a block's positions, from output
/// position `q` (row-major over the output): `oh * pitch + ow`, the last real one repeated
/// past `outputs`.
pub(super) fn flat_positions(g: &Geometry, q: usize, per_block: usize) -> [usize; MAX_POSITIONS] {
    let outputs = g.out_h * g.out_w;
    let mut flat = [0; MAX_POSITIONS];
    for (j, f) in flat[..per_block].iter_mut().enumerate() {
        let at = (q + j).min(outputs - 1);
        *f = (at / g.out_w) * g.pitch + at % g.out_w;
    }
    flat
}

/// A block's outputs one product at a time: `out[j][lane]` for position `flat[j]` and
/// output channel `lane` of the block, converted as [`Scales`] says.
pub(super) fn block_scalar(
    words: &[u32],
    flat: &[usize],
    g: &Geometry,
    weights: &[i32],
    scales: &ChannelScales,
    out: &mut [[f32; CHANNELS]; MAX_POSITIONS],
) {
    for (j, &f) in flat.iter().enumerate() {
        for (lane, y) in out[j].iter_mut().enumerate() {
            *y = scales.output(lane, window_sum(words, f, g, weights, CHANNELS, lane));
        }
    }
}

const _: () = assert!(MAX_POSITIONS <= MAX_SPAN);
