//! The convolution as GEMMs over blocks of output positions, for the f32 convolutions that
//! neither the direct kernels nor the GEMM by position rows take (large planes, few input
//! channels): each task writes its block's patch matrix `[ci * taps, positions]` row by row
//! (a contiguous copy at stride 1, every other value at stride 2: `gather_run`), multiplies
//! it by the group's packed filters and copies the product's rows into the output planes
//! (`stretches.rs`), with the epilogue. Any batch, group count and rank.
//!
//! Why not rten-gemm's virtual im2col, which ran these before: it gathers every patch value
//! one at a time with its bounds checks, which took more time than the product itself on
//! the segmenter's 160x160 and 320x320 layers (30% of the model against 23% in the GEMM's
//! kernel); the two 3x3 stride-2 layers took 25 and 20 ms, 11-15 and 10-14 here.
//!
//! The product is rten-gemm's, or for shallow patches (a stem's 3 channels by 3x3 or 7x7)
//! the pointwise kernel's tiles (`pointwise.rs`), which read the patch rows where they lie
//! instead of packing them again: on 27 rows rten-gemm's packing, edges and stores cost
//! as much as its multiply-adds. Both cut the depth, in (channel, tap) order, into the
//! same blocks of 256 whatever the columns, each a chain of fused multiply-adds, so every
//! output is the same chain of operations in either form, at any block size and thread
//! count, and the same as the plain GEMM over the whole patch matrix that unprepared
//! filters of other element types run.

use std::cell::Cell;

use irun_opkit::epilogue::{Channels, Epilogue};
use irun_tensor::Tensor;
use rten_gemm::{GemmInputA, GemmInputB, GemmUninitOptions, PackedAMatrix};

use crate::channel_rows::ChannelRows;
use crate::conv::{f32_values, Geometry};
use crate::gemm::{view, F32_GEMM};
use crate::op::{codes, OpError};
use crate::pointwise::PointwiseFilters;
use crate::stretches::write_in_stretches;

/// At most this many bytes of patches per block.
const PATCH_BLOCK_BYTES: usize = 1 << 20;

/// The deepest patches the pointwise tiles multiply. Past one depth block of the sums
/// (256), rten-gemm's 6x16 kernel on patches it packs again beats the tiles' 4x16 on rows
/// in place: 2.6-3.2 ms against 3.2-4.2 for 288 (32 channels by 3x3, onto 160x160), while the
/// tiles win on stems (3 channels by 3x3: 0.28-0.33 ms against 0.21-0.30; by 7x7, 64
/// filters: 3.1-3.3 against 3.5-4.5).
const TILES_MAX_DEPTH: usize = 256;

/// At most this many output positions per block.
const BLOCK_POSITIONS: usize = 512;

