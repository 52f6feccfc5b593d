//! Convolution and GroupConvolution prepared for constant f32 filters: packed once for the
//! kernel that will run them ([`PackedFilters`]), with the bias and activation after the op
//! taken over as an epilogue and, for a reader that asks, the output written channel-last.

use std::sync::Arc;

use irun_opkit::epilogue::Epilogue;
use irun_opkit::quantize::FakeQuantizeRange;

use crate::conv::{grouped_view, grouped_with, Finish, PackedFilters};
use crate::op::{take_inputs, OpError, Prepared, Value};
use crate::spatial::Spatial;

/// A convolution whose f32 filters are a constant, packed at compile time
/// ([`crate::op::Op::prepare`]). Runs exactly as the op does; other filters than the packed
/// ones (by identity) take the unpacked path.
#[derive(Debug)]
pub struct PreparedConv {
    filters: Value,
    packed: PackedFilters,
    spatial: Spatial,
    /// `None` for a plain Convolution (filters `[Cout, Cin, *k]` seen as one group).
    groups: Option<usize>,
    name: &'static str,
    /// Ops after it that it applies to its output ([`Prepared::set_epilogue`]).
    epilogue: Option<Epilogue>,
    /// The output written channel-last ([`Prepared::set_channels_last_output`]).
    channels_last: bool,
    /// The FakeQuantize after the epilogue, taken over by a depthwise convolution
    /// ([`Prepared::set_output_quantize`]); empty if none.
    quantize: Vec<FakeQuantizeRange>,
}

impl PreparedConv {
    /// The prepared kernel when input 1 (the filters) is a constant f32 tensor.
    pub fn kernel(
        constants: &[Option<Value>],
        spatial: &Spatial,
        grouped: bool,
        name: &'static str,
    ) -> Option<Box<dyn Prepared>> {
        let filters = constants.get(1)?.clone()?;
        let as_groups = grouped_view(&filters, grouped).ok()?;
        let packed = (spatial.rank() <= 2)
            .then(|| PackedFilters::direct(&as_groups, &spatial.strides))
            .flatten()
            .or_else(|| PackedFilters::new(&as_groups))?;
        let groups = grouped.then(|| filters.shape().first().copied().unwrap_or(0));
        Some(Box::new(PreparedConv {
            filters,
            packed,
            spatial: spatial.clone(),
            groups,
            name,
            epilogue: None,
            channels_last: false,
            quantize: Vec::new(),
        }))
    }
}

impl Prepared for PreparedConv {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, filters] = take_inputs::<2>(inputs, self.name)?;
        let grouped = self.groups.is_some();
        let as_groups = grouped_view(&filters, grouped)?;
        let groups = self.groups.unwrap_or(1);
        let packed = Arc::ptr_eq(&filters, &self.filters).then_some(&self.packed);
        Ok(vec![grouped_with(
            &data,
            &as_groups,
            groups,
            &self.spatial,
            self.name,
            packed,
            Finish {
                epilogue: self.epilogue.as_ref(),
                channels_last: self.channels_last,
                quantize: &self.quantize,
            },
        )?])
    }

    fn byte_size(&self) -> usize {
        self.packed.byte_size()
    }

    /// A bias of one value per output channel, and/or a ReLU.
    fn set_epilogue(&mut self, e: &Epilogue) -> bool {
        let fs = self.filters.shape();
        let channels = match self.groups {
            Some(g) => g * fs.get(1).copied().unwrap_or(0),
            None => fs.first().copied().unwrap_or(0),
        };
        e.keep_if_fits(&mut self.epilogue, channels, self.spatial.rank())
    }

    /// A depthwise convolution's (one input and one output channel per group, more than
    /// one group): applied to each block of channels as it is written, while in cache,
    /// rather than by the op in a pass of its own (MobileNetV3's FakeQuantizes after its
    /// depthwise layers).
    fn set_output_quantize(&mut self, q: &[FakeQuantizeRange]) -> bool {
        let fs = self.filters.shape();
        let depthwise =
            matches!(self.groups, Some(g) if g > 1) && fs.len() >= 3 && fs[1] == 1 && fs[2] == 1;
        let channels = fs.first().copied().unwrap_or(0);
        let fits = depthwise && (q.len() == 1 || q.len() == channels);
        if fits {
            self.quantize = q.to_vec();
        }
        fits
    }

    /// Any output: straight from the patch products where the convolution runs in blocks
    /// of patches with one group (a stem on a large image), else moved once computed.
    fn set_channels_last_output(&mut self, on: bool) -> bool {
        self.channels_last = on;
        true
    }
}
