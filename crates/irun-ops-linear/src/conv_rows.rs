//! The convolution as GEMMs whose rows are output positions: for each block of positions,
//! its patches `[positions, taps * ci]` times the filters `[taps * ci, co]` (packed once by
//! rten-gemm as its right operand), and the block's `[positions, co]` transposed into the
//! output planes. A patch row is one copy of `ci` values per tap from a channel-last copy of
//! the input, so the depth runs over (tap, channel).
//!
//! Why this orientation rather than filters times patches: rten-gemm's AVX2 tile is 6 rows
//! by 16 columns, and a plane of 7x7 positions as the columns fills 49 of 64, as the rows 49
//! of 54; and rten-gemm shares the columns between the threads in whole blocks, packing its
//! left operand per block, where the other way it packs the patches on one thread and forks
//! the filters' row blocks once per depth block (18 times for 512 channels of 3x3). On
//! ResNet-18's 3x3 layers the product alone ran 1.1-1.45x faster this way at one and two
//! threads (docs/benchmarks.md, 2026-11-28).
//!
//! Each output is one chain of multiply-adds over (tap, channel) in rten-gemm's depth blocks
//! whatever the blocks of positions and the thread count; unprepared filters are packed per
//! run and take the same path, so `irun run` gives the same bits as a compiled model.

use irun_opkit::epilogue::{Channels, Epilogue};
use irun_opkit::transpose16;
use irun_tensor::Tensor;
use rten_gemm::{GemmInputA, GemmInputB, GemmOptions, PackedBMatrix};

use crate::conv::{f32_values, Geometry};
use crate::gemm::{view, F32_GEMM};
use crate::op::{codes, OpError};
use crate::par::{self, Filler};

/// Patch blocks hold at least this many values (512 KiB of f32), and more where the filters
/// are large: see [`block_rows`].
const PATCH_BLOCK_VALUES: usize = 1 << 17;

/// Positions per block at least this many times the output channels: each block's product
/// reads all the packed filters (`k x co`) once while it reads `rows x k` patch values, so
/// the filters add at most a quarter to the block's traffic. Blocks of 64 positions made
/// ResNet-18's 14x14 layers read their 2.4 MB of filters four times and run 20% slower than
/// one block.
const ROWS_PER_CHANNEL: usize = 4;

/// Values moved per transpose step, each way (the 16 x 16 blocks of [`transpose16::block`]).
const TILE: usize = 16;

/// Whether filters of `ci` input channels and `taps` taps run by position rows: more than one
/// tap, and at least [`MIN_CHANNELS`] channels. A 1x1 kernel's patches are the input itself
/// (or a strided view of it): MobileNetV3's pointwise layers by position rows took 1.3-2.1x
/// as long as on the filters-by-input GEMM (the copies and transposes outweigh the tiles on
/// such small products).
pub(crate) fn suits(ci: usize, taps: usize) -> bool {
    taps > 1 && ci >= MIN_CHANNELS
}

/// Fewer input channels make a patch row many short copies: a 3-channel 3x3 stride-2 stem
/// (roi_head's backbone) took 4.2 ms by position rows against 2.5 by rten-gemm's virtual
/// im2col (which `conv_blocks.rs` has since replaced, faster still).
const MIN_CHANNELS: usize = 16;

/// Whether a plane of `positions` output positions runs by position rows. Larger planes
/// pay for a channel-last copy of the input and for patches written whole per tap: the
/// segmenter's 3x3 stride-2 layers onto 160x160 (32 -> 64 and 64 -> 20 channels) took 20.7
/// and 29.4 ms by position rows against 18.4 and 25.4 by the virtual im2col, and with
/// planes up to 8000 positions by rows the detector (its 80x80 layer) ran 1.18x as long as
/// on `conv_blocks.rs`. The largest planes measured faster by rows are ResNet-18's 28x28:
/// without this GEMM ResNet-18 took 1.25x as long on `conv_blocks.rs`.
pub(crate) fn suits_plane(positions: usize) -> bool {
    positions <= MAX_POSITIONS
}

/// See [`suits_plane`]: 32x32.
const MAX_POSITIONS: usize = 1024;

