//! Resolution of `(type, version="opsetN")` to an op, as OpenVINO's reader does: the opset named
//! by `version` contains, for each type, the newest version of that type introduced at or
//! before it; type names match case-insensitively (so `ReLU`/`Relu`, `SoftMax`/`Softmax` are the
//! same). Adding an op is one line in `REGISTRY`.

use irun_ir::Layer;

use irun_opkit::attrs::AttrReader;
use irun_opkit::op::{codes, Op, OpError};
use irun_ops_core as core;
use irun_ops_elementwise as ew;
use irun_ops_index as ix;
use irun_ops_linear as linear;
use irun_ops_movement as mv;
use irun_ops_reduce as rd;
use irun_ops_scatter as scatter;
use irun_ops_signal as signal;
use irun_ops_vision as vision;
use irun_ops_vision::non_max_suppression as nms;

/// The newest opset OpenVINO 2026.4 has; `opset17` and later are rejected as it rejects them.
pub const NEWEST_OPSET: u32 = 16;

pub type Builder = fn(&AttrReader) -> Result<Box<dyn Op>, OpError>;

/// One op version: IR type name, the opset that introduced it, the C++ class version, builder.
pub struct Entry {
    pub type_name: &'static str,
    pub since_opset: u32,
    pub version: u32,
    pub build: Builder,
}

const fn op(type_name: &'static str, since_opset: u32, version: u32, build: Builder) -> Entry {
    Entry {
        type_name,
        since_opset,
        version,
        build,
    }
}

