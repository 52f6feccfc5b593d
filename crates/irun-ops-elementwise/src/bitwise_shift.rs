//! BitwiseLeftShift-15 and BitwiseRightShift-15: `a << b`, `a >> b` on integers of one type
//! (numpy broadcasting). The specification leaves a negative shift or one of the type's
//! width or more undefined; irun does what OpenVINO CPU does: 8- and 16-bit values shift in
//! 32 bits and are truncated back (u8 `200 << 1` is 144), and the shift is taken modulo 32
//! (modulo 64 for 64-bit types: i32 `1 << 33` is 2). Right shifts of signed values are
//! arithmetic (`-8 >> 1` is -4).

use std::marker::PhantomData;

use irun_opkit::broadcast::Broadcast;
use irun_tensor::{with_int, ElementType, Tensor};

use crate::attrs::AttrReader;
use crate::binary::{zip_same_type, Binary, BinaryKind};
use crate::op::{Op, OpError, Value};

/// An integer as the shifts see it.
pub trait ShiftInt: Copy {
    fn shl(self, by: Self) -> Self;
    fn shr(self, by: Self) -> Self;
}

macro_rules! shift_in {
    ($wide:ty, $mask:expr => $($t:ty),*) => {$(
        impl ShiftInt for $t {
            #[inline(always)]
            fn shl(self, by: Self) -> Self {
                ((self as $wide).wrapping_shl((by as u32) & $mask)) as $t
            }
            #[inline(always)]
            fn shr(self, by: Self) -> Self {
                ((self as $wide).wrapping_shr((by as u32) & $mask)) as $t
            }
        }
    )*};
}
shift_in!(i32, 31 => i8, i16, i32);
shift_in!(u32, 31 => u8, u16, u32);
shift_in!(i64, 63 => i64);
shift_in!(u64, 63 => u64);

/// Which way a shift goes.
pub trait Direction: std::fmt::Debug + Default + Send + Sync + 'static {
    const NAME: &'static str;
    fn apply<T: ShiftInt>(a: T, b: T) -> T;
}

#[derive(Debug, Default)]
pub struct Left;
impl Direction for Left {
    const NAME: &'static str = "BitwiseLeftShift-15";
    fn apply<T: ShiftInt>(a: T, b: T) -> T {
        a.shl(b)
    }
}

#[derive(Debug, Default)]
pub struct Right;
impl Direction for Right {
    const NAME: &'static str = "BitwiseRightShift-15";
    fn apply<T: ShiftInt>(a: T, b: T) -> T {
        a.shr(b)
    }
}

/// Marks a shift as a binary op kind: integers only.
#[derive(Debug, Default)]
pub struct ShiftKind<D>(PhantomData<D>);

impl<D: Direction> BinaryKind for ShiftKind<D> {
    const NAME: &'static str = D::NAME;

    fn build(_: &AttrReader) -> Result<Self, OpError> {
        Ok(ShiftKind(PhantomData))
    }

    fn output_type(ty: ElementType) -> Result<ElementType, String> {
        if ty == ElementType::Dynamic || ty.is_integral_number() {
            return Ok(ty);
        }
        Err(format!(
            "Arguments must have an integer element type, got {ty}"
        ))
    }

    fn eval(&self, bc: &Broadcast<2>, a: Value, b: Value) -> Result<Tensor, OpError> {
        let ty = a.element_type();
        with_int!(ty, T => zip_same_type::<T>(bc, a, &b, D::apply), else Err(crate::binary::unexpected(ty)))
    }
}

pub fn build_left(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ShiftKind<Left>>::build(a)
}

pub fn build_right(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ShiftKind<Right>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn shift<D: Direction>() -> Binary<ShiftKind<D>> {
        Binary {
            kind: ShiftKind::default(),
            broadcast: AutoBroadcast::Numpy,
        }
    }

    #[test]
    fn openvino_cpu_widths() {
        let out = run(
            &shift::<Left>(),
            vec![u8s(&[3], &[1, 200, 1]), u8s(&[3], &[8, 1, 33])],
        )
        .unwrap();
        assert_eq!(out, u8s(&[3], &[0, 144, 2]));
        let out = run(
            &shift::<Left>(),
            vec![i32s(&[2], &[1, 3]), i32s(&[], &[33])],
        )
        .unwrap();
        assert_eq!(out, i32s(&[2], &[2, 6]));
        let out = run(&shift::<Left>(), vec![i64s(&[1], &[1]), i64s(&[1], &[65])]).unwrap();
        assert_eq!(out, i64s(&[1], &[2]));
        let out = run(
            &shift::<Right>(),
            vec![i32s(&[2], &[-8, 1]), i32s(&[2], &[1, 33])],
        )
        .unwrap();
        assert_eq!(out, i32s(&[2], &[-4, 0]));
        let out = run(
            &shift::<Right>(),
            vec![u32s(&[1], &[0x8000_0000]), u32s(&[1], &[31])],
        )
        .unwrap();
        assert_eq!(out, u32s(&[1], &[1]));
        let e = infer_err(&shift::<Left>(), &[fact(F32, "2"), fact(F32, "2")]);
        assert_eq!(e.code, crate::op::codes::ELEMENT_TYPE);
    }
}
