//! ReduceMax-1: the largest value over `axes`; NaN propagates (torch `amax`; the reference
//! skips NaN); over an empty extent, the lowest finite value.

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::reduce::{Kind, Reduce};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Reduce::build(a, Kind::Max, "ReduceMax-1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(keep_dims: bool) -> Reduce {
        Reduce {
            kind: Kind::Max,
            keep_dims,
            name: "ReduceMax-1",
        }
    }

    #[test]
    fn maxima_and_nan() {
        let x = f32s(&[2, 2], &[1., f32::NAN, -3., -2.]);
        let out = run(&op(false), vec![x, i64s(&[1], &[1])]);
        let v = out.values::<f32>().unwrap();
        assert!(v[0].is_nan());
        assert_eq!(v[1], -2.);
        assert_eq!(
            run(&op(false), vec![f32s(&[0], &[]), i64s(&[], &[0])]),
            f32s(&[], &[f32::MIN])
        );
        assert_eq!(
            run(
                &op(false),
                vec![f32s(&[1], &[f32::NEG_INFINITY]), i64s(&[], &[0])]
            ),
            f32s(&[], &[f32::NEG_INFINITY])
        );
        assert_eq!(
            run(
                &op(false),
                vec![i64s(&[2], &[i64::MIN, 5]), i64s(&[], &[0])]
            ),
            i64s(&[], &[5])
        );
    }
}
