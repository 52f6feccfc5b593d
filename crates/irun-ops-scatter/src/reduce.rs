//! The arithmetic of the scatter reductions, separate from the addressing of each op.
//!
//! A kernel is generic over the element type `T: Elem` and the combine rule `C: Combine<T>`;
//! [`dispatch`] picks both from the tensor's element type and the reduction. f16 and bf16 are
//! widened to f32, reduced there and rounded once per element at the end (as OpenVINO's
//! reference does). Integer arithmetic wraps in the element type, as in OpenVINO.

use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{storage_kind, ElementType, Storage, Tensor};

use super::Reduction;
pub use crate::elem::Elem;
use crate::fill::{filled, FillFrom};
use crate::kernel::take_or_copy;
use crate::op::{codes, OpError, Value};
use crate::updates::{Updates, Widening};
use irun_opkit::halves::Half;

/// How an update combines with the current output element.
pub trait Combine<T: Elem>: Send + Sync {
    /// The value `use_init_val=false` puts in a targeted element before its first update.
    const NEUTRAL: T;
    /// Whether `apply(apply(a, u), v) == apply(a, apply(u, v))` on types whose combines are
    /// exact ([`Elem::EXACT`]): a run of updates may then be folded apart and applied to
    /// its element as one. Not so for `Sub`, whose run would subtract a difference.
    const ASSOCIATIVE: bool = true;
    /// Whether `apply(a, NEUTRAL) == a` for every `a` on exact types: updates folded from
    /// `NEUTRAL` may then stand for an element none of them reached. Not so for `Assign`.
    const IDENTITY: bool;
    /// Whether `apply(apply(a, u), v) == apply(apply(a, v), u)` on exact types: the updates
    /// of one element may then be applied in any order. Not so for `Assign`, where the last
    /// one wins.
    const COMMUTES: bool = true;
    fn apply(acc: T, update: T) -> T;
}

/// `reduction="none"`: the update replaces the element (so the last one wins).
pub struct Assign;
pub struct Sum;
pub struct Sub;
pub struct Prod;
/// ScatterElementsUpdate's max, `acc > u ? acc : u`: a NaN update poisons the element and a
/// later update replaces a NaN (OpenVINO's reference; docs/semantics.md, section 1).
pub struct MaxElements;
/// ScatterElementsUpdate's min, `acc < u ? acc : u`.
pub struct MinElements;
/// ScatterNDUpdate's max, `std::max(acc, u)`: a NaN accumulator stays, a NaN update is ignored.
pub struct MaxNd;
/// ScatterNDUpdate's min, `std::min(acc, u)`.
pub struct MinNd;

impl<T: Elem> Combine<T> for Assign {
    const NEUTRAL: T = T::ZERO;
    const IDENTITY: bool = false;
    const COMMUTES: bool = false;
    #[inline]
    fn apply(_: T, u: T) -> T {
        u
    }
}
impl<T: Elem> Combine<T> for Sum {
    const NEUTRAL: T = T::ZERO;
    const IDENTITY: bool = true;
    #[inline]
    fn apply(a: T, u: T) -> T {
        a.add(u)
    }
}
impl<T: Elem> Combine<T> for Sub {
    const NEUTRAL: T = T::ZERO;
    const IDENTITY: bool = true;
    const ASSOCIATIVE: bool = false;
    #[inline]
    fn apply(a: T, u: T) -> T {
        a.sub(u)
    }
}
impl<T: Elem> Combine<T> for Prod {
    const NEUTRAL: T = T::ONE;
    const IDENTITY: bool = true;
    #[inline]
    fn apply(a: T, u: T) -> T {
        a.mul(u)
    }
}
impl<T: Elem> Combine<T> for MaxElements {
    const NEUTRAL: T = T::LOWEST;
    const IDENTITY: bool = true;
    #[inline]
    fn apply(a: T, u: T) -> T {
        if a > u {
            a
        } else {
            u
        }
    }
}
impl<T: Elem> Combine<T> for MinElements {
    const NEUTRAL: T = T::HIGHEST;
    const IDENTITY: bool = true;
    #[inline]
    fn apply(a: T, u: T) -> T {
        if a < u {
            a
        } else {
            u
        }
    }
}
impl<T: Elem> Combine<T> for MaxNd {
    const NEUTRAL: T = T::LOWEST;
    const IDENTITY: bool = true;
    #[inline]
    fn apply(a: T, u: T) -> T {
        if a < u {
            u
        } else {
            a
        }
    }
}
impl<T: Elem> Combine<T> for MinNd {
    const NEUTRAL: T = T::HIGHEST;
    const IDENTITY: bool = true;
    #[inline]
    fn apply(a: T, u: T) -> T {
        if u < a {
            u
        } else {
            a
        }
    }
}

