//! The pointwise convolution (a 1x1 kernel at stride 1) as a GEMM on rten-gemm's packed
//! filters, for grouped ones and where the CPU has no `PointwiseFilters` kernel: the patch
//! matrix is the input itself, and the output is written once, into its capacity.

use irun_tensor::Tensor;
use rten_gemm::{GemmInputA, GemmInputB, GemmUninitOptions};

use crate::conv::{f32_values, Geometry, PackedFilters};
use crate::conv_blocks::BlockFilters;
use crate::gemm::{view, F32_GEMM};
use crate::op::{codes, OpError};
use irun_opkit::epilogue::{Channels, Epilogue};

impl Geometry {
    /// A 1x1 kernel at stride 1 without padding ([`Geometry::is_pointwise`]) on packed
    /// filters: per (batch item, group), the group's filters times the item's input plane
    /// `[ci, positions]`, which already is the patch matrix, written by rten-gemm straight
    /// into the output's capacity (a zero fill first took a tenth of a 16-to-72-channel
    /// 56x56 layer), then the epilogue. rten-gemm shares each product
    /// out between the threads; its result does not depend on their count.
    pub(crate) fn run_pointwise(
        &self,
        data: &Tensor,
        packed: &PackedFilters,
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Tensor, OpError> {
        let x = f32_values(data)?;
        let BlockFilters::Gemm(gemm) = &packed.groups else {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: 1x1 filters packed as tiles",
            ));
        };
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
                    GemmInputA::Packed(&gemm[ng % self.groups]),
                    GemmInputB::Unpacked(view(self.ci, positions, xg, (positions as isize, 1))),
                    GemmUninitOptions::default(),
                )
                .expect("packed for this geometry")
            });
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
        // On the whole output, in parallel: per item on this thread, a 160x160 layer's bias
        // took a third of its time.
        if let Some(e) = epilogue {
            e.apply(&mut out, layout);
        }
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }
}
