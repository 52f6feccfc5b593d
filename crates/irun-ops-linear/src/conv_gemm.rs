//! The convolution as GEMMs on rten-gemm's packed filters: a virtual im2col that gathers the
//! patches while rten-gemm packs them, and the pointwise case (a 1x1 kernel at stride 1), whose
//! patch matrix is the input itself. Both write the output once, into its capacity.

use irun_tensor::Tensor;
use rten_gemm::{
    ColOffsets, GemmInputA, GemmInputB, GemmOptions, GemmUninitOptions, Im2Col, RowOffsets,
};
use rten_tensor::NdTensorView;

use crate::conv::{f32_values, Geometry, PackedFilters};
use crate::gemm::{view, F32_GEMM};
use crate::kernel::try_zeroed;
use crate::op::{codes, OpError};
use crate::par;
use irun_opkit::epilogue::{Channels, Epilogue};

impl Geometry {
    /// Whether [`Self::run_virtual_im2col`] can run it: at most two spatial dims (rten-gemm's
    /// image is `[C, H, W]`), not a 1x1 kernel that needs no patches at all, and every offset
    /// into the input within `i32` (its offsets' type).
    pub(crate) fn fits_virtual_im2col(&self, input_len: usize) -> bool {
        self.input[0] == 1
            && self.kernel[0] == 1
            && self.out[0] == 1
            && self.pad[0] == 0
            && !self.is_pointwise()
            && self.out.iter().product::<usize>() > 1
            && self.input.iter().all(|&d| d > 0)
            && self.ci > 0
            && self.offsets_fit_i32(input_len)
    }

    /// Every offset [`Self::run_virtual_im2col`] forms, with room for their sums.
    fn offsets_fit_i32(&self, input_len: usize) -> bool {
        let limit = (i32::MAX / 4) as usize;
        let reach = |d: usize| {
            (self.out[d].checked_mul(self.stride[d]))
                .and_then(|v| v.checked_add(self.kernel[d].checked_mul(self.dil[d])?))
                .and_then(|v| v.checked_add(self.pad[d]))
        };
        let rows = reach(1).and_then(|v| v.checked_mul(self.input[2]));
        input_len < limit && rows.is_some_and(|v| v < limit) && reach(2).is_some_and(|v| v < limit)
    }

