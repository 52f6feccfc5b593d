//! What every binary elementwise op shares: the `auto_broadcast` attribute, inference (same
//! element type, numpy broadcast), and the broadcasting kernels: [`zip`] into a new buffer, or
//! [`zip_in_place`] into the first input's buffer when the executor handed over the only
//! reference and it already has the output's shape.
//!
//! An op is a unit type implementing [`Arith`] (same type in and out), [`Compare`] (boolean
//! out), [`Logic`] (boolean in and out) or [`Bits`] (integers or booleans); the generic
//! [`Binary`] is the [`Op`].

use std::fmt::Debug;
use std::marker::PhantomData;
use std::sync::Arc;

use irun_tensor::{
    with_any_scalar, with_int, with_number, ElementType, PartialShape, Scalar, Tensor,
};

use crate::attrs::AttrReader;
use crate::broadcast::{broadcast_or_error, Broadcast};
use crate::fact::Fact;
use crate::kernel::{try_zeroed, PAR_MIN_ELEMENTS};
use crate::num::Number;
pub use crate::op::same_element_type;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;

/// `auto_broadcast` of the elementwise ops (default numpy). pdpd is read but not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoBroadcast {
    None,
    Numpy,
}

impl AutoBroadcast {
    pub fn read(a: &AttrReader) -> Result<AutoBroadcast, OpError> {
        match a.enum_or("auto_broadcast", &["none", "explicit", "numpy", "pdpd"], "numpy")? {
            "none" | "explicit" => Ok(AutoBroadcast::None),
            "numpy" => Ok(AutoBroadcast::Numpy),
            _ => Err(OpError::attribute(
                "auto_broadcast",
                "`auto_broadcast=\"pdpd\"` is not supported by irun (no converter writes it for these ops)",
            )),
        }
    }

    /// The output shape of inputs `shapes` under this rule.
    pub fn infer(self, shapes: &[&PartialShape]) -> Result<PartialShape, OpError> {
        match self {
            AutoBroadcast::Numpy => broadcast_or_error(shapes),
            AutoBroadcast::None => {
                let mut out = shapes[0].clone();
                for (j, s) in shapes.iter().enumerate().skip(1) {
                    out = out.merge(s).ok_or_else(|| {
                        OpError::input(
                            j,
                            codes::SHAPE,
                            format!(
                                "Argument shapes are inconsistent: {} and {} differ and auto_broadcast is none",
                                shapes[0], s
                            ),
                        )
                    })?;
                }
                Ok(out)
            }
        }
    }

    /// At run time: the broadcast of static shapes, which `none` requires to be equal.
    pub fn plan<const N: usize>(self, shapes: [&[usize]; N]) -> Result<Broadcast<N>, OpError> {
        if self == AutoBroadcast::None && shapes.iter().any(|s| *s != shapes[0]) {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                "input shapes differ and auto_broadcast is none",
            ));
        }
        Broadcast::new(shapes)
    }
}

/// The new buffer `f(a[i], b[j])` over the broadcast of `a` and `b`.
pub fn zip<A, B, O>(
    bc: &Broadcast<2>,
    a: &[A],
    b: &[B],
    f: impl Fn(A, B) -> O + Sync,
) -> Result<Vec<O>, OpError>
where
    A: Copy + Sync,
    B: Copy + Sync,
    O: Scalar,
{
    let mut out = try_zeroed::<O>(bc.out_len())?;
    par::for_each_split_mut(&mut out, PAR_MIN_ELEMENTS, &|start, chunk| {
        bc.rows(start..start + chunk.len(), |pos, s, st, len| {
            let dst = &mut chunk[pos - start..pos - start + len];
            // The four step patterns get their own loops, so the common ones vectorise.
            match st {
                [1, 1] => {
                    for ((d, &x), &y) in dst.iter_mut().zip(&a[s[0]..]).zip(&b[s[1]..]) {
                        *d = f(x, y);
                    }
                }
                [1, 0] => {
                    let y = b[s[1]];
                    for (d, &x) in dst.iter_mut().zip(&a[s[0]..]) {
                        *d = f(x, y);
                    }
                }
                [0, 1] => {
                    let x = a[s[0]];
                    for (d, &y) in dst.iter_mut().zip(&b[s[1]..]) {
                        *d = f(x, y);
                    }
                }
                _ => dst.fill(f(a[s[0]], b[s[1]])),
            }
        });
    });
    Ok(out)
}

/// `a[i] = f(a[i], b[j])` over the broadcast, where `a` has the output's shape.
pub fn zip_in_place<A, B>(bc: &Broadcast<2>, a: &mut [A], b: &[B], f: impl Fn(A, B) -> A + Sync)
where
    A: Copy + Send + Sync,
    B: Copy + Sync,
{
    par::for_each_split_mut(a, PAR_MIN_ELEMENTS, &|start, chunk| {
        bc.rows(start..start + chunk.len(), |pos, s, st, len| {
            let dst = &mut chunk[pos - start..pos - start + len];
            if st[1] == 1 {
                for (d, &y) in dst.iter_mut().zip(&b[s[1]..]) {
                    *d = f(*d, y);
                }
            } else {
                let y = b[s[1]];
                for d in dst.iter_mut() {
                    *d = f(*d, y);
                }
            }
        });
    });
}