pub static REGISTRY: &[Entry] = &[
    op("Parameter", 1, 1, core::parameter::build),
    op("Result", 1, 1, core::result::build),
    op("Const", 1, 1, core::constant::build),
    op("Convert", 1, 1, core::convert::build),
    op("ConvertLike", 1, 1, core::convert_like::build),
    op("Range", 4, 4, core::range::build),
    op("Eye", 9, 9, core::eye::build),
    op("RandomUniform", 8, 8, core::random_uniform::build),
    op("ShapeOf", 1, 1, core::shape_of::build_v1),
    op("ShapeOf", 3, 3, core::shape_of::build_v3),
    op("ReadValue", 3, 3, core::read_value::build_v3),
    op("ReadValue", 6, 6, core::read_value::build_v6),
    op("Assign", 3, 3, core::assign::build_v3),
    op("Assign", 6, 6, core::assign::build_v6),
    op("ScatterUpdate", 3, 3, scatter::update::build),
    op(
        "ScatterElementsUpdate",
        3,
        3,
        scatter::elements_update::build_v3,
    ),
    op(
        "ScatterElementsUpdate",
        12,
        12,
        scatter::elements_update::build_v12,
    ),
    op("ScatterNDUpdate", 4, 3, scatter::nd_update::build_v3),
    op("ScatterNDUpdate", 15, 15, scatter::nd_update::build_v15),
    // Elementwise: arithmetic, comparison, logical, select.
    op("Add", 1, 1, ew::add::build),
    op("Subtract", 1, 1, ew::subtract::build),
    op("Multiply", 1, 1, ew::multiply::build),
    op("Divide", 1, 1, ew::divide::build),
    op("Maximum", 1, 1, ew::maximum::build),
    op("Minimum", 1, 1, ew::minimum::build),
    op("Power", 1, 1, ew::power::build),
    op("FloorMod", 1, 1, ew::floor_mod::build),
    op("Mod", 1, 1, ew::modulo::build),
    op("SquaredDifference", 1, 1, ew::squared_difference::build),
    op("Equal", 1, 1, ew::equal::build),
    op("NotEqual", 1, 1, ew::not_equal::build),
    op("Greater", 1, 1, ew::greater::build),
    op("GreaterEqual", 1, 1, ew::greater_equal::build),
    op("Less", 1, 1, ew::less::build),
    op("LessEqual", 1, 1, ew::less_equal::build),
    op("LogicalAnd", 1, 1, ew::logical_and::build),
    op("LogicalOr", 1, 1, ew::logical_or::build),
    op("LogicalXor", 1, 1, ew::logical_xor::build),
    op("LogicalNot", 1, 1, ew::logical_not::build),
    op("Select", 1, 1, ew::select::build),
    op("BitwiseAnd", 13, 13, ew::bitwise_and::build),
    op("BitwiseOr", 13, 13, ew::bitwise_or::build),
    op("BitwiseXor", 13, 13, ew::bitwise_xor::build),
    op("BitwiseNot", 13, 13, ew::bitwise_not::build),
    op("BitwiseLeftShift", 15, 15, ew::bitwise_shift::build_left),
    op("BitwiseRightShift", 15, 15, ew::bitwise_shift::build_right),
    op("PReLU", 1, 1, ew::prelu::build),
    op("FakeQuantize", 1, 1, ew::fake_quantize::build),
    // Elementwise: unary math and activations.
    op("Abs", 1, 1, ew::abs::build),
    op("Ceiling", 1, 1, ew::ceiling::build),
    op("Clamp", 1, 1, ew::clamp::build),
    op("Cos", 1, 1, ew::cos::build),
    op("Elu", 1, 1, ew::elu::build),
    op("Erf", 1, 1, ew::erf::build),
    op("Exp", 1, 1, ew::exp::build),
    op("Floor", 1, 1, ew::floor::build),
    op("Gelu", 2, 2, ew::gelu::build_v2),
    op("Gelu", 7, 7, ew::gelu::build),
    op("HSigmoid", 5, 5, ew::hsigmoid::build),
    op("HSwish", 4, 4, ew::hswish::build),
    op("Log", 1, 1, ew::log::build),
    op("Negative", 1, 1, ew::negative::build),
    op("ReLU", 1, 1, ew::relu::build),
    op("Sigmoid", 1, 1, ew::sigmoid::build),
    op("Sin", 1, 1, ew::sin::build),
    op("SoftPlus", 4, 4, ew::softplus::build),
    op("Sqrt", 1, 1, ew::sqrt::build),
    op("Swish", 4, 4, ew::swish::build),
    op("Tanh", 1, 1, ew::tanh::build),
    op("Acos", 1, 1, ew::acos::build),
    op("Asin", 1, 1, ew::asin::build),
    op("Atan", 1, 1, ew::atan::build),
    op("Tan", 1, 1, ew::tan::build),
    op("Sinh", 1, 1, ew::sinh::build),
    op("Cosh", 1, 1, ew::cosh::build),
    op("Acosh", 4, 3, ew::acosh::build),
    op("Asinh", 4, 3, ew::asinh::build),
    op("Atanh", 4, 3, ew::atanh::build),
    op("Sign", 1, 1, ew::sign::build),
    op("HardSigmoid", 1, 1, ew::hard_sigmoid::build),
    op("Selu", 1, 1, ew::selu::build),
    op("Mish", 4, 4, ew::mish::build),
    op("SoftSign", 9, 9, ew::soft_sign::build),
    op("IsNaN", 10, 10, ew::is_nan::build),
    op("IsInf", 10, 10, ew::is_inf::build),
    op("IsFinite", 10, 10, ew::is_finite::build),
    op("Round", 5, 5, ew::round::build),
    // Index ops.
    op(
        "EmbeddingBagOffsetsSum",
        3,
        3,
        ix::embedding_bag::build_offsets_sum,
    ),
    op(
        "EmbeddingBagOffsets",
        15,
        15,
        ix::embedding_bag::build_offsets,
    ),
    op(
        "EmbeddingBagPackedSum",
        3,
        3,
        ix::embedding_bag::build_packed_sum,
    ),
    op(
        "EmbeddingBagPacked",
        15,
        15,
        ix::embedding_bag::build_packed,
    ),
    op("GatherElements", 6, 6, ix::gather_elements::build),
    op("Bucketize", 3, 3, ix::bucketize::build),
    op("SearchSorted", 15, 15, ix::search_sorted::build),
    op("GatherND", 5, 5, ix::gather_nd::build_v5),
    op("GatherND", 8, 8, ix::gather_nd::build_v8),
    op("NonZero", 3, 3, ix::non_zero::build),
    op("OneHot", 1, 1, ix::one_hot::build),
    op("OneHot", 16, 16, ix::one_hot::build_v16),
    op("TopK", 1, 1, ix::top_k::build_v1),
    op("TopK", 3, 3, ix::top_k::build_v3),
    op("TopK", 11, 11, ix::top_k::build_v11),
    op("Unique", 10, 10, ix::unique::build),
    // Signal.
    op("DFT", 7, 7, signal::dft::build_dft),
    op("IDFT", 7, 7, signal::dft::build_idft),
    op("RDFT", 9, 9, signal::rdft::build),
    op("IRDFT", 9, 9, signal::irdft::build),
    // Linear algebra.
    op("AdaptiveAvgPool", 8, 8, linear::adaptive_pool::build_avg),
    op("AdaptiveMaxPool", 8, 8, linear::adaptive_pool::build_max),
    op("AvgPool", 1, 1, linear::avg_pool::build_v1),
    op("AvgPool", 14, 14, linear::avg_pool::build_v14),
    op("AvgPool", 16, 16, linear::avg_pool::build_v16),
    op("Convolution", 1, 1, linear::convolution::build),
    op("GroupConvolution", 1, 1, linear::group_convolution::build),
    op(
        "ConvolutionBackpropData",
        1,
        1,
        linear::conv_backprop::build,
    ),
    op(
        "GroupConvolutionBackpropData",
        1,
        1,
        linear::conv_backprop::build_grouped,
    ),
    op("Einsum", 7, 7, linear::einsum::build),
    op("MatMul", 1, 1, linear::matmul::build),
    op("MaxPool", 1, 1, linear::max_pool::build_v1),
    op("MaxPool", 8, 8, linear::max_pool::build_v8),
    op("MaxPool", 14, 14, linear::max_pool::build_v14),
    op(
        "ScaledDotProductAttention",
        13,
        13,
        linear::scaled_dot_product_attention::build,
    ),
    // Recurrent.
    op("GRUCell", 3, 3, linear::recurrent::gru_cell::build),
    op("GRUSequence", 5, 5, linear::recurrent::gru_sequence::build),
    op("LSTMCell", 4, 4, linear::recurrent::lstm_cell::build),
    op(
        "LSTMSequence",
        5,
        5,
        linear::recurrent::lstm_sequence::build,
    ),
    op("RNNCell", 1, 0, linear::recurrent::rnn_cell::build),
    op("RNNSequence", 5, 5, linear::recurrent::rnn_sequence::build),
    // Reductions and normalisation.
    op("LogSoftmax", 5, 5, rd::log_softmax::build),
    op("MVN", 2, 0, rd::mvn::build_v1),
    op("MVN", 6, 6, rd::mvn::build_v6),
    op("ReduceL1", 4, 4, rd::reduce_l1::build),
    op("ReduceL2", 4, 4, rd::reduce_l2::build),
    op("ReduceMax", 1, 1, rd::reduce_max::build),
    op("ReduceMean", 1, 1, rd::reduce_mean::build),
    op("ReduceMin", 1, 1, rd::reduce_min::build),
    op("ReduceProd", 1, 1, rd::reduce_prod::build),
    op("ReduceSum", 1, 1, rd::reduce_sum::build),
    op("SoftMax", 1, 1, rd::softmax::build_v1),
    op("SoftMax", 8, 8, rd::softmax::build_v8),
    op("CumSum", 3, 3, rd::cum_sum::build),
    op(
        "BatchNormInference",
        1,
        0,
        rd::batch_norm_inference::build_v0,
    ),
    op(
        "BatchNormInference",
        5,
        5,
        rd::batch_norm_inference::build_v5,
    ),
    op("GroupNormalization", 12, 12, rd::group_normalization::build),
    op("LRN", 1, 1, rd::lrn::build),
    op("NormalizeL2", 1, 1, rd::normalize_l2::build),
    // Data movement.
    op("Broadcast", 1, 1, mv::broadcast::build_v1),
    op("Broadcast", 3, 3, mv::broadcast::build_v3),
    op("Concat", 1, 1, mv::concat::build),
    op("Gather", 1, 1, mv::gather::build_v1),
    op("Gather", 7, 7, mv::gather::build_v7),
    op("Gather", 8, 8, mv::gather::build_v8),
    op("Identity", 16, 16, mv::identity::build),
    op("DepthToSpace", 1, 1, mv::depth_to_space::build),
    op("SpaceToDepth", 1, 1, mv::space_to_depth::build),
    op("Pad", 1, 1, mv::pad::build_v1),
    op("Pad", 12, 12, mv::pad::build_v12),
    op("Reshape", 1, 1, mv::reshape::build),
    op("Reverse", 1, 1, mv::reverse::build),
    op("ReverseSequence", 1, 1, mv::reverse_sequence::build),
    op("ShuffleChannels", 1, 1, mv::shuffle_channels::build),
    op("Slice", 8, 8, mv::slice::build),
    op("SliceScatter", 15, 15, mv::slice_scatter::build),
    op("SpaceToBatch", 2, 2, mv::batch_space::build_space_to_batch),
    op("BatchToSpace", 2, 2, mv::batch_space::build_batch_to_space),
    op("Split", 1, 1, mv::split::build),
    op("Squeeze", 1, 1, mv::squeeze::build),
    op("Squeeze", 15, 15, mv::squeeze::build_v15),
    op("StridedSlice", 1, 1, mv::strided_slice::build),
    op("Tile", 1, 1, mv::tile::build),
    op("Roll", 7, 7, mv::roll::build),
    op("Transpose", 1, 1, mv::transpose::build),
    op("Unsqueeze", 1, 1, mv::unsqueeze::build),
    op("VariadicSplit", 1, 1, mv::variadic_split::build),
    // Image and detection.
    op("DetectionOutput", 1, 0, vision::detection_output::build_v1),
    op("DetectionOutput", 8, 8, vision::detection_output::build_v8),
    op("GridSample", 9, 9, vision::grid_sample::build),
    op("Interpolate", 1, 0, vision::interpolate::build_v1),
    op("Interpolate", 4, 4, vision::interpolate::build_v4),
    op("Interpolate", 11, 11, vision::interpolate::build_v11),
    op("NonMaxSuppression", 5, 5, nms::build_v5),
    op("NonMaxSuppression", 9, 9, nms::build_v9),
    op("PriorBox", 1, 0, vision::prior_box::build_v1),
    op("PriorBox", 8, 8, vision::prior_box::build_v8),
    op(
        "PriorBoxClustered",
        1,
        0,
        vision::prior_box_clustered::build,
    ),
    op("Proposal", 1, 0, vision::proposal::build_v1),
    op("Proposal", 4, 4, vision::proposal::build_v4),
    op("RegionYolo", 1, 0, vision::region_yolo::build),
    op("ReorgYolo", 2, 0, vision::reorg_yolo::build),
    op("ROIAlign", 3, 3, vision::roi_align::build_v3),
    op("ROIAlign", 9, 9, vision::roi_align::build_v9),
    op("ROIPooling", 2, 0, vision::roi_pooling::build),
];

