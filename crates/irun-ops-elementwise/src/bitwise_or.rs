//! BitwiseOr-13: `a | b` on integers or booleans, numpy broadcasting.

use crate::attrs::AttrReader;
use crate::binary::{Binary, BitValue, Bits, BitsKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct BitwiseOr;

impl Bits for BitwiseOr {
    const NAME: &'static str = "BitwiseOr-13";

    #[inline(always)]
    fn apply<T: BitValue>(a: T, b: T) -> T {
        a | b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<BitsKind<BitwiseOr>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn bits() {
        let out = run(
            &bitwise::<BitwiseOr>(),
            vec![u8s(&[2], &[0b1010, 1]), u8s(&[2], &[0b0101, 1])],
        )
        .unwrap();
        assert_eq!(out, u8s(&[2], &[0b1111, 1]));
    }
}
