//! Equal-1: `a == b` into booleans, numpy broadcasting, any element type. IEEE: NaN equals
//! nothing, `-0 == +0`. i64 is compared exactly (OpenVINO CPU compares it as i32).

use crate::attrs::AttrReader;
use crate::binary::{Binary, Compare, CompareKind};
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Equal;

impl Compare for Equal {
    const NAME: &'static str = "Equal-1";

    #[inline(always)]
    fn apply<T: PartialOrd>(a: T, b: T) -> bool {
        a == b
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<CompareKind<Equal>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn ieee_and_exact_i64() {
        let op = compare::<Equal>();
        let out = run(
            &op,
            vec![
                f32s(&[3], &[f32::NAN, -0., 1.]),
                f32s(&[3], &[f32::NAN, 0., 2.]),
            ],
        );
        assert_eq!(out.unwrap(), bools(&[3], &[false, true, false]));
        let out = run(&op, vec![i64s(&[1], &[(1 << 40) + 1]), i64s(&[1], &[1])]).unwrap();
        assert_eq!(out, bools(&[1], &[false]), "CPU says true: it compares i32");
        let out = run(&op, vec![bools(&[2], &[true, false]), bools(&[], &[true])]).unwrap();
        assert_eq!(out, bools(&[2], &[true, false]));
        let f = infer1(&op, &[fact(I32, "2,1"), fact(I32, "3")]).unwrap();
        assert_eq!(f.to_string(), "boolean [2,3]");
    }
}
