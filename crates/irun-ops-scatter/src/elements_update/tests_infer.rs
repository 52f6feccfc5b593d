use super::*;
use crate::testing::{err, fact, infer1, scalar_i64};
use irun_tensor::ElementType::*;

fn v3() -> ScatterElementsUpdate {
    ScatterElementsUpdate {
        version: 3,
        reduction: Reduction::None,
        use_init_val: true,
    }
}

fn v12(reduction: Reduction) -> ScatterElementsUpdate {
    ScatterElementsUpdate {
        version: 12,
        reduction,
        use_init_val: true,
    }
}

fn both() -> [ScatterElementsUpdate; 2] {
    [v3(), v12(Reduction::Sum)]
}

fn seu(
    op: &ScatterElementsUpdate,
    ty: ElementType,
    data: &str,
    idx: &str,
    upd: &str,
    axis: Fact,
) -> Result<Fact, OpError> {
    infer1(op, &[fact(ty, data), fact(I16, idx), fact(ty, upd), axis])
}

/// type_prop scatter_elements_update_output_shape / _output_partial_dyn_shape /
/// _data_has_interval_dimensions / _output_full_dyn_shape / _default_ctor.
#[test]
fn valid_cases_infer_data_shape() {
    for op in both() {
        assert_eq!(
            seu(&op, F32, "2,4,5,7", "2,2,2,2", "2,2,2,2", fact(I16, ""))
                .unwrap()
                .shape
                .to_string(),
            "[2,4,5,7]"
        );
        assert_eq!(
            seu(&op, F64, "2,?,5", "?,2,2", "2,2,?", fact(I16, "..."))
                .unwrap()
                .shape
                .to_string(),
            "[2,?,5]"
        );
        let out = seu(
            &op,
            I64,
            "5..10,?,..3,8..",
            "1,2,2,2..3",
            "0..2,?,2,?",
            scalar_i64(0),
        )
        .unwrap();
        assert_eq!(
            (out.ty, out.shape.to_string()),
            (I64, "[5..10,?,..3,8..]".into())
        );
        let out = infer1(
            &op,
            &[
                fact(Dynamic, "..."),
                fact(Dynamic, "..."),
                fact(Dynamic, "..."),
                fact(Dynamic, "..."),
            ],
        )
        .unwrap();
        assert_eq!(out.shape.to_string(), "[...]");
        assert_eq!(
            seu(&op, F32, "2,5,5,6", "1,2,1,3", "1,2,1,3", scalar_i64(-4))
                .unwrap()
                .shape
                .to_string(),
            "[2,5,5,6]"
        );
    }
}

/// type_prop _axis_validation, scatter_elements_updates_indices_shape / _indices_rank /
/// scatter_elements_data_indices_rank.
#[test]
fn invalid_shapes() {
    for op in both() {
        let e = err(seu(
            &op,
            F32,
            "2,4,5,7",
            "2,2,2,2",
            "2,2,2,2",
            scalar_i64(8),
        ));
        assert_eq!(e.message, "Axis 8 out of the tensor rank range [-4, 3]");
        let e = err(seu(
            &op,
            F32,
            "4,4,4,4",
            "3,3,3,3",
            "2,2,2,2",
            fact(I16, ""),
        ));
        assert!(
            e.message
                .contains("Indices and updates input shapes are required to be equal"),
            "{}",
            e.message
        );
        let e = err(seu(&op, F32, "2,4", "2,2", "2,2,2,2", fact(I16, "")));
        assert!(e
            .message
            .contains("Indices and updates input shapes are required to be equal"));
        let e = err(seu(&op, F32, "2,4,5,7", "2,2", "2,2", fact(I16, "")));
        assert!(e
            .message
            .contains("Indices rank and data rank are required to be equal"));
        let e = err(seu(&op, F32, "2,3", "2,3", "2,3", fact(I16, "1,1")));
        assert!(e
            .message
            .contains("Axis input shape are required to be scalar or 1D tensor. Got: [1,1]"));
        // OpenVINO accepts an axis of shape [k] and uses element 0.
        assert!(seu(&op, F32, "2,3", "2,3", "2,3", fact(I16, "5")).is_ok());
    }
}

#[test]
fn element_types() {
    let op = v3();
    let e = err(infer1(
        &op,
        &[
            fact(F32, "2"),
            fact(F32, "2"),
            fact(F32, "2"),
            scalar_i64(0),
        ],
    ));
    assert!(e
        .message
        .contains("Indices element type must be an integer type, but is: f32"));
    let e = err(infer1(
        &op,
        &[
            fact(F32, "2"),
            fact(I32, "2"),
            fact(F32, "2"),
            fact(F32, ""),
        ],
    ));
    assert!(e
        .message
        .contains("Axis element type must be an integer type, but is: f32"));
    let e = err(infer1(
        &op,
        &[
            fact(F32, "2"),
            fact(I32, "2"),
            fact(F16, "2"),
            scalar_i64(0),
        ],
    ));
    assert!(
        e.message
            .contains("Data type and updates type are required to be the same"),
        "{}",
        e.message
    );
    let out = infer1(
        &op,
        &[
            fact(Dynamic, "2"),
            fact(I32, "2"),
            fact(F16, "2"),
            scalar_i64(0),
        ],
    )
    .unwrap();
    assert_eq!(out.ty, F16, "dynamic data takes the updates type");
}

/// Stricter than OpenVINO: boolean indices (OpenVINO validates them) are rejected.
#[test]
fn boolean_indices_are_rejected() {
    let e = err(infer1(
        &v3(),
        &[
            fact(F32, "2"),
            fact(Boolean, "2"),
            fact(F32, "2"),
            scalar_i64(0),
        ],
    ));
    assert_eq!(
        (e.code, e.port),
        (
            codes::ELEMENT_TYPE,
            Some((irun_ir::PortDirection::Input, 1))
        )
    );
}

/// Stricter than OpenVINO: indices [5,7] for data [2,3] (axis 0) write out of bounds there.
#[test]
fn indices_larger_than_data_off_the_axis_are_rejected() {
    let e = err(seu(&v3(), F32, "2,3", "5,7", "5,7", scalar_i64(0)));
    assert!(
        e.message
            .contains("indices dim 1 (7) is larger than data dim 1 (3)"),
        "{}",
        e.message
    );
    // Larger along the axis is fine (duplicates), reference test case 5.
    assert!(seu(
        &v12(Reduction::Sum),
        F32,
        "2,2,1",
        "1,5,1",
        "1,5,1",
        scalar_i64(1)
    )
    .is_ok());
}

/// type_prop scatter_elements_update_mean_reduction_of_bool (v12 only).
#[test]
fn mean_of_boolean_is_invalid() {
    let e = err(infer1(
        &v12(Reduction::Mean),
        &[
            fact(Boolean, "10"),
            fact(I32, "2"),
            fact(Boolean, "2"),
            scalar_i64(0),
        ],
    ));
    assert_eq!(
        e.message,
        "The 'mean' reduction type is not supported for boolean tensors"
    );
    assert!(infer1(
        &v12(Reduction::Sum),
        &[
            fact(Boolean, "10"),
            fact(I32, "2"),
            fact(Boolean, "2"),
            scalar_i64(0)
        ]
    )
    .is_ok());
}
