//! The kernel shape of SoftMax, LogSoftmax and MVN: for each slice along the normalised dims
//! (`[outer, along, inner]`, slice `(o, i)` at stride `inner`), read the slice, write the same
//! positions of the output. Computed in f64 (f16/bf16/f32 widened, rounded once), in parallel
//! over outer blocks, each slice by one task in index order.

use irun_tensor::{ElementType, Tensor};

use crate::kernel::{try_zeroed, PAR_MIN_ELEMENTS};
use crate::num::Float;
use crate::op::{codes, OpError, Value};
use crate::par;

/// `f` over every contiguous row of `along` f32 values (the slices of `[outer, along, 1]`), in
/// place when the executor handed over the only reference, else on a copy: the vectorised
/// path of SoftMax and LogSoftmax over the last axis.
pub fn map_rows_f32(
    x: Value,
    along: usize,
    f: &(dyn Fn(&mut [f32]) + Sync),
) -> Result<Tensor, OpError> {
    let mut own = crate::kernel::take_or_copy(x);
    if let Some(v) = own.values_mut::<f32>() {
        if let Some(rows) = crate::kernel::PAR_MIN_ELEMENTS.checked_div(along) {
            let grain = rows.max(1) * along;
            par::for_each_split_mut(v, grain, &|_, rows| rows.chunks_mut(along).for_each(f));
        }
    }
    Ok(own)
}

/// What one slice becomes: `f(values) -> values`, both `along` long.
pub type SliceFn<'a> = &'a (dyn Fn(&[f64], &mut [f64]) + Sync);

/// `f` over every slice of `x` viewed as `[outer, along, inner]`.
pub fn map_slices(
    x: &Tensor,
    outer: usize,
    along: usize,
    inner: usize,
    f: SliceFn,
) -> Result<Tensor, OpError> {
    let ty = x.element_type();
    match ty {
        ElementType::F32 => typed::<f32>(x, outer, along, inner, f),
        ElementType::F64 => typed::<f64>(x, outer, along, inner, f),
        ElementType::F16 => typed::<half::f16>(x, outer, along, inner, f),
        ElementType::Bf16 => typed::<half::bf16>(x, outer, along, inner, f),
        ty => Err(OpError::new(
            codes::UNSUPPORTED_TYPE,
            format!("on {ty} (floating-point types only)"),
        )),
    }
}

fn typed<T: Float>(
    x: &Tensor,
    outer: usize,
    along: usize,
    inner: usize,
    f: SliceFn,
) -> Result<Tensor, OpError> {
    let src = x
        .values::<T>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
    let block = along * inner;
    let mut out = try_zeroed::<T>(outer * block)?;
    // Whole blocks per chunk, enough of them that a small tensor (a LayerNorm over
    // [1, 32, 128]) stays on the calling thread: a task per block cost more in pool
    // hand-offs than the normalisation. (No blocks at all when they are empty.)
    if let Some(blocks) = PAR_MIN_ELEMENTS.checked_div(block) {
        let grain = blocks.max(1) * block;
        par::for_each_split_mut(&mut out, grain, &|start, dst| {
            let (mut a, mut b) = (vec![0f64; along], vec![0f64; along]);
            for (k, dst) in dst.chunks_mut(block).enumerate() {
                let first = start + k * block;
                let src = &src[first..first + block];
                for i in 0..inner {
                    for (k, v) in a.iter_mut().enumerate() {
                        *v = src[k * inner + i].to_f64();
                    }
                    f(&a, &mut b);
                    for (k, &v) in b.iter().enumerate() {
                        dst[k * inner + i] = T::from_f64(v);
                    }
                }
            }
        });
    }
    Tensor::new(x.element_type(), x.shape().to_vec(), T::wrap(out))
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}
