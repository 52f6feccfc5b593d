//! GroupConvolution-1: `filters [G, Cout/G, Cin/G, *k]`; output channel `g * Cout/G + o` reads
//! only input channels `[g * Cin/G, (g + 1) * Cin/G)`. Depthwise is `[C, 1, 1, *k]`.
//! Attributes and shape rules as Convolution-1.

use irun_tensor::Dim;

use crate::attrs::AttrReader;
use crate::conv::grouped;
use crate::conv_prepared::PreparedConv;
use crate::convolution::infer_conv;
use crate::fact::Fact;
use crate::op::{take_inputs, Op, OpError, Prepared, Value};
use crate::spatial::Spatial;

#[derive(Debug)]
pub struct GroupConvolution {
    pub spatial: Spatial,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(GroupConvolution {
        spatial: Spatial::read(a, false, false, true)?,
    }))
}

/// `a * b` for dims (intervals scale; dynamic stays dynamic).
fn times(a: Dim, b: Dim) -> Dim {
    match (a.get_static(), b.get_static()) {
        (Some(x), Some(y)) => Dim::fixed(x * y),
        _ => Dim::DYNAMIC,
    }
}

impl Op for GroupConvolution {
    fn name(&self) -> &'static str {
        "GroupConvolution-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        infer_conv(self.name(), &self.spatial, inputs, 1, |f| {
            (times(f[0], f[2]), times(f[0], f[1]))
        })
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, filters] = take_inputs::<2>(inputs, self.name())?;
        let groups = filters.shape().first().copied().unwrap_or(0);
        Ok(vec![grouped(
            &data,
            &filters,
            groups,
            &self.spatial,
            self.name(),
        )?])
    }

    fn prepare(&self, _: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        PreparedConv::kernel(constants, &self.spatial, true, "GroupConvolution-1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::codes;
    use crate::spatial::{AutoPad, Rounding};
    use crate::testing::{eval1, fact, infer1};
    use irun_tensor::ElementType::*;
    use irun_tensor::Tensor;

    fn op() -> GroupConvolution {
        GroupConvolution {
            spatial: Spatial {
                strides: vec![1],
                pads_begin: vec![1],
                pads_end: vec![1],
                dilations: vec![1],
                auto_pad: AutoPad::Explicit,
                rounding: Rounding::Floor,
            },
        }
    }

    /// The direct depthwise path (f32) against the im2col + GEMM path (f64 takes it), 2-D,
    /// strides 1 and 2, padding on both sides, dilation.
    #[test]
    fn direct_depthwise_matches_the_gemm_path() {
        let (c, h, w) = (3, 9, 8);
        let x: Vec<f64> = (0..c * h * w)
            .map(|i| ((i * 7) % 13) as f64 * 0.25 - 1.5)
            .collect();
        let f: Vec<f64> = (0..c * 9)
            .map(|i| ((i * 5) % 7) as f64 * 0.5 - 1.0)
            .collect();
        for (s, p, d) in [(1, 1, 1), (2, 1, 1), (2, 2, 2), (1, 0, 1)] {
            let op = GroupConvolution {
                spatial: Spatial {
                    strides: vec![s, s],
                    pads_begin: vec![p, p],
                    pads_end: vec![p, p + 1],
                    dilations: vec![d, d],
                    auto_pad: AutoPad::Explicit,
                    rounding: Rounding::Floor,
                },
            };
            let wide = eval1(
                &op,
                vec![
                    Tensor::from_f64(vec![1, c, h, w], x.clone()).unwrap(),
                    Tensor::from_f64(vec![c, 1, 1, 3, 3], f.clone()).unwrap(),
                ],
            )
            .unwrap();
            let narrow = eval1(
                &op,
                vec![
                    Tensor::from_f32(vec![1, c, h, w], x.iter().map(|&v| v as f32).collect())
                        .unwrap(),
                    Tensor::from_f32(vec![c, 1, 1, 3, 3], f.iter().map(|&v| v as f32).collect())
                        .unwrap(),
                ],
            )
            .unwrap();
            assert_eq!(narrow.shape(), wide.shape());
            // Quarters and halves: exact in f32 whatever the order.
            let same = narrow
                .values::<f32>()
                .unwrap()
                .iter()
                .zip(wide.values::<f64>().unwrap())
                .all(|(&a, &b)| a as f64 == b);
            assert!(same, "stride {s} pad {p} dilation {d}");
        }
    }

    #[test]
    fn depthwise_reads_its_own_channel() {
        // Two channels, kernel [1, 1, 1] per channel scaled by 1 and 10.
        let x = Tensor::from_f32(vec![1, 2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let f = Tensor::from_f32(vec![2, 1, 1, 3], vec![1., 1., 1., 10., 10., 10.]).unwrap();
        let out = eval1(&op(), vec![x, f]).unwrap();
        assert_eq!(out.values::<f32>().unwrap(), &[3., 6., 5., 90., 150., 110.]);
        let f = infer1(&op(), &[fact(F32, "1,6,10"), fact(F32, "3,4,2,3")]).unwrap();
        assert_eq!(f.shape.to_string(), "[1,12,10]");
        let e = infer1(&op(), &[fact(F32, "1,5,10"), fact(F32, "3,4,2,3")]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }
}
