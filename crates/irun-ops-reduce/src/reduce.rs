//! What the Reduce* ops share: `keep_dims`, the axes input (scalar or 1-D, negative allowed,
//! repeats tolerated, empty = identity), inference, and one kernel over `[outer, reduced,
//! inner]` in which each output element folds its inputs in index order, so results do not
//! depend on the thread count. Over an empty extent: Sum, Mean, L1, L2 give 0, Prod 1, Max -inf
//! and Min +inf for floats (ONNX's identities, and what OpenVINO CPU gives; its reference
//! gives the lowest and highest finite values), the type's lowest and highest for integers. NaN propagates through every reduction (Max and Min
//! too, as torch's amax/amin; the reference skips NaN there and OpenVINO CPU depends on the
//! position).

use std::sync::Arc;

use irun_tensor::{with_int, ElementType, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::axes::{normalise, numeric_only, reduced_dims, reduced_shape, Layout};
use crate::fact::Fact;
use crate::kernel::{try_zeroed, PAR_MIN_ELEMENTS};
use crate::num::{Float, Int};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::simd;
use crate::util::{expect_int_type, ints, known_ints};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    L1,
    L2,
}

#[derive(Debug)]
pub struct Reduce {
    pub kind: Kind,
    pub keep_dims: bool,
    pub name: &'static str,
}

impl Reduce {
    pub fn build(a: &AttrReader, kind: Kind, name: &'static str) -> Result<Box<dyn Op>, OpError> {
        Ok(Box::new(Reduce {
            kind,
            keep_dims: a.bool_or("keep_dims", false)?,
            name,
        }))
    }
}

impl Op for Reduce {
    fn name(&self) -> &'static str {
        self.name
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name)?;
        expect_int_type(inputs, 1, self.name)?;
        let data = &inputs[0];
        if matches!(data.ty, ElementType::Boolean | ElementType::String) {
            return Err(numeric_only(self.name, data.ty));
        }
        if let Some(r) = inputs[1].rank().filter(|&r| r > 1) {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("{}: axes must be a scalar or 1-D, got rank {r}", self.name),
            ));
        }
        let shape = match (data.shape.dims(), known_ints(&inputs[1])) {
            (Some(dims), Some(axes)) => {
                let axes = normalise(&axes, dims.len(), 1, self.name)?;
                reduced_shape(dims, &axes, self.keep_dims)
            }
            (Some(dims), None) if self.keep_dims => PartialShape::dynamic_of_rank(dims.len()),
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, axes] = take_inputs::<2>(inputs, self.name)?;
        let axes = normalise(&ints(&axes, 1)?, data.shape().len(), 1, self.name)?;
        let shape = reduced_dims(data.shape(), &axes, self.keep_dims, 1);
        let l = Layout::of(&data, &axes, self.name)?;
        let ty = data.element_type();
        let k = self.kind;
        let out = match ty {
            ElementType::F32 if matches!(k, Kind::Max | Kind::Min) && l.reduced > 0 => {
                extreme_f32(&l, k == Kind::Max, shape)
            }
            ElementType::F32 => floats::<f32>(&l, k, ty, shape),
            ElementType::F64 => floats::<f64>(&l, k, ty, shape),
            ElementType::F16 => floats::<half::f16>(&l, k, ty, shape),
            ElementType::Bf16 => floats::<half::bf16>(&l, k, ty, shape),
            ty if k == Kind::L2 => Err(OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!("{} on {ty} (the reference has no integer L2)", self.name),
            )),
            ty => {
                with_int!(ty, T => ints_reduce::<T>(&l, k, ty, shape), else Err(numeric_only(self.name, ty)))
            }
        }?;
        Ok(vec![Arc::new(out)])
    }
}