/// The values of `v` as `T` (the caller dispatched on its element type).
pub fn values<T: Scalar>(v: &Tensor) -> Result<&[T], OpError> {
    v.values::<T>().ok_or_else(|| {
        OpError::new(
            codes::UNSUPPORTED_TYPE,
            format!("unexpected element type {}", v.element_type()),
        )
    })
}

/// `f` over `a` and `b` into `a`'s own buffer when that is possible (the only reference, owned
/// values, the output's shape), else into a new one.
pub fn zip_same_type<T: Scalar>(
    bc: &Broadcast<2>,
    a: Value,
    b: &Tensor,
    f: impl Fn(T, T) -> T + Sync,
) -> Result<Tensor, OpError> {
    let bv = values::<T>(b)?;
    let a = if a.shape() == bc.out_shape() {
        match Arc::try_unwrap(a) {
            Ok(mut own) if own.is_exclusive() => {
                let ty = own.element_type();
                let av = own.values_mut::<T>().ok_or_else(|| unexpected(ty))?;
                zip_in_place(bc, av, bv, f);
                return Ok(own);
            }
            Ok(shared_storage) => Arc::new(shared_storage),
            Err(shared) => shared,
        }
    } else {
        a
    };
    let out = zip(bc, values::<T>(&a)?, bv, f)?;
    Tensor::new(a.element_type(), bc.out_shape().to_vec(), T::wrap(out)).map_err(internal)
}

pub fn unexpected(ty: ElementType) -> OpError {
    OpError::new(
        codes::UNSUPPORTED_TYPE,
        format!("unexpected element type {ty}"),
    )
}

pub fn internal(e: irun_tensor::TensorError) -> OpError {
    OpError::new(codes::RUN_SHAPE, e.to_string())
}

/// An arithmetic op: numeric inputs of one type, output of that type.
pub trait Arith: Debug + Send + Sync + Sized + 'static {
    /// `Type-vN`, e.g. `Add-1`.
    const NAME: &'static str;
    /// Reads the op's own attributes (besides `auto_broadcast`).
    fn read(a: &AttrReader) -> Result<Self, OpError>;
    fn apply<T: Number>(&self, a: T, b: T) -> T;
    /// Whether an integer zero in the second input is an error (division, remainders).
    const REJECTS_INTEGER_ZERO: bool = false;
}

/// A comparison: inputs of any one type (boolean included), boolean output.
pub trait Compare: Debug + Send + Sync + Default + 'static {
    const NAME: &'static str;
    fn apply<T: PartialOrd>(a: T, b: T) -> bool;
}

/// A logical op: boolean inputs, boolean output.
pub trait Logic: Debug + Send + Sync + Default + 'static {
    const NAME: &'static str;
    fn apply(a: bool, b: bool) -> bool;
}

/// A bitwise op: integer or boolean inputs of one type, output of that type.
pub trait Bits: Debug + Send + Sync + Default + 'static {
    const NAME: &'static str;
    fn apply<T: BitValue>(a: T, b: T) -> T;
}

/// The values a [`Bits`] op takes: the integers and `bool`.
pub trait BitValue:
    Copy
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::BitXor<Output = Self>
{
}

impl<T> BitValue for T where
    T: Copy
        + std::ops::BitAnd<Output = T>
        + std::ops::BitOr<Output = T>
        + std::ops::BitXor<Output = T>
{
}

/// Which of the kinds a [`Binary`] op is; the kernels and type rules follow from it.
pub trait BinaryKind: Debug + Send + Sync + Sized + 'static {
    const NAME: &'static str;
    fn build(a: &AttrReader) -> Result<Self, OpError>;
    /// The output element type for input type `ty`, or why `ty` is not accepted.
    fn output_type(ty: ElementType) -> Result<ElementType, String>;
    fn eval(&self, bc: &Broadcast<2>, a: Value, b: Value) -> Result<Tensor, OpError>;
}

/// Marks an [`Arith`] op as a [`BinaryKind`].
#[derive(Debug)]
pub struct ArithKind<K>(pub K);
/// Marks a [`Compare`] op as a [`BinaryKind`].
#[derive(Debug, Default)]
pub struct CompareKind<K>(PhantomData<K>);
/// Marks a [`Bits`] op as a [`BinaryKind`].
#[derive(Debug, Default)]
pub struct BitsKind<K>(PhantomData<K>);
/// Marks a [`Logic`] op as a [`BinaryKind`].
#[derive(Debug, Default)]
pub struct LogicKind<K>(PhantomData<K>);

