//! What every unary elementwise op shares: inference (same shape; the element types the op
//! accepts) and the kernel, which writes into the input's buffer when the executor handed over
//! the only reference. f16/bf16 compute in f32 and round once per element.
//!
//! An op is a unit type (or a struct of its attributes) implementing [`UnaryKind`]; the
//! generic [`Unary`] is the [`Op`].

use std::fmt::Debug;
use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{with_int, ElementType, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::binary::internal;
use crate::fact::Fact;
use crate::kernel::PAR_MIN_ELEMENTS;
use crate::num::Number;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;

/// The float types a unary function is computed in: f32 (also for f16/bf16) and f64.
pub trait Real:
    Copy
    + PartialOrd
    + Default
    + Send
    + Sync
    + 'static
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
{
    /// A constant of the formula (exact for every constant used here).
    fn c(x: f64) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn abs(self) -> Self;
    fn erf(self) -> Self;
    fn ln_1p(self) -> Self;
    fn is_nan(self) -> bool;
    fn tan(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    /// To the nearest integer, halves away from zero.
    fn round(self) -> Self;
    /// To the nearest integer, halves to the even one.
    fn round_ties_even(self) -> Self;
}

/// Methods that forward to the standard library's function of the same name.
macro_rules! libm_forms {
    ($t:ty; $($f:ident),*) => {$(
        #[inline(always)]
        fn $f(self) -> Self {
            <$t>::$f(self)
        }
    )*};
}

macro_rules! real {
    ($t:ty, $erf:path) => {
        impl Real for $t {
            #[inline(always)]
            fn c(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            libm_forms!($t; tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, round, round_ties_even);
        }
    };
}

real!(f32, libm::erff);
real!(f64, libm::erf);

/// Maximum and minimum for the formulas: NaN in `self` stays NaN.
pub trait RealExt: Real {
    #[inline(always)]
    fn max_r(self, o: Self) -> Self {
        if o > self {
            o
        } else {
            self
        }
    }
    #[inline(always)]
    fn min_r(self, o: Self) -> Self {
        if o < self {
            o
        } else {
            self
        }
    }
}
impl<R: Real> RealExt for R {}

/// One unary op: its name, attributes, which types it takes, and its function.
pub trait UnaryKind: Debug + Send + Sync + Sized + 'static {
    /// `Type-vN`, e.g. `Sigmoid-1`.
    const NAME: &'static str;
    /// Whether integer inputs are computed (else they are valid in the IR but not implemented
    /// here: E0603 at run time).
    const INTEGERS: bool = false;
    fn build(a: &AttrReader) -> Result<Self, OpError>;
    fn real<R: Real>(&self, x: R) -> R;
    /// A vectorised f32 form over a whole slice, in place (rten-vecmath: within a few ULP of
    /// `real`, 0.2-0.4 ns per element instead of 3-25 ns); `false` when the op has none.
    fn f32_slice(&self, _values: &mut [f32]) -> bool {
        false
    }
    /// The integer form; only called when `INTEGERS` is true.
    fn int<T: Number>(&self, x: T) -> T {
        x
    }
}

/// A unary elementwise op of kind `K`.
#[derive(Debug)]
pub struct Unary<K>(pub K);

impl<K: UnaryKind> Unary<K> {
    /// The registry's builder.
    pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
        Ok(Box::new(Unary(K::build(a)?)))
    }
}

/// Checks that a unary op's single input is numeric; the output fact is the input's.
pub fn infer_numeric(inputs: &[Fact], name: &str) -> Result<Vec<Fact>, OpError> {
    expect_inputs(inputs, 1, name)?;
    let f = &inputs[0];
    if f.ty == ElementType::Boolean || f.ty == ElementType::String {
        return Err(OpError::input(
            0,
            codes::ELEMENT_TYPE,
            format!("{name}: input element type must be numeric, got {}", f.ty),
        ));
    }
    Ok(vec![Fact::new(f.ty, f.shape.clone())])
}

impl<K: UnaryKind> Op for Unary<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        infer_numeric(inputs, K::NAME)
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, K::NAME)?;
        let k = &self.0;
        let out = match x.element_type() {
            ElementType::F32 if k.f32_slice(&mut []) => map_slices_in_place(x, |s| {
                k.f32_slice(s);
            }),
            ElementType::F32 => map_in_place::<f32>(x, |v| k.real(v)),
            ElementType::F64 => map_in_place::<f64>(x, |v| k.real(v)),
            ElementType::F16 => map_in_place::<f16>(x, |v| f16::from_f32(k.real(v.to_f32()))),
            ElementType::Bf16 => map_in_place::<bf16>(x, |v| bf16::from_f32(k.real(v.to_f32()))),
            ty if K::INTEGERS => {
                with_int!(ty, T => map_in_place::<T>(x, |v| k.int(v)), else Err(unsupported(K::NAME, ty)))
            }
            ty => Err(unsupported(K::NAME, ty)),
        }?;
        Ok(vec![Arc::new(out)])
    }
}

pub fn unsupported(name: &str, ty: ElementType) -> OpError {
    OpError::new(
        codes::UNSUPPORTED_TYPE,
        format!("{name} on {ty} is not implemented"),
    )
}

/// `f` over every value: in place when the tensor is the only reference to values it owns,
/// else into a new buffer.
pub fn map_in_place<T: Scalar>(x: Value, f: impl Fn(T) -> T + Sync) -> Result<Tensor, OpError> {
    match Arc::try_unwrap(x) {
        Ok(mut own) if own.is_exclusive() => {
            if let Some(v) = own.values_mut::<T>() {
                // In the widest instruction set: the formulas (HSwish's clamps and product)
                // then run 16 lanes wide instead of SSE2's 4, with the same IEEE operations,
                // so the same bits.
                par::for_each_split_mut(v, PAR_MIN_ELEMENTS, &|_, chunk| {
                    irun_opkit::simd::widest(
                        #[inline(always)]
                        || {
                            irun_opkit::simd::map_each(chunk, &f);
                        },
                    )
                });
            }
            Ok(own)
        }
        Ok(t) => map_new(&t, f),
        Err(shared) => map_new(&shared, f),
    }
}

/// `f` over the values in chunks, in place when allowed (as [`map_in_place`]), else on a copy.
pub fn map_slices_in_place(x: Value, f: impl Fn(&mut [f32]) + Sync) -> Result<Tensor, OpError> {
    let mut own = crate::kernel::take_or_copy(x);
    if let Some(v) = own.values_mut::<f32>() {
        par::for_each_split_mut(v, PAR_MIN_ELEMENTS, &|_, chunk| f(chunk));
    }
    Ok(own)
}

fn map_new<T: Scalar>(x: &Tensor, f: impl Fn(T) -> T + Sync) -> Result<Tensor, OpError> {
    let src = crate::binary::values::<T>(x)?;
    let out = par::map(src, f);
    Tensor::new(x.element_type(), x.shape().to_vec(), T::wrap(out)).map_err(internal)
}
