//! What the normalisation ops without a kernel of their own share: a float tensor's values
//! as f64 and a result of the same type from f64 values (rounded once).

use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{with_float, ElementType, Scalar, Tensor};

use crate::fact::Fact;
use crate::op::{codes, expect_inputs, OpError, Value};
use crate::util::{expect_int_type, known_ints};

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
    if !ty.is_real() {
        return Err(bad());
    }
    irun_opkit::number::f64_values(t).ok_or_else(bad)
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

/// The inference of a float op over axes (input 1, checked against the rank when known):
/// the data's own fact out.
pub fn infer_over_axes(inputs: &[Fact], op: &str) -> Result<Vec<Fact>, OpError> {
    expect_inputs(inputs, 2, op)?;
    expect_int_type(inputs, 1, op)?;
    let x = &inputs[0];
    expect_float(x.ty, 0, op)?;
    if let (Some(r), Some(a)) = (x.rank(), known_ints(&inputs[1])) {
        crate::axes::normalise(&a, r, 1, op)?;
    }
    Ok(vec![Fact::new(x.ty, x.shape.clone())])
}

/// An error unless `ty` is a float type (or not known yet).
pub fn expect_float(ty: ElementType, slot: usize, op: &str) -> Result<(), OpError> {
    if ty == ElementType::Dynamic || ty.is_real() {
        return Ok(());
    }
    Err(OpError::input(
        slot,
        codes::ELEMENT_TYPE,
        format!("{op}: input {slot} must be floating-point, got {ty}"),
    ))
}

/// Checks, when the data's channel count (dim 1) is known, that each input in `params` is
/// `[C]`; an error if the data has no channel axis.
pub fn expect_channel_params(
    inputs: &[Fact],
    data: usize,
    params: &[usize],
    op: &str,
) -> Result<(), OpError> {
    let x = &inputs[data];
    let Some(d) = x.shape.dims() else {
        return Ok(());
    };
    if d.len() < 2 {
        return Err(OpError::input(
            data,
            codes::RANK,
            format!("{op}: data {} needs a channel axis", x.shape),
        ));
    }
    if let Some(c) = d[1].get_static() {
        for &slot in params {
            if inputs[slot]
                .shape
                .to_static()
                .is_some_and(|s| s != [c as usize])
            {
                return Err(OpError::input(
                    slot,
                    codes::SHAPE,
                    format!("{op}: input {slot} {} must be [{c}]", inputs[slot].shape),
                ));
            }
        }
    }
    Ok(())
}

/// The sum of `f(x)` over `xs` in f64, in eight interleaved lanes (then the lanes, then the
/// tail): a fixed order, so deterministic, and vectorisable where one running sum is a
/// chain of dependent adds (a LayerNorm row of 128 took 10 us in three such chains).
#[inline(always)]
pub fn lane_sum(xs: &[f32], f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0f64; 8];
    let chunks = xs.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l += f(x as f64);
        }
    }
    lanes.iter().sum::<f64>() + tail.iter().map(|&x| f(x as f64)).sum::<f64>()
}

/// Elements per piece of a long sum: pieces are summed in parallel, then in order, so the
/// result does not depend on the thread count.
pub const SUM_PIECE: usize = 1 << 15;

/// [`lane_sum`] over each of `blocks` consecutive blocks of `xs` (`xs.len() / blocks` long),
/// the blocks cut into [`SUM_PIECE`]s summed in parallel (compiled for the widest vector
/// unit); `f` gets the block index too.
pub fn block_sums<F: Fn(usize, f64) -> f64 + Sync>(xs: &[f32], blocks: usize, f: F) -> Vec<f64> {
    let block = xs.len() / blocks.max(1);
    let per_block = block.div_ceil(SUM_PIECE).max(1);
    let mut pieces = vec![0f64; blocks * per_block];
    crate::par::for_each_mut(&mut pieces, &|p, slot| {
        let (b, k) = (p / per_block, p % per_block);
        let lo = b * block + (k * SUM_PIECE).min(block);
        let hi = b * block + ((k + 1) * SUM_PIECE).min(block);
        *slot = crate::simd::widest(
            #[inline(always)]
            || lane_sum(&xs[lo..hi], |x| f(b, x)),
        );
    });
    pieces.chunks(per_block).map(|c| c.iter().sum()).collect()
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