/// Which op's NaN behaviour max and min follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MinMaxRule {
    Elements,
    Nd,
}

/// An op's addressing, run for one element type and combine rule.
pub trait ReduceKernel {
    /// Updates `out`, which starts as the data.
    fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError>;

    /// As [`ReduceKernel::run`] on an output not written yet: the kernel fills `out` from
    /// the data itself, every slot of it. This one copies the data first, in parallel; a
    /// kernel whose updates walk the output in order copies each stretch as it reaches it
    /// ([`crate::fill::Window`]).
    fn run_into<T: Elem, C: Combine<T>>(
        &self,
        out: FillFrom<'_, T>,
        updates: &[T],
    ) -> Result<(), OpError> {
        self.run::<T, C>(out.copy_all(), updates)
    }

    /// As [`ReduceKernel::run`], the updates read through [`Updates`] a block at a time, so
    /// that f16 or bf16 updates are widened by each block rather than whole first
    /// ([`Widening`]); `None`, with nothing written, where this run reads them whole (the
    /// caller then widens them and calls [`ReduceKernel::run`]).
    fn run_from<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        _out: &mut [T],
        _updates: &U,
    ) -> Option<Result<(), OpError>> {
        None
    }
}

/// Runs `kernel` on `out` (the data, reused as output) and `updates` (same element type) with
/// the combine rule of `reduction`. `Mean` runs as `Sum`; the kernel divides.
pub fn dispatch<K: ReduceKernel>(
    kernel: &K,
    out: &mut Tensor,
    updates: &Tensor,
    reduction: Reduction,
    rule: MinMaxRule,
) -> Result<(), OpError> {
    let ty = out.element_type();
    check_reducible(ty, reduction)?;
    if matches!(out.storage(), Storage::F16(_) | Storage::Bf16(_)) && reduction != Reduction::None {
        let wide = reduce_widened(kernel, out, updates, reduction, rule)?;
        narrow(out, &wide);
        return Ok(());
    }
    struct InPlace<'a, K> {
        kernel: &'a K,
        out: &'a mut Tensor,
        updates: &'a Tensor,
    }
    impl<K: ReduceKernel> Job for InPlace<'_, K> {
        type Out = ();
        fn run<T: Elem, C: Combine<T>>(self) -> Result<(), OpError> {
            let o = self
                .out
                .values_mut::<T>()
                .expect("out storage matches its type");
            let u = updates_as::<T>(self.updates)?;
            self.kernel.run::<T, C>(o, u)
        }
    }
    let job = InPlace {
        kernel,
        out,
        updates,
    };
    for_type(ty, reduction, rule, job)
}

/// An f16 or bf16 reduction computed in f32: `data` widened, the updates widened a block
/// at a time where the kernel reads them so ([`dispatch_widening`]), else whole; the result
/// is left in f32 for the caller to round once per element.
fn reduce_widened<K: ReduceKernel>(
    kernel: &K,
    data: &Tensor,
    updates: &Tensor,
    reduction: Reduction,
    rule: MinMaxRule,
) -> Result<Tensor, OpError> {
    let mut wide = widen(data)?;
    let by_block = match updates.storage() {
        Storage::F16(v) => dispatch_widening(kernel, &mut wide, v, reduction, rule)?,
        Storage::Bf16(v) => dispatch_widening(kernel, &mut wide, v, reduction, rule)?,
        _ => return Err(mismatch(updates)),
    };
    if !by_block {
        let wide_updates = widen(updates)?;
        dispatch(kernel, &mut wide, &wide_updates, reduction, rule)?;
    }
    Ok(wide)
}

/// [`dispatch`] of an f16 or bf16 reduction through [`ReduceKernel::run_from`]: `out` is
/// the data widened to f32, and each block of `updates` is widened as it is read. `false`,
/// with `out` untouched, where the kernel reads the updates whole.
fn dispatch_widening<K: ReduceKernel, H: Half>(
    kernel: &K,
    out: &mut Tensor,
    updates: &[H],
    reduction: Reduction,
    rule: MinMaxRule,
) -> Result<bool, OpError> {
    struct Widened<'a, K, H> {
        kernel: &'a K,
        out: &'a mut Tensor,
        updates: Widening<'a, H>,
    }
    impl<K: ReduceKernel, H: Half> Job for Widened<'_, K, H> {
        type Out = bool;
        fn run<T: Elem, C: Combine<T>>(self) -> Result<bool, OpError> {
            let o = self
                .out
                .values_mut::<T>()
                .expect("out storage matches its type");
            match self.kernel.run_from::<T, C, _>(o, &self.updates) {
                Some(done) => done.map(|()| true),
                None => Ok(false),
            }
        }
    }
    let job = Widened {
        kernel,
        out,
        updates: Widening(updates),
    };
    for_type(ElementType::F32, reduction, rule, job)
}