thread_local! {
    /// A task's patch matrix and product, kept between tasks. Taken out while in use: a task
    /// that waits in rten-gemm's fork may run another task on this thread, which then finds
    /// an empty buffer and makes its own.
    static BUFFERS: Cell<(Vec<f32>, Vec<f32>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

/// Per group, the filters `[co, ci * taps]` as the left operand of each block's product.
pub(crate) enum BlockFilters {
    /// Tiles for the pointwise kernel, which reads the patch rows where they are: kernels
    /// with more than one tap, where this CPU runs it; with one group, the filters also as
    /// rows for the product written channel-last, where that kernel takes them.
    Tiles(Vec<PointwiseFilters>, Option<ChannelRows>),
    /// rten-gemm's packed operand, which packs the patches again for its own kernel: the
    /// pointwise GEMM (`conv_gemm.rs`) runs 1x1 kernels on it.
    Gemm(Vec<PackedAMatrix<f32>>),
}

impl BlockFilters {
    /// How many groups it holds.
    pub(crate) fn len(&self) -> usize {
        match self {
            BlockFilters::Tiles(t, _) => t.len(),
            BlockFilters::Gemm(g) => g.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Filters `[G, co, ci, *k]` (`k = ci * taps` values per output channel) packed per group:
/// as pointwise tiles when there is more than one tap, the depth is at most
/// [`TILES_MAX_DEPTH`] and this CPU runs them, else as rten-gemm's left operand `[co, k]`.
pub(crate) fn pack(w: &[f32], groups: usize, co: usize, k: usize, taps: usize) -> BlockFilters {
    let tiles = (taps > 1 && k <= TILES_MAX_DEPTH).then(|| pack_tiles(w, groups, co, k));
    tiles
        .flatten()
        .unwrap_or_else(|| pack_gemm(w, groups, co, k))
}

/// The filters as pointwise tiles, where this CPU runs them.
fn pack_tiles(w: &[f32], groups: usize, co: usize, k: usize) -> Option<BlockFilters> {
    let tiles = (0..groups).map(|grp| PointwiseFilters::new(&w[grp * co * k..][..co * k], co, k));
    let rows = if groups == 1 {
        ChannelRows::new(w, co, k)
    } else {
        None
    };
    Some(BlockFilters::Tiles(tiles.collect::<Option<_>>()?, rows))
}

/// The filters as rten-gemm's left operand.
fn pack_gemm(w: &[f32], groups: usize, co: usize, k: usize) -> BlockFilters {
    let group = |grp: usize| view(co, k, &w[grp * co * k..][..co * k], (k as isize, 1));
    BlockFilters::Gemm(
        (0..groups)
            .map(|grp| F32_GEMM.with(|e| e.prepack_a(group(grp))))
            .collect(),
    )
}

/// The distance between patch rows for blocks of `cols` positions: whole 64-byte lines, an
/// odd number of them, so that a kernel reading one strip of columns down the rows meets
/// every L1 set. Rows of 512 values (2 KiB) put every strip in two sets of the 64, so the
/// pointwise kernel read a 288-row strip from L2 again for each block of channels.
fn patch_stride(cols: usize) -> usize {
    let lines = cols.div_ceil(16);
    16 * (lines | 1)
}

impl Geometry {
    /// Whether [`Self::run_in_im2col_blocks`] takes it: a kernel that needs patches (not a
    /// 1x1 one at stride 1, whose patches are the input) and more than one output position
    /// (one is a matrix times a vector, which `Mul::gemm` serves).
    pub(crate) fn runs_in_im2col_blocks(&self) -> bool {
        !self.is_pointwise() && self.out.iter().product::<usize>() > 1
    }

    /// Output positions per block for patches of `k` values: [`PATCH_BLOCK_BYTES`] of
    /// patches, a multiple of 16 positions (rten-gemm's column tile), blocks of equal size
    /// but the last.
    fn block_positions(&self, k: usize) -> usize {
        let positions: usize = self.out.iter().product();
        let target = (PATCH_BLOCK_BYTES / 4 / k.max(1)).clamp(16, BLOCK_POSITIONS);
        let blocks = positions.div_ceil(target).max(1);
        positions.div_ceil(blocks).next_multiple_of(16)
    }

    /// The convolution of `data` by `packed` (per group, the filters `[co, ci * taps]` as
    /// pointwise tiles or rten-gemm's left operand) in blocks of `block` output positions
    /// (`None`: [`Self::block_positions`]), any batch, group count and rank; `epilogue`
    /// applied to each block as it is written, and with `channels_last` (one group only)
    /// each block's product transposed into the output `[n, positions, co]` (`shape`
    /// reordered so) as it is written.
    pub(crate) fn run_in_im2col_blocks(
        &self,
        data: &Tensor,
        packed: &BlockFilters,
        mut shape: Vec<usize>,
        (epilogue, channels_last): (Option<&Epilogue>, bool),
        block: Option<usize>,
    ) -> Result<Tensor, OpError> {
        let x = f32_values(data)?;
        let taps: usize = self.kernel.iter().product();
        let k = self.ci * taps;
        let positions: usize = self.out.iter().product();
        let item_len = self.ci * self.input.iter().product::<usize>();
        let items = self.n * self.groups;
        if packed.len() != self.groups
            || x.len() != items * item_len
            || k == 0
            || (channels_last && self.groups != 1)
        {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: filters packed for another convolution",
            ));
        }
        let block = block.unwrap_or_else(|| self.block_positions(k)).max(1);
        let layout = Channels::Planes {
            channels: self.groups * self.co,
            plane: positions,
        };
        // Channel-last, a task's positions of every channel are one stretch of `cols * co`
        // values (one group: the item's channels are the group's).
        let (planes, width) = if channels_last {
            (1, self.co)
        } else {
            (self.co, 1)
        };
        let (plane, stretch) = (positions * width, block * width);
        let out = write_in_stretches(items, planes, plane, stretch, &|t, share| {
            let (first, cols) = (share.first / width, share.len() / width);
            if cols == 0 {
                return Ok(());
            }
            let (mut patches, mut product) = BUFFERS.take();
            let stride = patch_stride(cols);
            patches.resize(k * stride, 0.0);
            let xg = &x[share.item * item_len..][..item_len];
            for (row, dst) in patches.chunks_exact_mut(stride).enumerate() {
                self.im2col_row(xg, row, taps, first, &mut dst[..cols]);
            }
            let grp = share.item % self.groups;
            if let (true, BlockFilters::Tiles(_, Some(rows))) = (channels_last, packed) {
                share.init_with(0, self.co * cols, |dst| {
                    rows.product((&patches, stride), cols, dst, epilogue)
                });
                BUFFERS.set((patches, product));
                return Ok(());
            }
            let c = match packed {
                BlockFilters::Tiles(tiles, _) => {
                    product.resize(self.co * cols, 0.0);
                    let epilogue = (epilogue, grp * self.co);
                    tiles[grp].product((&patches, stride), cols, &mut product, epilogue);
                    &mut product[..]
                }
                BlockFilters::Gemm(gemm) => {
                    product.clear();
                    product.reserve(self.co * cols);
                    let c = F32_GEMM.with(|e| {
                        e.gemm_uninit(
                            &mut product.spare_capacity_mut()[..self.co * cols],
                            GemmInputA::Packed(&gemm[grp]),
                            GemmInputB::Unpacked(view(k, cols, &patches, (stride as isize, 1))),
                            GemmUninitOptions::default(),
                        )
                        .map_err(|e| (t, OpError::new(codes::INTERNAL, e.to_string())))
                    })?;
                    if let Some(e) = epilogue {
                        for (o, row) in c.chunks_exact_mut(cols).enumerate() {
                            let plane = share.item * self.co + o;
                            e.apply_at(row, plane * positions + first, layout);
                        }
                    }
                    c
                }
            };
            if channels_last {
                share.init_with(0, c.len(), |dst| {
                    irun_opkit::transpose16::matrix_into(c, self.co, cols, dst)
                });
            } else {
                for (o, row) in c.chunks_exact(cols).enumerate() {
                    share.push(o, row);
                }
            }
            BUFFERS.set((patches, product));
            Ok(())
        })?;
        if channels_last && shape.len() > 1 {
            shape[1..].rotate_left(1);
        }
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv_testing::{cases, reference, values};

    /// The filters in each form this CPU runs (the tiles whatever the depth and taps), named.
    fn forms(w: &[f32], g: &Geometry, k: usize) -> Vec<(&'static str, BlockFilters)> {
        let mut forms = vec![("gemm", pack_gemm(w, g.groups, g.co, k))];
        if let Some(tiles) = pack_tiles(w, g.groups, g.co, k) {
            forms.push(("tiles", tiles));
        }
        forms
    }

    /// Batches, groups, 1-, 2- and 3-D planes, strides, dilations, padding past the kernel's
    /// reach and more than one depth block, filters as rten-gemm's operand and as pointwise
    /// tiles: within f32 rounding of the definition, and in blocks of 16 or 48 positions or
    /// the chosen ones, at 1, 2 and 3 threads, bit for bit the plain GEMM over the whole
    /// patch matrix (what other element types run).
    #[test]
    fn matches_the_definition_and_the_whole_gemm_in_any_blocks() {
        for (i, g) in cases().iter().enumerate() {
            let taps: usize = g.kernel.iter().product();
            let k = g.ci * taps;
            let x = values(
                g.n * g.groups * g.ci * g.input.iter().product::<usize>(),
                3 + i as u32,
            );
            let w = values(g.groups * g.co * k, 57 + i as u32);
            let want = reference(g, &x, &w);
            let data = Tensor::from_f32(vec![x.len()], x.clone()).unwrap();
            let filters = Tensor::from_f32(vec![w.len()], w.clone()).unwrap();
            let whole = g.run::<f32>(&data, &filters, vec![want.len()]).unwrap();
            let whole = whole.values::<f32>().unwrap();
            let blocks = [Some(16), Some(48), None];
            for ((form, packed), block) in
                forms(&w, g, k).iter().flat_map(|f| blocks.map(|b| (f, b)))
            {
                for threads in 1..=3 {
                    let got = irun_opkit::testing::on_threads(threads, || {
                        g.run_in_im2col_blocks(
                            &data,
                            packed,
                            vec![want.len()],
                            (None, false),
                            block,
                        )
                    })
                    .unwrap();
                    let got = got.values::<f32>().unwrap();
                    let at = format!("case {i}, {form}, blocks of {block:?}, {threads} threads");
                    assert_eq!(got.len(), want.len(), "{at}");
                    for (j, (&a, &b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (f64::from(a) - b).abs() <= 1e-5 * (1.0 + b.abs()),
                            "{at}, output {j}: {a} vs {b}"
                        );
                    }
                    irun_opkit::testing::assert_same_bits(got, whole, at);
                }
            }
        }
    }

    /// Written channel-last, each one-group case is the planar output moved to `[n,
    /// *spatial, co]` bit for bit, epilogue included, in blocks that cut the positions
    /// unevenly and in the chosen ones, at 1 and 3 threads, in both filter forms; more than
    /// one group is refused.
    #[test]
    fn channel_last_output_is_the_planar_one_moved() {
        for (i, g) in cases().iter().enumerate() {
            let k = g.ci * g.kernel.iter().product::<usize>();
            let x = values(
                g.n * g.groups * g.ci * g.input.iter().product::<usize>(),
                7 + i as u32,
            );
            let w = values(g.groups * g.co * k, 11 + i as u32);
            let data = Tensor::from_f32(vec![x.len()], x).unwrap();
            let positions: usize = g.out.iter().product();
            let channels = g.groups * g.co;
            let shape = vec![g.n, channels, positions];
            let e = Epilogue {
                bias: Some((0..channels).map(|c| c as f32 - 3.5).collect()),
                bias_axis_from_end: 2,
                activation: irun_opkit::epilogue::Activation::Relu,
            };
            for (form, packed) in forms(&w, g, k) {
                if g.groups != 1 {
                    let last =
                        g.run_in_im2col_blocks(&data, &packed, shape.clone(), (None, true), None);
                    assert!(last.is_err(), "case {i}: {} groups channel-last", g.groups);
                    continue;
                }
                for (epilogue, block, threads) in [
                    (None, Some(48), 1),
                    (Some(&e), None, 3),
                    (Some(&e), Some(16), 1),
                ] {
                    let run = |last| {
                        irun_opkit::testing::on_threads(threads, || {
                            g.run_in_im2col_blocks(
                                &data,
                                &packed,
                                shape.clone(),
                                (epilogue, last),
                                block,
                            )
                        })
                        .unwrap()
                    };
                    let (planar, last) = (run(false), run(true));
                    let at = format!("case {i}, {form}, blocks of {block:?}, {threads} threads");
                    assert_eq!(last.shape(), [g.n, positions, channels], "{at}");
                    let planar = planar.values::<f32>().unwrap();
                    let want =
                        irun_opkit::testing::moved_channels_last(planar, channels, positions);
                    irun_opkit::testing::assert_same_bits(last.values::<f32>().unwrap(), &want, at);
                }
            }
        }
    }

    /// The epilogue lands on each output's own channel: a bias of the channel's index and a
    /// ReLU, on two items of three groups, in blocks that cut the planes unevenly, with
    /// the filters in each form.
    #[test]
    fn applies_the_epilogue_by_output_channel() {
        let g = &cases()[1];
        let k = g.ci * g.kernel.iter().product::<usize>();
        let x = values(g.n * g.groups * g.ci * g.input.iter().product::<usize>(), 5);
        let w = values(g.groups * g.co * k, 6);
        let data = Tensor::from_f32(vec![x.len()], x).unwrap();
        for (form, packed) in forms(&w, g, k) {
            epilogue_lands_by_channel(g, &data, &packed, form);
        }
    }

    fn epilogue_lands_by_channel(g: &Geometry, data: &Tensor, packed: &BlockFilters, form: &str) {
        let channels = g.groups * g.co;
        let e = Epilogue {
            bias: Some((0..channels).map(|c| c as f32).collect()),
            bias_axis_from_end: 2,
            activation: irun_opkit::epilogue::Activation::Relu,
        };
        let len = g.n * channels * g.out.iter().product::<usize>();
        let plain = g.run_in_im2col_blocks(data, packed, vec![len], (None, false), Some(16));
        let mut want = plain.unwrap().values::<f32>().unwrap().to_vec();
        let layout = Channels::Planes {
            channels,
            plane: g.out.iter().product(),
        };
        e.apply(&mut want, layout);
        let got = g.run_in_im2col_blocks(data, packed, vec![len], (Some(&e), false), Some(16));
        irun_opkit::testing::assert_same_bits(got.unwrap().values::<f32>().unwrap(), &want, form);
    }
}
