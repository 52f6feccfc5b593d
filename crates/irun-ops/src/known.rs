//! Every op type name of OpenVINO's opsets 1 to 16 (the union of their operation tables, plus
//! the IR's `Const` spelling), so that `check` can tell a real op irun does not run yet (a
//! warning) from a type that exists in no opset, such as a typo (an error). Matched
//! case-insensitively, as OpenVINO's reader matches types (`ReLU`, `SoftMax`, `PReLU`).

/// The names, sorted case-insensitively.
pub static OPENVINO_OP_TYPES: &[&str] = &[
    "Abs",
    "Acos",
    "Acosh",
    "AdaptiveAvgPool",
    "AdaptiveMaxPool",
    "Add",
    "Asin",
    "Asinh",
    "Assign",
    "Atan",
    "Atanh",
    "AvgPool",
    "BatchNormInference",
    "BatchToSpace",
    "BinaryConvolution",
    "BitwiseAnd",
    "BitwiseLeftShift",
    "BitwiseNot",
    "BitwiseOr",
    "BitwiseRightShift",
    "BitwiseXor",
    "Broadcast",
    "Bucketize",
    "Ceiling",
    "Clamp",
    "Col2Im",
    "Concat",
    "Const",
    "Constant",
    "Convert",
    "ConvertLike",
    "ConvertPromoteTypes",
    "Convolution",
    "ConvolutionBackpropData",
    "Cos",
    "Cosh",
    "CTCGreedyDecoder",
    "CTCGreedyDecoderSeqLen",
    "CTCLoss",
    "CumSum",
    "DeformableConvolution",
    "DeformablePSROIPooling",
    "DepthToSpace",
    "DetectionOutput",
    "DFT",
    "Divide",
    "Einsum",
    "Elu",
    "EmbeddingBagOffsets",
    "EmbeddingBagOffsetsSum",
    "EmbeddingBagPacked",
    "EmbeddingBagPackedSum",
    "EmbeddingSegmentsSum",
    "Equal",
    "Erf",
    "Exp",
    "ExperimentalDetectronDetectionOutput",
    "ExperimentalDetectronGenerateProposalsSingleImage",
    "ExperimentalDetectronPriorGridGenerator",
    "ExperimentalDetectronROIFeatureExtractor",
    "ExperimentalDetectronTopKROIs",
    "ExtractImagePatches",
    "Eye",
    "FakeConvert",
    "FakeQuantize",
    "Floor",
    "FloorMod",
    "Gather",
    "GatherElements",
    "GatherND",
    "GatherTree",
    "Gelu",
    "GenerateProposals",
    "Greater",
    "GreaterEqual",
    "GridSample",
    "GRN",
    "GroupConvolution",
    "GroupConvolutionBackpropData",
    "GroupNormalization",
    "GRUCell",
    "GRUSequence",
    "HardSigmoid",
    "HSigmoid",
    "HSwish",
    "I420toBGR",
    "I420toRGB",
    "Identity",
    "IDFT",
    "If",
    "Interpolate",
    "Inverse",
    "IRDFT",
    "IsFinite",
    "IsInf",
    "IsNaN",
    "ISTFT",
    "Less",
    "LessEqual",
    "Log",
    "LogicalAnd",
    "LogicalNot",
    "LogicalOr",
    "LogicalXor",
    "LogSoftmax",
    "Loop",
    "LRN",
    "LSTMCell",
    "LSTMSequence",
    "MatMul",
    "MatrixNms",
    "Maximum",
    "MaxPool",
    "Minimum",
    "Mish",
    "Mod",
    "MOE",
    "MulticlassNms",
    "Multinomial",
    "Multiply",
    "MVN",
    "Negative",
    "NMSRotated",
    "NonMaxSuppression",
    "NonZero",
    "NormalizeL2",
    "NotEqual",
    "NV12toBGR",
    "NV12toRGB",
    "OneHot",
    "Pad",
    "Parameter",
    "Power",
    "PRelu",
    "PriorBox",
    "PriorBoxClustered",
    "Proposal",
    "PSROIPooling",
    "RandomUniform",
    "Range",
    "RDFT",
    "ReadValue",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogicalAnd",
    "ReduceLogicalOr",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "RegionYolo",
    "Relu",
    "ReorgYolo",
    "Reshape",
    "Result",
    "Reverse",
    "ReverseSequence",
    "RNNCell",
    "RNNSequence",
    "ROIAlign",
    "ROIAlignRotated",
    "ROIPooling",
    "Roll",
    "Round",
    "ScaledDotProductAttention",
    "ScatterElementsUpdate",
    "ScatterNDUpdate",
    "ScatterUpdate",
    "SearchSorted",
    "SegmentMax",
    "Select",
    "Selu",
    "ShapeOf",
    "ShuffleChannels",
    "Sigmoid",
    "Sign",
    "Sin",
    "Sinh",
    "Slice",
    "SliceScatter",
    "Softmax",
    "SoftPlus",
    "SoftSign",
    "SpaceToBatch",
    "SpaceToDepth",
    "SparseConv",
    "SparseFillEmptyRows",
    "Split",
    "Sqrt",
    "SquaredDifference",
    "Squeeze",
    "STFT",
    "StridedSlice",
    "StringTensorPack",
    "StringTensorUnpack",
    "Subtract",
    "Swish",
    "Tan",
    "Tanh",
    "TensorIterator",
    "Tile",
    "TopK",
    "Transpose",
    "Unique",
    "Unsqueeze",
    "VariadicSplit",
    "Xor",
];

