//! What several detection ops check the same way: a 4-D `[N, C, H, W]` input whose output dims
//! follow from its dims (RegionYolo, ReorgYolo), the two `[2]` integer size inputs of the
//! prior-box ops (`[H, W]` of the feature map, `[IH, IW]` of the image), and float inputs of
//! one type and given ranks computed in f32 and given back in that type (DetectionOutput,
//! Proposal, ROIPooling).

use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{with_float, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::fact::Fact;
use crate::op::{codes, OpError, Value};

/// The output shape of an op on `[N, C, H, W]` whose dims `out` computes (or says why not);
/// `unknown` when the input's rank is.
pub fn nchw_shape(
    x: &Fact,
    name: &str,
    unknown: PartialShape,
    out: impl Fn([Dim; 4]) -> Result<Vec<Dim>, String>,
) -> Result<PartialShape, OpError> {
    match x.shape.dims() {
        None => Ok(unknown),
        Some(&[n, c, h, w]) => out([n, c, h, w])
            .map(PartialShape::new)
            .map_err(|m| OpError::input(0, codes::SHAPE, format!("{name}: {m}"))),
        Some(d) => Err(OpError::input(
            0,
            codes::RANK,
            format!("{name}: input must be 4-D, got rank {}", d.len()),
        )),
    }
}

/// At run time: the input's `[N, C, H, W]` and the output shape `out` gives.
pub fn nchw_run(
    x: &Tensor,
    name: &str,
    out: impl Fn([Dim; 4]) -> Result<Vec<Dim>, String>,
) -> Result<([usize; 4], Vec<usize>), OpError> {
    let &[n, c, h, w] = x.shape() else {
        return Err(OpError::new(
            codes::RUN_SHAPE,
            format!("{name}: input must be 4-D"),
        ));
    };
    let dims = out([n, c, h, w].map(|d| Dim::fixed(d as u64)))
        .map_err(|m| OpError::new(codes::RUN_SHAPE, format!("{name}: {m}")))?;
    let shape = dims
        .iter()
        .map(|d| d.get_static().unwrap_or(0) as usize)
        .collect();
    Ok(([n, c, h, w], shape))
}

/// The one float type of all `inputs` (an error naming the first that differs or is not a
/// float), each input of the `ranks` listed `(slot, rank)` checked where its rank is known.
pub fn float_inputs(
    inputs: &[Fact],
    ranks: &[(usize, usize)],
    name: &str,
) -> Result<ElementType, OpError> {
    let slots: Vec<usize> = (0..inputs.len()).collect();
    let ty = crate::op::same_element_type(inputs, &slots, name)?;
    if ty != ElementType::Dynamic && !ty.is_real() {
        return Err(OpError::input(
            0,
            codes::ELEMENT_TYPE,
            format!("{name}: inputs must be floats, got {ty}"),
        ));
    }
    for &(slot, rank) in ranks {
        if inputs[slot].rank().is_some_and(|r| r != rank) {
            return Err(OpError::input(
                slot,
                codes::RANK,
                format!(
                    "{name}: input {slot} {} must be {rank}-D",
                    inputs[slot].shape
                ),
            ));
        }
    }
    Ok(ty)
}

/// The values of float tensor `t` as f32, as OpenVINO CPU computes these ops for every float
/// type; an error naming `name` for other types.
pub fn f32_values(t: &Tensor, name: &str) -> Result<Vec<f32>, OpError> {
    let ty = t.element_type();
    let unsupported = || OpError::new(codes::UNSUPPORTED_TYPE, format!("{name} on {ty}"));
    with_float!(ty, T => Ok(t.values::<T>().ok_or_else(unsupported)?.iter().map(|v| v.to_f64() as f32).collect()),
        else Err(unsupported()))
}

/// `values` computed in f32 as a tensor of float type `ty` and `shape`, each rounded once.
pub fn float_tensor(
    ty: ElementType,
    shape: Vec<usize>,
    values: Vec<f32>,
    name: &str,
) -> Result<Value, OpError> {
    let t = with_float!(ty, T => Tensor::new(ty, shape, T::wrap(values.into_iter().map(|v| T::from_f64(v as f64)).collect())),
        else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{name} on {ty}"))));
    t.map(Arc::new)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// The output of a prior-box op with `priors` boxes per position: f32 `[2, 4·H·W·priors]`
/// (boxes, then variances), its length known when the map size `[H, W]` is; the size inputs
/// checked first.
pub fn prior_boxes(inputs: &[Fact], name: &str, priors: u64) -> Result<Vec<Fact>, OpError> {
    check_sizes(inputs, name)?;
    let len = match &inputs[0].value {
        Some(v) => {
            let [h, w] = size_pair(v, 0, name)?;
            Dim::fixed(4 * h as u64 * w as u64 * priors)
        }
        None => Dim::DYNAMIC,
    };
    Ok(vec![Fact::new(
        ElementType::F32,
        PartialShape::new(vec![Dim::fixed(2), len]),
    )])
}

/// Checks the two size inputs of a prior-box op: integers of shape `[2]`.
fn check_sizes(inputs: &[Fact], name: &str) -> Result<(), OpError> {
    for (slot, f) in inputs.iter().enumerate() {
        if !f.ty.is_integral_number() && f.ty != ElementType::Dynamic {
            return Err(OpError::input(
                slot,
                codes::ELEMENT_TYPE,
                format!("{name}: input {slot} must be integers, got {}", f.ty),
            ));
        }
        if f.shape.to_static().is_some_and(|s| s != [2]) {
            return Err(OpError::input(
                slot,
                codes::SHAPE,
                format!("{name}: input {slot} must be [2], got {}", f.shape),
            ));
        }
    }
    Ok(())
}

/// `[first, second]` of a size input, both positive.
pub fn size_pair(t: &Tensor, slot: usize, name: &str) -> Result<[i64; 2], OpError> {
    match t.to_i64_vec().as_deref() {
        Some(&[a, b]) if a > 0 && b > 0 => Ok([a, b]),
        _ => Err(OpError::input(
            slot,
            codes::BAD_VALUE,
            format!(
                "{name}: input {slot} must be two positive sizes, got {}",
                t.preview(4)
            ),
        )),
    }
}