/// How a layer's `(type, version)` resolved.
pub enum Resolution {
    Op {
        op: Box<dyn Op>,
        unknown_attributes: Vec<String>,
    },
    /// irun has no op of this type in that opset (the layer is kept as an unsupported node).
    Unsupported,
    /// The attributes (or the version string) are invalid.
    Invalid(OpError),
}

/// `opsetN` -> N.
pub fn parse_opset(version: &str) -> Option<u32> {
    version
        .strip_prefix("opset")?
        .parse()
        .ok()
        .filter(|n| (1..=NEWEST_OPSET).contains(n))
}

/// The opset a layer's `version` names: `opsetN`, or opset6 for the types OpenVINO's reader
/// also accepts as `experimental` or `extension` (as older Model Optimizer IRs write
/// Proposal, the recurrent cells and the ExperimentalDetectron ops); `opset1` reads MVN,
/// ROIPooling and ReorgYolo from opset2, as OpenVINO's reader does (older IRs name them so).
pub fn layer_opset(type_name: &str, version: &str) -> Option<u32> {
    const READ_FROM_OPSET6: &[&str] = &["Proposal", "GRUCell", "RNNCell"];
    const OPSET1_READ_FROM_OPSET2: &[&str] = &["MVN", "ROIPooling", "ReorgYolo"];
    if version == "opset1"
        && OPSET1_READ_FROM_OPSET2
            .iter()
            .any(|t| t.eq_ignore_ascii_case(type_name))
    {
        return Some(2);
    }
    parse_opset(version).or_else(|| {
        let legacy = matches!(version, "experimental" | "extension");
        let listed = READ_FROM_OPSET6
            .iter()
            .any(|t| t.eq_ignore_ascii_case(type_name))
            || type_name.starts_with("ExperimentalDetectron");
        (legacy && listed).then_some(6)
    })
}