/// As [`dispatch`], with the data as the op received it, returning the output: the data
/// itself, updated in place, when nothing else holds it; else a new tensor that the kernel
/// fills from the data ([`ReduceKernel::run_into`]), so that a kernel can copy each stretch
/// just before its updates reach it rather than copy the whole data first.
pub fn dispatch_from<K: ReduceKernel>(
    kernel: &K,
    data: Value,
    updates: &Tensor,
    reduction: Reduction,
    rule: MinMaxRule,
) -> Result<Tensor, OpError> {
    let ty = data.element_type();
    check_reducible(ty, reduction)?;
    let widened = matches!(data.storage(), Storage::F16(_) | Storage::Bf16(_))
        && reduction != Reduction::None;
    let data = match Arc::try_unwrap(data) {
        Ok(mut out) if out.is_exclusive() => {
            dispatch(kernel, &mut out, updates, reduction, rule)?;
            return Ok(out);
        }
        Ok(t) => Arc::new(t),
        Err(shared) => shared,
    };
    if widened {
        // Widened from the shared data and rounded into a new tensor: a copy of the data
        // made first would only be overwritten by the rounding.
        let wide = reduce_widened(kernel, &data, updates, reduction, rule)?;
        return narrowed(&data, &wide);
    }
    if data.words().is_none() {
        let mut out = take_or_copy(data);
        dispatch(kernel, &mut out, updates, reduction, rule)?;
        return Ok(out);
    }
    struct Filled<'a, K> {
        kernel: &'a K,
        data: &'a Tensor,
        updates: &'a Tensor,
    }
    impl<K: ReduceKernel> Job for Filled<'_, K> {
        type Out = Tensor;
        fn run<T: Elem, C: Combine<T>>(self) -> Result<Tensor, OpError> {
            let src = self
                .data
                .values::<T>()
                .expect("data storage matches its type");
            let u = updates_as::<T>(self.updates)?;
            let out = filled(src, |fill| self.kernel.run_into::<T, C>(fill, u))?;
            Tensor::new(
                self.data.element_type(),
                self.data.shape().to_vec(),
                T::wrap(out),
            )
            .map_err(|e| OpError::new(codes::INTERNAL, e.to_string()))
        }
    }
    let job = Filled {
        kernel,
        data: &data,
        updates,
    };
    for_type(ty, reduction, rule, job)
}

/// A kernel run for one element type and combine rule, picked at run time by [`for_type`].
trait Job {
    type Out;
    fn run<T: Elem, C: Combine<T>>(self) -> Result<Self::Out, OpError>;
}

/// Runs `job` for the storage type of `ty` and the combine rule of `reduction`. f16 and bf16
/// reach here only to move values (`none`); their reductions are widened first.
fn for_type<J: Job>(
    ty: ElementType,
    reduction: Reduction,
    rule: MinMaxRule,
    job: J,
) -> Result<J::Out, OpError> {
    fn by_rule<T: Elem, J: Job>(
        red: Reduction,
        rule: MinMaxRule,
        job: J,
    ) -> Result<J::Out, OpError> {
        match (red, rule) {
            (Reduction::None, _) => job.run::<T, Assign>(),
            (Reduction::Sum | Reduction::Mean, _) => job.run::<T, Sum>(),
            (Reduction::Sub, _) => job.run::<T, Sub>(),
            (Reduction::Prod, _) => job.run::<T, Prod>(),
            (Reduction::Max, MinMaxRule::Elements) => job.run::<T, MaxElements>(),
            (Reduction::Min, MinMaxRule::Elements) => job.run::<T, MinElements>(),
            (Reduction::Max, MinMaxRule::Nd) => job.run::<T, MaxNd>(),
            (Reduction::Min, MinMaxRule::Nd) => job.run::<T, MinNd>(),
        }
    }
    let (red, rule) = (reduction, rule);
    match storage_kind(ty) {
        Some(Storage::Bool(_)) => by_rule::<bool, J>(red, rule, job),
        Some(Storage::F32(_)) => by_rule::<f32, J>(red, rule, job),
        Some(Storage::F64(_)) => by_rule::<f64, J>(red, rule, job),
        Some(Storage::I8(_)) => by_rule::<i8, J>(red, rule, job),
        Some(Storage::I16(_)) => by_rule::<i16, J>(red, rule, job),
        Some(Storage::I32(_)) => by_rule::<i32, J>(red, rule, job),
        Some(Storage::I64(_)) => by_rule::<i64, J>(red, rule, job),
        Some(Storage::U8(_)) => by_rule::<u8, J>(red, rule, job),
        Some(Storage::U16(_)) => by_rule::<u16, J>(red, rule, job),
        Some(Storage::U32(_)) => by_rule::<u32, J>(red, rule, job),
        Some(Storage::U64(_)) => by_rule::<u64, J>(red, rule, job),
        Some(Storage::F16(_)) if red == Reduction::None => by_rule::<f16, J>(red, rule, job),
        Some(Storage::Bf16(_)) if red == Reduction::None => by_rule::<bf16, J>(red, rule, job),
        _ => Err(OpError::new(
            codes::UNSUPPORTED_TYPE,
            format!("scatter on {ty} data is not implemented"),
        )),
    }
}

