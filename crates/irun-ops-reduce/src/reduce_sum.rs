//! ReduceSum-1: the sum over `axes`; floats accumulate in f64 and round once, integers wrap
//! (OpenVINO CPU sums i32 through f32: `16777217 + 0` gives 16777216 there).

use crate::attrs::AttrReader;
use crate::op::{Op, OpError};
use crate::reduce::{Kind, Reduce};

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Reduce::build(a, Kind::Sum, "ReduceSum-1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(keep_dims: bool) -> Reduce {
        Reduce {
            kind: Kind::Sum,
            keep_dims,
            name: "ReduceSum-1",
        }
    }

    #[test]
    fn sums_over_axes() {
        let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        assert_eq!(
            run(&op(false), vec![x.clone(), i64s(&[1], &[1])]),
            f32s(&[2], &[6., 15.])
        );
        assert_eq!(
            run(&op(true), vec![x.clone(), i64s(&[1], &[0])]),
            f32s(&[1, 3], &[5., 7., 9.])
        );
        assert_eq!(
            run(&op(false), vec![x.clone(), i64s(&[2], &[-1, 0])]),
            f32s(&[], &[21.])
        );
        assert_eq!(
            run(&op(false), vec![x.clone(), i64s(&[0], &[])]),
            x,
            "empty axes: identity"
        );
        assert_eq!(
            run(
                &op(false),
                vec![i32s(&[2], &[16_777_217, 0]), i64s(&[], &[0])]
            ),
            i32s(&[], &[16_777_217])
        );
        assert_eq!(
            run(&op(false), vec![f32s(&[0, 2], &[]), i64s(&[1], &[0])]),
            f32s(&[2], &[0., 0.])
        );
    }

    #[test]
    fn non_adjacent_axes_and_inference() {
        let x: Vec<f32> = (0..24).map(|v| v as f32).collect();
        let out = run(&op(false), vec![f32s(&[2, 3, 4], &x), i64s(&[2], &[0, 2])]);
        let want: Vec<f32> = (0..3)
            .map(|j| {
                (0..2)
                    .flat_map(|i| (0..4).map(move |k| (i * 12 + j * 4 + k) as f32))
                    .sum()
            })
            .collect();
        assert_eq!(out, f32s(&[3], &want));
        let f = infer1(&op(true), &[fact(F32, "2,?,4"), i64_value(&[1, -1])]).unwrap();
        assert_eq!(f.shape.to_string(), "[2,1,1]");
        let e = infer1(&op(false), &[fact(Boolean, "2"), i64_value(&[0])]).unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        let e = infer1(&op(false), &[fact(F32, "2"), i64_value(&[1])]).unwrap_err();
        assert_eq!(e.code, codes::AXIS);
    }
}