/// Filters `[G, co, ci, *k]` packed as the right operand of [`Geometry::run_by_rows`]: per
/// group, `[taps * ci, co]` with the depth in (tap, channel) order.
pub(crate) fn pack(
    w: &[f32],
    groups: usize,
    co: usize,
    ci: usize,
    taps: usize,
) -> Vec<PackedBMatrix<f32>> {
    let k = ci * taps;
    (0..groups)
        .map(|grp| {
            let wg = &w[grp * co * k..][..co * k];
            let mut by_tap = vec![0f32; co * k];
            for (dst, src) in by_tap.chunks_mut(k).zip(wg.chunks(k)) {
                for (c, taps_of_c) in src.chunks(taps).enumerate() {
                    for (t, &v) in taps_of_c.iter().enumerate() {
                        dst[t * ci + c] = v;
                    }
                }
            }
            F32_GEMM.with(|e| e.prepack_b(view(k, co, &by_tap, (1, k as isize))))
        })
        .collect()
}

impl Geometry {
    /// Whether unprepared filters run by position rows: the choice prepared ones make, by
    /// [`suits`] when they are packed and [`suits_plane`] when they run.
    pub(crate) fn runs_by_rows(&self) -> bool {
        suits(self.ci, self.kernel.iter().product()) && suits_plane(self.out.iter().product())
    }

    /// The convolution by blocks of output positions on filters packed by [`pack`], any
    /// batch, group count and rank; `epilogue` applied to each output plane as it is
    /// written.
    pub(crate) fn run_by_rows(
        &self,
        data: &Tensor,
        packed: &[PackedBMatrix<f32>],
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Tensor, OpError> {
        self.run_in_blocks(data, packed, shape, epilogue, None)
    }

    /// [`Self::run_by_rows`] in blocks of `rows` positions (`None`: [`block_rows`]).
    fn run_in_blocks(
        &self,
        data: &Tensor,
        packed: &[PackedBMatrix<f32>],
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
        rows: Option<usize>,
    ) -> Result<Tensor, OpError> {
        let x = f32_values(data)?;
        let positions: usize = self.out.iter().product();
        let taps: usize = self.kernel.iter().product();
        let k = self.ci * taps;
        let item_len = self.ci * self.input.iter().product::<usize>();
        let items = self.n * self.groups;
        if packed.len() != self.groups || x.len() != items * item_len {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: filters packed for another convolution",
            ));
        }
        let (rows, blocks) = rows.map_or_else(
            || block_rows(positions, k, self.co),
            |r| (r, positions.div_ceil(r).max(1)),
        );
        let last = transpose16::channels_last(x, items, self.ci)?;
        // Each (item, block): its patches, then their product with the group's filters.
        let products = par::try_map_tasks(items * blocks, &|t| {
            let (ng, b) = (t / blocks, t % blocks);
            let p0 = b * rows;
            let len = rows.min(positions - p0);
            let xg = &last[ng * item_len..][..item_len];
            let patches = par::build(len * k, TILE * k, &|start, fill| {
                self.patch_rows(xg, p0 + start / k.max(1), fill);
            })
            .map_err(|e| (t, e))?;
            let mut product =
                crate::kernel::try_zeroed::<f32>(len * self.co).map_err(|e| (t, e))?;
            F32_GEMM.with(|e| {
                e.gemm(
                    &mut product,
                    GemmInputA::Unpacked(view(len, k, &patches, (k as isize, 1))),
                    GemmInputB::Packed(&packed[ng % self.groups]),
                    GemmOptions::default(),
                )
                .expect("packed for this geometry")
            });
            Ok(product)
        })?;
        // The output planes, up to 16 channels of one item per step: each block's columns
        // transposed into their rows, then the epilogue while they are in cache.
        let layout = Channels::Planes {
            channels: self.groups * self.co,
            plane: positions,
        };
        let out = par::build(
            items * self.co * positions,
            positions.max(1),
            &|start, fill| {
                let mut plane = start / positions.max(1);
                while fill.remaining() > 0 {
                    let (ng, c0) = (plane / self.co, plane % self.co);
                    let m = TILE.min(self.co - c0).min(fill.remaining() / positions);
                    let dst = fill.repeat_mut(0.0, m * positions);
                    for (b, product) in products[ng * blocks..][..blocks].iter().enumerate() {
                        let p0 = b * rows;
                        let len = product.len() / self.co;
                        for q0 in (0..len).step_by(TILE) {
                            transpose16::block(
                                (bytemuck::cast_slice(&product[q0 * self.co + c0..]), self.co),
                                TILE.min(len - q0),
                                m,
                                (bytemuck::cast_slice_mut(&mut dst[p0 + q0..]), positions),
                            );
                        }
                    }
                    if let Some(e) = epilogue {
                        e.apply_at(dst, plane * positions, layout);
                    }
                    plane += m;
                }
            },
        )?;
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// Rows `first..` of the patch matrix `[positions, taps * ci]` of one item's channel-last
    /// input `x` (`[*input, ci]`, one group's channels), as many as `fill` takes: row `p` is,
    /// tap by tap, the `ci` values the tap meets at output position `p`, 0 in padding.
    fn patch_rows(&self, x: &[f32], first: usize, fill: &mut Filler<'_, f32>) {
        let ci = self.ci;
        let [id, ih, iw] = self.input;
        let [kd, kh, kw] = self.kernel;
        let [_, oh, ow] = self.out;
        let at = |o: usize, k: usize, d: usize, len: usize| {
            let i = (o * self.stride[d] + k * self.dil[d]).checked_sub(self.pad[d])?;
            (i < len).then_some(i)
        };
        let k = ci * kd * kh * kw;
        if k == 0 {
            return;
        }
        let mut p = first;
        while fill.remaining() >= k {
            let (z, y, xo) = (p / (oh * ow), (p / ow) % oh, p % ow);
            for a in 0..kd {
                for b in 0..kh {
                    for e in 0..kw {
                        match (at(z, a, 0, id), at(y, b, 1, ih), at(xo, e, 2, iw)) {
                            (Some(iz), Some(iy), Some(ix)) => {
                                fill.extend_from_slice(&x[((iz * ih + iy) * iw + ix) * ci..][..ci])
                            }
                            _ => fill.repeat(0.0, ci),
                        }
                    }
                }
            }
            p += 1;
        }
    }
}

