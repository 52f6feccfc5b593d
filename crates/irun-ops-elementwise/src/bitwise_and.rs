//! BitwiseAnd-13: `a & b` on integers (bit-wise) or booleans (logical), numpy broadcasting.
//! i64 is exact (OpenVINO CPU truncates it to i32).

use crate::attrs::AttrReader;
use crate::binary::{Binary, BitValue, Bits, BitsKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct BitwiseAnd;

impl Bits for BitwiseAnd {
    const NAME: &'static str = "BitwiseAnd-13";

    #[inline(always)]
    fn apply<T: BitValue>(a: T, b: T) -> T {
        a & b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<BitsKind<BitwiseAnd>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn bits_and_booleans() {
        let op = bitwise::<BitwiseAnd>();
        let big = 1i64 << 40;
        let out = run(&op, vec![i64s(&[2], &[big + 3, 12]), i64s(&[], &[big + 1])]).unwrap();
        assert_eq!(out, i64s(&[2], &[big + 1, 0]));
        let out = run(
            &op,
            vec![bools(&[2], &[true, true]), bools(&[2], &[false, true])],
        )
        .unwrap();
        assert_eq!(out, bools(&[2], &[false, true]));
        let e = infer_err(&op, &[fact(F32, "2"), fact(F32, "2")]);
        assert_eq!(e.code, codes::ELEMENT_TYPE);
    }
}