/// Runs `fold(values of one output's reduced extent, with stride)` into every output, in
/// parallel over output chunks: `[outer, reduced, inner]`, output `o * inner + i`.
fn reduce_into<T: Copy + Sync, O: Copy + Default + Send>(
    src: &[T],
    l: &Layout,
    fold: &(dyn Fn(&[T], usize, usize) -> O + Sync),
) -> Result<Vec<O>, OpError> {
    let (r, inner) = (l.reduced, l.inner);
    let mut out = try_zeroed::<O>(l.outer * inner)?;
    let grain = (PAR_MIN_ELEMENTS / r.max(1)).max(1);
    par::for_each_split_mut(&mut out, grain, &|start, chunk| {
        for (k, d) in chunk.iter_mut().enumerate() {
            let p = start + k;
            let (o, i) = (p / inner, p % inner);
            // An empty extent (r == 0) reads nothing, whatever the offset.
            *d = fold(src.get(o * r * inner + i..).unwrap_or(&[]), inner, r);
        }
    });
    Ok(out)
}

fn floats<T: Float>(
    l: &Layout,
    kind: Kind,
    ty: ElementType,
    shape: Vec<usize>,
) -> Result<Tensor, OpError> {
    let src = l
        .data
        .values::<T>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
    let out: Vec<T> = reduce_into(src, l, &|v: &[T], stride: usize, n: usize| {
        let it = (0..n).map(|j| v[j * stride].to_f64());
        let sum = || match stride {
            1 => sum_f64(&v[..n]),
            _ => it.clone().sum::<f64>(),
        };
        let x = match kind {
            Kind::Sum => sum(),
            Kind::Mean => {
                if n == 0 {
                    0.0
                } else {
                    sum() / n as f64
                }
            }
            Kind::Prod => it.product::<f64>(),
            Kind::L1 => it.map(f64::abs).sum::<f64>(),
            Kind::L2 => it.map(|x| x * x).sum::<f64>().sqrt(),
            Kind::Max => {
                if n == 0 {
                    f64::NEG_INFINITY
                } else {
                    it.fold(f64::NEG_INFINITY, |a, x| {
                        if a.is_nan() || x.is_nan() {
                            f64::NAN
                        } else {
                            a.max(x)
                        }
                    })
                }
            }
            Kind::Min => {
                if n == 0 {
                    f64::INFINITY
                } else {
                    it.fold(f64::INFINITY, |a, x| {
                        if a.is_nan() || x.is_nan() {
                            f64::NAN
                        } else {
                            a.min(x)
                        }
                    })
                }
            }
        };
        T::from_f64(x)
    })?;
    Tensor::new(ty, shape, T::wrap(out)).map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// The sum of a contiguous extent in f64, in eight interleaved partial sums (lane `j % 8`)
/// added pairwise at the end, then the tail in order: one vector of f64 adds per eight
/// values instead of a chain of dependent ones (MobileNetV3's squeeze-excite means over
/// 56x56 planes took 23 us a layer). The order is fixed by the extent's length alone, so the
/// result does not depend on the thread count.
fn sum_f64<T: Float>(v: &[T]) -> f64 {
    crate::simd::widest(
        #[inline(always)]
        || {
            let mut acc = [0f64; 8];
            let lanes = v.chunks_exact(8);
            let tail = lanes.remainder();
            for c in lanes {
                for (a, &x) in acc.iter_mut().zip(c) {
                    *a += x.to_f64();
                }
            }
            let mut s =
                ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
            for &x in tail {
                s += x.to_f64();
            }
            s
        },
    )
}

/// ReduceMax/ReduceMin on f32, exact in f32 (no rounding to lose): the reduced rows of each
/// outer block folded into a row of `inner` accumulators, element by element, so the loop
/// runs over contiguous memory and vectorises (PointPillars' max over the points of each
/// pillar: [12000, 32, 64] -> [12000, 64]). A NaN anywhere in an extent makes its result
/// NaN, as the f64 path does.
fn extreme_f32(l: &Layout, max: bool, shape: Vec<usize>) -> Result<Tensor, OpError> {
    let src = l
        .data
        .values::<f32>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
    let mut out = try_zeroed::<f32>(l.outer * l.inner)?;
    // One instance per direction, so the comparison is fixed inside the loops.
    if max {
        fold_extremes(src, l, &mut out, |x, a| x > a);
    } else {
        fold_extremes(src, l, &mut out, |x, a| x < a);
    }
    Tensor::from_f32(shape, out).map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// [`extreme_f32`]'s folds, `further(x, a)` saying whether `x` beats `a`.
fn fold_extremes(
    src: &[f32],
    l: &Layout,
    out: &mut [f32],
    further: impl Fn(f32, f32) -> bool + Copy + Sync,
) {
    let (r, inner) = (l.reduced, l.inner);
    // A select on comparisons, which vectorises (branches on NaN and a direction read from
    // memory did not: 6.6 GB/s): `x` replaces `a` when it is further along, or NaN; a NaN `a`
    // is never replaced. Ties keep the first value.
    let pick = move |a: f32, x: f32| {
        if further(x, a) || x.is_nan() {
            x
        } else {
            a
        }
    };
    if inner == 1 {
        // Each output folds one contiguous run of `r` values: eight lanes, then the lanes.
        let grain = (PAR_MIN_ELEMENTS / r).max(1);
        par::for_each_split_mut(out, grain, &|start, chunk| {
            for (k, d) in chunk.iter_mut().enumerate() {
                let run = &src[(start + k) * r..][..r];
                let mut lanes = [run[0]; 8];
                let chunks = run.chunks_exact(8);
                let rest = chunks.remainder();
                simd::widest(
                    #[inline(always)]
                    || {
                        for c in chunks {
                            for (a, &x) in lanes.iter_mut().zip(c) {
                                *a = pick(*a, x);
                            }
                        }
                    },
                );
                *d = rest.iter().chain(&lanes).fold(run[0], |a, &x| pick(a, x));
            }
        });
    } else {
        let grain = (PAR_MIN_ELEMENTS / r).max(1).div_ceil(inner) * inner;
        par::for_each_split_mut(out, grain, &|start, chunk| {
            for (b, acc) in chunk.chunks_mut(inner).enumerate() {
                let block = &src[(start / inner + b) * r * inner..][..r * inner];
                acc.copy_from_slice(&block[..inner]);
                simd::widest(
                    #[inline(always)]
                    || {
                        for row in block.chunks_exact(inner).skip(1) {
                            simd::update_each(acc, row, pick);
                        }
                    },
                );
            }
        });
    }
}

fn ints_reduce<T: Int>(
    l: &Layout,
    kind: Kind,
    ty: ElementType,
    shape: Vec<usize>,
) -> Result<Tensor, OpError> {
    let src = l
        .data
        .values::<T>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
    let out: Vec<T> = reduce_into(src, l, &|v: &[T], stride: usize, n: usize| {
        let it = (0..n).map(|j| v[j * stride]);
        match kind {
            Kind::Sum => it.fold(T::ZERO, T::add),
            Kind::Mean => it.fold(T::ZERO, T::add).div_count(n),
            Kind::Prod => it.fold(T::ONE, T::mul),
            Kind::L1 => it.fold(T::ZERO, |a, x| a.add(x.abs())),
            Kind::Max => it.fold(T::MIN, Ord::max),
            Kind::Min => it.fold(T::MAX, Ord::min),
            Kind::L2 => T::ZERO,
        }
    })?;
    Tensor::new(ty, shape, T::wrap(out)).map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::sum_f64;

    /// Every value counted once, tails of every length included: the lanes' sum agrees with
    /// the in-order sum to f64 rounding (integers, where both are exact, to the bit).
    #[test]
    fn lane_sums_count_every_value_once() {
        for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 1003] {
            let ints: Vec<f32> = (0..n).map(|i| (i % 97) as f32 - 40.0).collect();
            let exact: f64 = ints.iter().map(|&x| f64::from(x)).sum();
            assert_eq!(sum_f64(&ints), exact, "{n} integers");
            let fracs: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 997.0).collect();
            let ordered: f64 = fracs.iter().map(|&x| f64::from(x)).sum();
            assert!((sum_f64(&fracs) - ordered).abs() <= 1e-12 * ordered.abs().max(1.0));
        }
    }
}