/// The registry entry `(type, opset)` resolves to.
pub fn lookup(type_name: &str, opset: u32) -> Option<&'static Entry> {
    REGISTRY
        .iter()
        .filter(|e| e.type_name.eq_ignore_ascii_case(type_name) && e.since_opset <= opset)
        .max_by_key(|e| e.since_opset)
}

pub fn resolve(layer: &Layer) -> Resolution {
    if !crate::known::is_openvino_type(&layer.type_name) {
        let hint = crate::known::closest(&layer.type_name)
            .map(|t| format!("; did you mean `{t}`?"))
            .unwrap_or_default();
        return Resolution::Invalid(OpError::new(
            codes::UNKNOWN_OP_TYPE,
            format!(
                "type `{}` is not an op of any OpenVINO opset (opset1 to opset{NEWEST_OPSET}){hint}",
                layer.type_name
            ),
        ));
    }
    let Some(opset) = layer_opset(&layer.type_name, &layer.version) else {
        let known = REGISTRY
            .iter()
            .any(|e| e.type_name.eq_ignore_ascii_case(&layer.type_name));
        if !known {
            return Resolution::Unsupported;
        }
        return Resolution::Invalid(OpError::new(
            codes::UNKNOWN_OPSET,
            format!("version \"{}\" is not an opset (OpenVINO 2026.4 reads opset1 to opset{NEWEST_OPSET})", layer.version),
        ));
    };
    // OpenVINO's version of the type in this opset, when it has several: a layer irun would
    // read as an older version is unsupported rather than misread.
    let openvino = crate::known::openvino_version_at(&layer.type_name, opset);
    let entry = lookup(&layer.type_name, opset);
    if let Some(since) = openvino {
        if entry.is_none_or(|e| e.since_opset < since) {
            return Resolution::Unsupported;
        }
    }
    let Some(entry) = entry else {
        if let Some(first) = REGISTRY
            .iter()
            .filter(|e| e.type_name.eq_ignore_ascii_case(&layer.type_name))
            .map(|e| e.since_opset)
            .min()
        {
            return Resolution::Invalid(OpError::new(
                codes::UNKNOWN_OPSET,
                format!(
                    "{} does not exist in opset{opset}; it was introduced in opset{first}",
                    layer.type_name
                ),
            ));
        }
        return Resolution::Unsupported;
    };
    let reader = AttrReader::new(layer);
    match (entry.build)(&reader) {
        Ok(op) => Resolution::Op {
            op,
            unknown_attributes: reader
                .unread()
                .into_iter()
                .map(|a| a.name.to_string())
                .collect(),
        },
        Err(e) => Resolution::Invalid(e),
    }
}

