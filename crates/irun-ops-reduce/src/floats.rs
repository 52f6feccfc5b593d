//! What the normalisation ops without a kernel of their own share: a float tensor's values
//! as f64 and a result of the same type from f64 values (rounded once).

use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{with_float, Scalar, Tensor};

use crate::op::{codes, OpError, Value};

/// The values of float input `slot` as f64.
pub fn values(t: &Tensor, slot: usize, op: &str) -> Result<Vec<f64>, OpError> {
    let ty = t.element_type();
    let bad = || {
        OpError::input(
            slot,
            codes::UNSUPPORTED_TYPE,
            format!("{op}: input {slot} must be floating-point, got {ty}"),
        )
    };
    with_float!(ty, T => t.values::<T>().map(|v| v.iter().map(|x| x.to_f64()).collect()).ok_or_else(bad), else Err(bad()))
}

/// The op's one output: a tensor like `like` (type and shape) holding `v`.
pub fn like(like: &Tensor, v: Vec<f64>) -> Result<Vec<Value>, OpError> {
    let ty = like.element_type();
    let t = with_float!(ty, T => Tensor::new(ty, like.shape().to_vec(), T::wrap(v.into_iter().map(T::from_f64).collect())),
        else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{ty} is not floating-point"))));
    t.map(|t| vec![Arc::new(t)])
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// For each element of `shape` in order, the index of its slot once `axes` are reduced
/// away (the row-major index over the kept dims).
pub fn reduced_slots(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    let mut strides = vec![0usize; shape.len()];
    let mut s = 1;
    for d in (0..shape.len()).rev() {
        if !axes.contains(&d) {
            strides[d] = s;
            s *= shape[d];
        }
    }
    let len: usize = shape.iter().product();
    let mut out = Vec::with_capacity(len);
    let mut coord = vec![0usize; shape.len()];
    for _ in 0..len {
        out.push(coord.iter().zip(&strides).map(|(c, s)| c * s).sum());
        for d in (0..shape.len()).rev() {
            coord[d] += 1;
            if coord[d] < shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_skip_the_reduced_axes() {
        assert_eq!(reduced_slots(&[2, 3], &[1]), [0, 0, 0, 1, 1, 1]);
        assert_eq!(reduced_slots(&[2, 3], &[0]), [0, 1, 2, 0, 1, 2]);
        assert_eq!(reduced_slots(&[2, 2], &[]), [0, 1, 2, 3]);
    }
}