/// Positions per block and the block count for a plane of `positions`, patches of `k`
/// values and `co` output channels: blocks of [`PATCH_BLOCK_VALUES`] or of
/// [`ROWS_PER_CHANNEL`] rows per channel, whichever is larger, of equal size but the last,
/// a multiple of 8 positions.
fn block_rows(positions: usize, k: usize, co: usize) -> (usize, usize) {
    let target = (PATCH_BLOCK_VALUES / k.max(1))
        .max(ROWS_PER_CHANNEL * co)
        .max(8);
    let blocks = positions.div_ceil(target).max(1);
    let rows = positions.div_ceil(blocks).next_multiple_of(8).max(1);
    (rows, positions.div_ceil(rows).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv_testing::{cases, reference, values};

    /// Batches, groups, 1-, 2- and 3-D planes, strides, dilations and padding past the
    /// kernel's reach, channel counts off the 16 x 16 transposes: within f32 rounding of the
    /// definition, and the same bits in blocks of 8 or 24 positions or the chosen ones, at 1,
    /// 2 and 3 threads (each output is one chain over the depth whatever the blocks).
    #[test]
    fn matches_the_definition_in_any_blocks_at_any_thread_count() {
        for (i, g) in cases().iter().enumerate() {
            let (n, groups, ci, co) = (g.n, g.groups, g.ci, g.co);
            let taps: usize = g.kernel.iter().product();
            let x = values(
                n * groups * ci * g.input.iter().product::<usize>(),
                7 + i as u32,
            );
            let w = values(groups * co * ci * taps, 91 + i as u32);
            let want = reference(g, &x, &w);
            let data = Tensor::from_f32(vec![x.len()], x.clone()).unwrap();
            let positions: usize = g.out.iter().product();
            let mut runs = Vec::new();
            for rows in [Some(8), Some(24), None] {
                for threads in 1..=3 {
                    let got = irun_opkit::testing::on_threads(threads, || {
                        let packed = pack(&w, groups, co, ci, taps);
                        g.run_in_blocks(&data, &packed, vec![want.len()], None, rows)
                    })
                    .unwrap();
                    runs.push((rows, threads, got.values::<f32>().unwrap().to_vec()));
                }
            }
            for (rows, threads, got) in &runs {
                assert_eq!(got.len(), n * groups * co * positions, "case {i}");
                for (j, (&a, &b)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (f64::from(a) - b).abs() <= 1e-5 * (1.0 + b.abs()),
                        "case {i}, {rows:?} rows, {threads} threads, output {j}: {a} vs {b}"
                    );
                }
                assert_eq!(
                    got, &runs[0].2,
                    "case {i}: {rows:?} rows, {threads} threads"
                );
            }
        }
    }
}