/// The opsets in which OpenVINO 2026.4 introduced a version of each op type that has more than
/// one (the `version` string its serializer writes for that version), so that a layer is never
/// read as an older version than the one its file names: an older version may lack one of the
/// layer's attributes (AvgPool-16's `dilations`) or give it another meaning (OneHot-16's
/// negative indices). Types with a single version are not listed: irun's own registry knows
/// when they were introduced.
pub static OPENVINO_VERSIONS: &[(&str, &[u32])] = &[
    ("Assign", &[3, 6]),
    ("AvgPool", &[1, 14, 16]),
    ("BatchNormInference", &[1, 5]),
    ("Broadcast", &[1, 3]),
    ("DeformableConvolution", &[1, 8]),
    ("DetectionOutput", &[1, 8]),
    ("Gather", &[1, 7, 8]),
    ("GatherND", &[5, 8]),
    ("Gelu", &[2, 7]),
    ("Interpolate", &[1, 4, 11]),
    ("LSTMCell", &[1, 4]),
    ("LSTMSequence", &[1, 5]),
    ("MaxPool", &[1, 8, 14]),
    ("MulticlassNms", &[8, 9]),
    ("MVN", &[2, 6]),
    ("NonMaxSuppression", &[1, 3, 4, 5, 9]),
    ("OneHot", &[1, 16]),
    ("Pad", &[1, 12]),
    ("PriorBox", &[1, 8]),
    ("Proposal", &[1, 4]),
    ("Range", &[1, 4]),
    ("ReadValue", &[3, 6]),
    ("ROIAlign", &[3, 9]),
    ("ScatterElementsUpdate", &[3, 12]),
    ("ScatterNDUpdate", &[4, 15]),
    ("ShapeOf", &[1, 3]),
    ("SoftMax", &[1, 8]),
    ("Squeeze", &[1, 15]),
    ("TopK", &[1, 3, 11]),
];

/// The opset that introduced the version of `type_name` that `opset` holds, when the type has
/// several versions: the newest listed in [`OPENVINO_VERSIONS`] at or before `opset` (`None`
/// for an unlisted type, or an opset before the type's first version).
pub fn openvino_version_at(type_name: &str, opset: u32) -> Option<u32> {
    OPENVINO_VERSIONS
        .iter()
        .find(|(t, _)| t.eq_ignore_ascii_case(type_name))
        .and_then(|(_, since)| since.iter().copied().filter(|&s| s <= opset).max())
}

/// Whether `name` is an op type of some OpenVINO opset.
pub fn is_openvino_type(name: &str) -> bool {
    OPENVINO_OP_TYPES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(name))
}

/// The known type closest to `name` (at most 3 edits away, case-insensitive), for "did you
/// mean" hints.
pub fn closest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    OPENVINO_OP_TYPES
        .iter()
        .map(|t| (edit_distance(&lower, &t.to_ascii_lowercase()), *t))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, t)| t)
}

/// Levenshtein distance over bytes.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(x != y))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_types_typos_and_hints() {
        assert!(is_openvino_type("ScatterElementsUpdate"));
        assert!(
            is_openvino_type("relu") && is_openvino_type("SoftMax") && is_openvino_type("Const")
        );
        assert!(!is_openvino_type("ScatterFooUpdate"));
        assert!(!is_openvino_type(""));
        assert_eq!(closest("ScatterFooUpdate"), Some("ScatterNDUpdate"));
        assert_eq!(closest("Convolutoin"), Some("Convolution"));
        assert_eq!(closest("Zzzzzzzzzzzz"), None);
        let mut sorted = OPENVINO_OP_TYPES.to_vec();
        sorted.sort_by_key(|t| t.to_ascii_lowercase());
        assert_eq!(sorted, OPENVINO_OP_TYPES, "kept sorted");
    }

    #[test]
    fn versions_are_real_types_in_order() {
        for (t, since) in OPENVINO_VERSIONS {
            assert!(is_openvino_type(t), "{t}");
            assert!(
                since.len() > 1 && since.windows(2).all(|w| w[0] < w[1]),
                "{t}"
            );
        }
        assert_eq!(openvino_version_at("avgpool", 16), Some(16));
        assert_eq!(openvino_version_at("AvgPool", 15), Some(14));
        assert_eq!(openvino_version_at("GatherND", 4), None);
        assert_eq!(openvino_version_at("Add", 16), None);
    }
}
