//! ReduceMax-1: the largest value over `axes`; NaN propagates (torch `amax`; the reference
//! skips NaN); over an empty extent, -inf (integers: the type's lowest value).

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
            f32s(&[], &[f32::NEG_INFINITY])
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

    /// The f32 kernel (rows folded into accumulators, or eight lanes along a contiguous
    /// extent) against the same values reduced in f64, over many blocks (both threads busy),
    /// every axis choice of a rank-3 tensor, with NaNs in a few extents; max and min.
    #[test]
    fn f32_kernel_matches_the_f64_path() {
        let shape = [300usize, 33, 20];
        let n: usize = shape.iter().product();
        let x: Vec<f32> = (0..n)
            .map(|i| {
                if i % 4099 == 17 {
                    f32::NAN
                } else {
                    ((i * 7919) % 2003) as f32 / 7.0 - 140.0
                }
            })
            .collect();
        let wide: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for kind in [Kind::Max, Kind::Min] {
            let op = Reduce {
                kind,
                keep_dims: false,
                name: "ReduceMax-1",
            };
            for axes in [&[0][..], &[1], &[2], &[0, 1], &[1, 2], &[0, 2], &[0, 1, 2]] {
                let a = i64s(
                    &[axes.len()],
                    &axes.iter().map(|&a| a as i64).collect::<Vec<_>>(),
                );
                let got = run(&op, vec![f32s(&shape, &x), a.clone()]);
                let want = run(&op, vec![f64s(&shape, &wide), a]);
                let got = got.values::<f32>().unwrap();
                let want = want.values::<f64>().unwrap();
                assert_eq!(got.len(), want.len());
                for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
                    assert!(
                        g as f64 == w || (g.is_nan() && w.is_nan()),
                        "{kind:?} axes {axes:?} element {i}: {g} vs {w}"
                    );
                }
            }
        }
    }
}