/// Rejects reductions on types stored widened (see [`is_packed_or_narrow`]).
fn check_reducible(ty: ElementType, reduction: Reduction) -> Result<(), OpError> {
    if reduction != Reduction::None && is_packed_or_narrow(ty) {
        return Err(OpError::new(
            codes::UNSUPPORTED_TYPE,
            format!("reduction {reduction:?} on {ty} data is not implemented (only none is)"),
        ));
    }
    Ok(())
}

/// The updates' values as `T`, the data's type; an error naming the updates when they are
/// of another type.
fn updates_as<T: irun_tensor::Scalar>(t: &Tensor) -> Result<&[T], OpError> {
    t.values::<T>().ok_or_else(|| mismatch(t))
}

fn mismatch(t: &Tensor) -> OpError {
    OpError::input(
        2,
        codes::ELEMENT_TYPE,
        format!(
            "updates element type {} differs from data",
            t.element_type()
        ),
    )
}

/// Types stored widened (u1..u6 and i4 in bytes, nf4/f4/f8 as f32): a reduction computed in
/// the storage type would not wrap or round as the narrow type does.
fn is_packed_or_narrow(ty: ElementType) -> bool {
    use ElementType::*;
    matches!(
        ty,
        U1 | U2 | U3 | U4 | U6 | I4 | Nf4 | F4e2m1 | F8e4m3 | F8e5m2 | F8e8m0
    )
}

/// f16/bf16 -> f32 (exact).
fn widen(t: &Tensor) -> Result<Tensor, OpError> {
    let v: Vec<f32> = match t.storage() {
        Storage::F16(v) => irun_opkit::halves::widen(v)?,
        Storage::Bf16(v) => irun_opkit::halves::widen(v)?,
        _ => return Err(mismatch(t)),
    };
    Ok(Tensor::from_f32(t.shape().to_vec(), v).expect("same length"))
}

/// A new tensor of `like`'s type (f16 or bf16) and shape holding `wide` rounded once per
/// element to nearest-even.
fn narrowed(like: &Tensor, wide: &Tensor) -> Result<Tensor, OpError> {
    let w = wide.values::<f32>().expect("widened tensor is f32");
    let shape = like.shape().to_vec();
    let t = match like.storage() {
        Storage::F16(_) => Tensor::from_f16(shape, irun_opkit::halves::narrow(w)?),
        Storage::Bf16(_) => Tensor::from_bf16(shape, irun_opkit::halves::narrow(w)?),
        _ => return Err(mismatch(like)),
    };
    t.map_err(|e| OpError::new(codes::INTERNAL, e.to_string()))
}