    /// The convolution as one GEMM per (batch item, group) of the packed filters by a
    /// virtual patch matrix: rten-gemm gathers the patches straight from the input while it
    /// packs each block, so the patch matrix is never written out (that, and zeroing it, was a
    /// third of a 3x3 convolution's time beside the GEMM's own packing).
    pub(crate) fn run_virtual_im2col(
        &self,
        data: &Tensor,
        packed: &PackedFilters,
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Tensor, OpError> {
        let x = f32_values(data)?;
        let [_, ih, iw] = self.input;
        let [_, kh, kw] = self.kernel;
        let [_, oh, ow] = self.out;
        let positions = oh * ow;
        let (col_step, row_step) =
            F32_GEMM.with(|e| (e.im2col_col_count_step(), e.im2col_row_count_step()));
        // Rows are (channel, ky, kx), columns output positions; each offset is premultiplied
        // by its stride in the [ci, ih, iw] image. Padding rows and columns past the end get
        // i32::MAX, which every sum maps outside the image (so to 0), as rten-gemm expects.
        let k = self.ci * kh * kw;
        let mut rows = RowOffsets {
            chan: Vec::with_capacity(k.next_multiple_of(row_step)),
            y: Vec::with_capacity(k.next_multiple_of(row_step)),
            x: Vec::with_capacity(k.next_multiple_of(row_step)),
        };
        for c in 0..self.ci {
            for ky in 0..kh {
                for kx in 0..kw {
                    rows.chan.push((c * ih * iw) as i32);
                    rows.y.push((ky * self.dil[1] * iw) as i32);
                    rows.x.push((kx * self.dil[2]) as i32);
                }
            }
        }
        for _ in k..k.next_multiple_of(row_step) {
            rows.chan.push(i32::MAX);
            rows.y.push(i32::MAX);
            rows.x.push(i32::MAX);
        }
        let padded_cols = positions.next_multiple_of(col_step);
        let mut cols = ColOffsets {
            y: Vec::with_capacity(padded_cols),
            x: Vec::with_capacity(padded_cols),
        };
        for oy in 0..oh {
            for ox in 0..ow {
                let y = (oy * self.stride[1]) as i64 - self.pad[1] as i64;
                let x = (ox * self.stride[2]) as i64 - self.pad[2] as i64;
                cols.y.push((y * iw as i64) as i32);
                cols.x.push(x as i32);
            }
        }
        cols.y.resize(padded_cols, i32::MAX);
        cols.x.resize(padded_cols, i32::MAX);
        let plane = self.ci * ih * iw;
        let items = self.n * self.groups;
        let mut out = try_zeroed::<f32>(items * self.co * positions)?;
        let mut planes: Vec<&mut [f32]> = out.chunks_mut((self.co * positions).max(1)).collect();
        par::try_for_each_mut(&mut planes, &|ng, dst| {
            let grp = ng % self.groups;
            let image = NdTensorView::from_data([self.ci, ih, iw], &x[ng * plane..][..plane]);
            let im2col = Im2Col {
                image,
                row_offsets: RowOffsets {
                    chan: rows.chan.clone(),
                    y: rows.y.clone(),
                    x: rows.x.clone(),
                },
                col_offsets: ColOffsets {
                    y: cols.y.clone(),
                    x: cols.x.clone(),
                },
                n_cols: positions,
                n_rows: k,
                max_y_offset: ((ih - 1) * iw) as i32,
                max_x_offset: (iw - 1) as i32,
            };
            F32_GEMM.with(|e| {
                e.gemm(
                    dst,
                    GemmInputA::Packed(&packed.groups[grp]),
                    GemmInputB::Im2Col(&im2col),
                    GemmOptions::default(),
                )
                .expect("packed for this geometry")
            });
            if let Some(e) = epilogue {
                // Still in cache: the plane's channels are `grp * co ..`.
                let layout = Channels::Planes {
                    channels: self.groups * self.co,
                    plane: positions,
                };
                e.apply_at(dst, ng * self.co * positions, layout);
            }
            Ok(())
        })?;
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// A 1x1 kernel at stride 1 without padding ([`Geometry::is_pointwise`]) on packed
    /// filters: per (batch item, group), the group's filters times the item's input plane
    /// `[ci, positions]`, which already is the patch matrix, written by rten-gemm straight
    /// into the output's capacity (a zero fill first took a tenth of a 16-to-72-channel
    /// 56x56 layer) and finished by the epilogue while in cache. rten-gemm shares each product
    /// out between the threads; its result does not depend on their count.
    pub(crate) fn run_pointwise(
        &self,
        data: &Tensor,
        packed: &PackedFilters,
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Tensor, OpError> {
        let x = f32_values(data)?;
        let positions: usize = self.out.iter().product();
        let plane = self.ci * positions;
        let item_len = self.co * positions;
        let len = self.n * self.groups * item_len;
        let mut out: Vec<f32> = crate::kernel::try_with_capacity(len)?;
        let layout = Channels::Planes {
            channels: self.groups * self.co,
            plane: positions,
        };
        let mut written = 0;
        for (ng, dst) in out.spare_capacity_mut()[..len]
            .chunks_mut(item_len.max(1))
            .enumerate()
        {
            let xg = &x[ng * plane..][..plane];
            let c = F32_GEMM.with(|e| {
                e.gemm_uninit(
                    dst,
                    GemmInputA::Packed(&packed.groups[ng % self.groups]),
                    GemmInputB::Unpacked(view(self.ci, positions, xg, (positions as isize, 1))),
                    GemmUninitOptions::default(),
                )
                .expect("packed for this geometry")
            });
            if let Some(e) = epilogue {
                e.apply_at(c, ng * item_len, layout);
            }
            written += c.len();
        }
        if written != len {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: a pointwise convolution left part of its output unwritten",
            ));
        }
        // SAFETY: the chunks of the capacity's first `len` slots are consecutive and each was
        // handed to `gemm_uninit`, whose safe signature returns it initialised; the check above
        // saw `len` elements come back. `f32: Copy`.
        unsafe { out.set_len(len) };
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }
}
