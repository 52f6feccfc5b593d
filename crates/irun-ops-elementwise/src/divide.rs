//! Divide-1: `a / b`. Floats: IEEE (`1/0 = inf`). Integers: floor division when `m_pythondiv`
//! (default true: `-7 / 2 = -4`), else truncation (`-7 / 2 = -3`); a zero divisor is a run-time
//! error (the reference throws; OpenVINO CPU returns INT_MIN). i64 is exact (CPU divides
//! through f32 and lowers i64 to i32).

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug)]
pub struct Divide {
    /// `m_pythondiv`: floor division for integers (the default), else truncation.
    pub python: bool,
}

impl Arith for Divide {
    const NAME: &'static str = "Divide-1";
    const REJECTS_INTEGER_ZERO: bool = true;

    fn read(a: &AttrReader) -> Result<Self, OpError> {
        Ok(Divide {
            python: a.bool_or("m_pythondiv", true)?,
        })
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        if self.python {
            a.floor_div(b)
        } else {
            a.div(b)
        }
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Divide>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn floor_or_truncating_division() {
        let py = arith(Divide { python: true });
        let out = run(&py, vec![i32s(&[2], &[-7, 7]), i32s(&[2], &[2, -2])]).unwrap();
        assert_eq!(out, i32s(&[2], &[-4, -4]));
        let c = arith(Divide { python: false });
        let out = run(&c, vec![i32s(&[2], &[-7, 7]), i32s(&[2], &[2, -2])]).unwrap();
        assert_eq!(out, i32s(&[2], &[-3, -3]));
        let out = run(&py, vec![u32s(&[1], &[7]), u32s(&[1], &[2])]).unwrap();
        assert_eq!(out, u32s(&[1], &[3]));
        let out = run(&py, vec![i32s(&[1], &[16_777_217]), i32s(&[1], &[1])]).unwrap();
        assert_eq!(
            out,
            i32s(&[1], &[16_777_217]),
            "exact (CPU goes through f32)"
        );
    }

    #[test]
    fn float_division_is_ieee() {
        let op = arith(Divide { python: true });
        let out = run(
            &op,
            vec![f32s(&[3], &[1., -7., 0.]), f32s(&[3], &[0., 2., 0.])],
        )
        .unwrap();
        let v = out.values::<f32>().unwrap();
        assert_eq!((v[0], v[1]), (f32::INFINITY, -3.5));
        assert!(v[2].is_nan());
    }

    #[test]
    fn integer_division_by_zero_is_an_error() {
        let op = arith(Divide { python: true });
        let e = run(&op, vec![i64s(&[2, 2], &[1, 2, 3, 4]), i64s(&[2], &[5, 0])]).unwrap_err();
        assert_eq!(e.code, codes::RUN_VALUE);
        assert_eq!(
            e.message,
            "integer division by zero: input 1 is 0 at position [1]"
        );
    }
}