/// Writes f32 values back into an f16/bf16 tensor, rounding each once to nearest-even.
/// Untouched elements round-trip exactly.
fn narrow(out: &mut Tensor, wide: &Tensor) {
    let w = wide.values::<f32>().expect("widened tensor is f32");
    if let Some(o) = out.values_mut::<f16>() {
        irun_opkit::halves::narrow_into(o, w);
    } else if let Some(o) = out.values_mut::<bf16>() {
        irun_opkit::halves::narrow_into(o, w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds each update to element 0, recording which entry it came through; `by_block`
    /// says whether it serves [`ReduceKernel::run_from`].
    struct AddAll {
        by_block: bool,
        path: std::sync::Mutex<&'static str>,
    }

    impl ReduceKernel for AddAll {
        fn run<T: Elem, C: Combine<T>>(&self, out: &mut [T], updates: &[T]) -> Result<(), OpError> {
            *self.path.lock().unwrap() = "run";
            for &u in updates {
                out[0] = C::apply(out[0], u);
            }
            Ok(())
        }

        fn run_from<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
            &self,
            out: &mut [T],
            updates: &U,
        ) -> Option<Result<(), OpError>> {
            if !self.by_block {
                return None;
            }
            *self.path.lock().unwrap() = "run_from";
            let mut buf = Vec::new();
            for &u in updates.block(0, 3, &mut buf) {
                out[0] = C::apply(out[0], u);
            }
            Some(Ok(()))
        }
    }

    /// f16 and bf16 reductions go through `run_from` with the updates widened by block when
    /// the kernel serves it, and through `run` with them widened whole when it does not:
    /// either way in f32, rounded once (2048 + 1 + 1 + 6 = 2056, exact in f16; step by step
    /// in f16, 2048 + 1 would stay 2048).
    #[test]
    fn halves_reach_run_from_when_the_kernel_reads_by_block() {
        for by_block in [true, false] {
            let kernel = AddAll {
                by_block,
                path: std::sync::Mutex::new(""),
            };
            let ups = [1.0, 1.0, 6.0];
            let cases = [
                (
                    Tensor::from_f16(vec![2], vec![f16::from_f32(2048.0), f16::ZERO]).unwrap(),
                    Tensor::from_f16(vec![3], ups.map(f16::from_f32).to_vec()).unwrap(),
                ),
                (
                    Tensor::from_bf16(vec![2], vec![bf16::from_f32(256.0), bf16::ZERO]).unwrap(),
                    Tensor::from_bf16(vec![3], ups.map(bf16::from_f32).to_vec()).unwrap(),
                ),
            ];
            for (mut out, updates) in cases {
                dispatch(
                    &kernel,
                    &mut out,
                    &updates,
                    Reduction::Sum,
                    MinMaxRule::Elements,
                )
                .unwrap();
                let want = if by_block { "run_from" } else { "run" };
                assert_eq!(*kernel.path.lock().unwrap(), want);
                let first = match out.storage() {
                    Storage::F16(v) => v[0].to_f32(),
                    Storage::Bf16(v) => v[0].to_f32(),
                    _ => unreachable!("a half tensor"),
                };
                let base = if matches!(out.storage(), Storage::F16(_)) {
                    2048.0
                } else {
                    256.0
                };
                assert_eq!(first, base + 8.0, "{want}");
            }
        }
    }

    #[test]
    fn integer_mean_floors_and_is_exact_for_i64() {
        assert_eq!((-3i32).div_count(2), -2);
        assert_eq!((-16i32).div_count(3), -6);
        assert_eq!(7u8.div_count(2), 3);
        let big = (1i64 << 53) + 1;
        assert_eq!((big * 2).div_count(2), big);
    }

    #[test]
    fn nan_rules_differ_between_elements_and_nd() {
        let nan = f32::NAN;
        // ScatterElementsUpdate: NaN update poisons, a later update replaces NaN.
        assert!(<MaxElements as Combine<f32>>::apply(1.0, nan).is_nan());
        assert_eq!(<MaxElements as Combine<f32>>::apply(nan, 2.0), 2.0);
        // ScatterNDUpdate: NaN accumulator stays, NaN update is ignored.
        assert!(<MaxNd as Combine<f32>>::apply(nan, 2.0).is_nan());
        assert_eq!(<MaxNd as Combine<f32>>::apply(1.0, nan), 1.0);
        assert_eq!(<MinNd as Combine<f32>>::apply(1.0, nan), 1.0);
    }

    #[test]
    fn boolean_reductions_are_logical() {
        assert!(<Sum as Combine<bool>>::apply(false, true));
        assert!(!<Sub as Combine<bool>>::apply(true, true));
        assert!(!<Prod as Combine<bool>>::apply(true, false));
        assert!(<MaxElements as Combine<bool>>::apply(false, true));
        assert!(!<MinElements as Combine<bool>>::apply(true, false));
    }

    #[test]
    fn neutral_of_max_is_lowest_finite() {
        assert_eq!(<MaxElements as Combine<f32>>::NEUTRAL, f32::MIN);
        assert_eq!(<MinElements as Combine<i64>>::NEUTRAL, i64::MAX);
    }
}
