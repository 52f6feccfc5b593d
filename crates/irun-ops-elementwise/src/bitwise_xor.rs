//! BitwiseXor-13: `a ^ b` on integers or booleans, numpy broadcasting.

use crate::attrs::AttrReader;
use crate::binary::{Binary, BitValue, Bits, BitsKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct BitwiseXor;

impl Bits for BitwiseXor {
    const NAME: &'static str = "BitwiseXor-13";

    #[inline(always)]
    fn apply<T: BitValue>(a: T, b: T) -> T {
        a ^ b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<BitsKind<BitwiseXor>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn bits() {
        let out = run(
            &bitwise::<BitwiseXor>(),
            vec![i8s(&[2], &[-1, 5]), i8s(&[2], &[1, 5])],
        )
        .unwrap();
        assert_eq!(out, i8s(&[2], &[-2, 0]));
    }
}