/// Every supported `(type, opset range, class version)`, for `irun ops`.
pub fn supported() -> Vec<(String, u32, u32, u32)> {
    REGISTRY
        .iter()
        .map(|e| {
            let next = REGISTRY
                .iter()
                .filter(|o| o.type_name == e.type_name && o.since_opset > e.since_opset)
                .map(|o| o.since_opset - 1)
                .min()
                .unwrap_or(NEWEST_OPSET);
            (e.type_name.to_string(), e.since_opset, next, e.version)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_resolve_as_openvino_does() {
        let v = |t: &str, n: u32| lookup(t, n).map(|e| e.version);
        assert_eq!(v("ScatterElementsUpdate", 11), Some(3));
        assert_eq!(v("ScatterElementsUpdate", 12), Some(12));
        assert_eq!(v("ScatterElementsUpdate", 16), Some(12));
        assert_eq!(v("scatterelementsupdate", 3), Some(3));
        assert_eq!(v("ScatterNDUpdate", 3), None);
        assert_eq!(v("ScatterNDUpdate", 4), Some(3));
        assert_eq!(v("ScatterNDUpdate", 14), Some(3));
        assert_eq!(v("ScatterNDUpdate", 15), Some(15));
        assert_eq!(v("ScatterUpdate", 2), None);
        assert_eq!(v("ScatterUpdate", 16), Some(3));
        assert_eq!(v("ShapeOf", 2), Some(1));
        assert_eq!(v("ShapeOf", 3), Some(3));
        assert_eq!(v("AvgPool", 15), Some(14));
        assert_eq!(v("AvgPool", 16), Some(16));
        assert_eq!(parse_opset("opset16"), Some(16));
        assert_eq!(parse_opset("opset17"), None);
        assert_eq!(parse_opset("experimental"), None);
        assert_eq!(layer_opset("Proposal", "experimental"), Some(6));
        assert_eq!(layer_opset("GRUCell", "extension"), Some(6));
        assert_eq!(layer_opset("Add", "experimental"), None);
        assert_eq!(layer_opset("ReorgYolo", "opset1"), Some(2));
        assert_eq!(layer_opset("mvn", "opset1"), Some(2));
        assert_eq!(layer_opset("Add", "opset1"), Some(1));
        assert_eq!(lookup("Proposal", 6).map(|e| e.version), Some(4));
    }
}