impl<K: Arith> BinaryKind for ArithKind<K> {
    const NAME: &'static str = K::NAME;

    fn build(a: &AttrReader) -> Result<Self, OpError> {
        K::read(a).map(ArithKind)
    }

    fn output_type(ty: ElementType) -> Result<ElementType, String> {
        if ty == ElementType::Boolean {
            return Err("Arguments cannot have boolean element type".into());
        }
        Ok(ty)
    }

    fn eval(&self, bc: &Broadcast<2>, a: Value, b: Value) -> Result<Tensor, OpError> {
        let ty = a.element_type();
        with_number!(ty, T => {
            if K::REJECTS_INTEGER_ZERO && !T::IS_FLOAT {
                if let Some(p) = values::<T>(&b)?.iter().position(|x| x.is_zero()) {
                    return Err(OpError::input(
                        1,
                        codes::RUN_VALUE,
                        format!("integer division by zero: input 1 is 0 at position {}", irun_tensor::fmt_shape(&crate::kernel::coordinates(b.shape(), p))),
                    ));
                }
            }
            zip_same_type::<T>(bc, a, &b, |x, y| self.0.apply(x, y))
        }, else Err(unexpected(ty)))
    }
}

impl<K: Compare> BinaryKind for CompareKind<K> {
    const NAME: &'static str = K::NAME;

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(CompareKind(PhantomData))
    }

    fn output_type(_: ElementType) -> Result<ElementType, String> {
        Ok(ElementType::Boolean)
    }

    fn eval(&self, bc: &Broadcast<2>, a: Value, b: Value) -> Result<Tensor, OpError> {
        let ty = a.element_type();
        with_any_scalar!(ty, T => {
            let out = zip(bc, values::<T>(&a)?, values::<T>(&b)?, K::apply::<T>)?;
            Tensor::from_bool(bc.out_shape().to_vec(), out).map_err(internal)
        }, else Err(unexpected(ty)))
    }
}

impl<K: Logic> BinaryKind for LogicKind<K> {
    const NAME: &'static str = K::NAME;

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(LogicKind(PhantomData))
    }

    fn output_type(ty: ElementType) -> Result<ElementType, String> {
        match ty {
            ElementType::Boolean | ElementType::Dynamic => Ok(ElementType::Boolean),
            _ => Err(format!(
                "Arguments must have boolean element type, got {ty}"
            )),
        }
    }

    fn eval(&self, bc: &Broadcast<2>, a: Value, b: Value) -> Result<Tensor, OpError> {
        zip_same_type::<bool>(bc, a, &b, K::apply)
    }
}

impl<K: Bits> BinaryKind for BitsKind<K> {
    const NAME: &'static str = K::NAME;

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(BitsKind(PhantomData))
    }

    fn output_type(ty: ElementType) -> Result<ElementType, String> {
        if ty == ElementType::Boolean || ty == ElementType::Dynamic || ty.is_integral_number() {
            return Ok(ty);
        }
        Err(format!(
            "Arguments must have an integer or boolean element type, got {ty}"
        ))
    }

    fn eval(&self, bc: &Broadcast<2>, a: Value, b: Value) -> Result<Tensor, OpError> {
        let ty = a.element_type();
        if ty == ElementType::Boolean {
            return zip_same_type::<bool>(bc, a, &b, K::apply);
        }
        with_int!(ty, T => zip_same_type::<T>(bc, a, &b, K::apply), else Err(unexpected(ty)))
    }
}

/// A binary elementwise op of kind `K`.
#[derive(Debug)]
pub struct Binary<K> {
    pub kind: K,
    pub broadcast: AutoBroadcast,
}

impl<K: BinaryKind> Binary<K> {
    /// The registry's builder.
    pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
        Ok(Box::new(Binary {
            kind: K::build(a)?,
            broadcast: AutoBroadcast::read(a)?,
        }))
    }
}

impl<K: BinaryKind> Op for Binary<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, K::NAME)?;
        let ty = same_element_type(inputs, &[0, 1], K::NAME)?;
        let out_ty = if ty == ElementType::Dynamic {
            K::output_type(ty).unwrap_or(ElementType::Dynamic)
        } else {
            K::output_type(ty).map_err(|m| OpError::input(0, codes::ELEMENT_TYPE, m))?
        };
        let shape = self
            .broadcast
            .infer(&[&inputs[0].shape, &inputs[1].shape])?;
        Ok(vec![Fact::new(out_ty, shape)])
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [a, b] = take_inputs::<2>(inputs, K::NAME)?;
        if a.element_type() != b.element_type() {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!(
                    "inputs have element types {} and {}",
                    a.element_type(),
                    b.element_type()
                ),
            ));
        }
        K::output_type(a.element_type()).map_err(|m| OpError::new(codes::UNSUPPORTED_TYPE, m))?;
        let bc = self.broadcast.plan([a.shape(), b.shape()])?;
        Ok(vec![Arc::new(self.kind.eval(&bc, a, b)?)])
    }
}
