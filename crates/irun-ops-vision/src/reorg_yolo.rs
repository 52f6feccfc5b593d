//! ReorgYolo-2 (YOLOv2's passthrough layer): `[N, C, H, W]` to `[N, C·s², H/s, W/s]` for
//! `stride` s, by Darknet's index mapping, which reads the input as if it were the
//! *backward* reorg's output `[N, C/s², H·s, W·s]`: with `C' = C/s²`, output element
//! `(n, c, h, w)` counted in the input's `[C, H, W]` is
//! `in_flat[n, c mod C', h·s + (c div C') div s, w·s + (c div C') mod s]`.
//! H and W must be multiples of s and C at least s² (OpenVINO's checks); any element type.

use std::sync::Arc;

use irun_tensor::{Dim, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct ReorgYolo {
    pub stride: u64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let stride = a.i64_list_or("stride", None)?;
    let stride = match stride.as_slice() {
        [s] | [s, _] if *s > 0 && stride.iter().all(|&t| t == *s) => *s as u64,
        _ => {
            return Err(OpError::attribute(
                "stride",
                format!("ReorgYolo-2: stride must be one positive number (or two equal ones), got {stride:?}"),
            ))
        }
    };
    Ok(Box::new(ReorgYolo { stride }))
}

impl ReorgYolo {
    /// The output dims, or why `[n, c, h, w]` cannot be reorganised.
    fn out_dims(&self, [n, c, h, w]: [Dim; 4]) -> Result<[Dim; 4], String> {
        let s = self.stride;
        let s2 = s * s;
        if c.get_static().is_some_and(|c| c < s2) {
            return Err(format!("channels {c} are fewer than stride² {s2}"));
        }
        for (name, d) in [("height", h), ("width", w)] {
            if d.get_static().is_some_and(|d| d % s != 0) {
                return Err(format!("{name} {d} is not a multiple of the stride {s}"));
            }
        }
        let scale = |d: Dim, by: u64, up: bool| match d.get_static() {
            Some(v) => Dim::fixed(if up { v * by } else { v / by }),
            None => Dim::DYNAMIC,
        };
        Ok([
            n,
            scale(c, s2, true),
            scale(h, s, false),
            scale(w, s, false),
        ])
    }
}

impl Op for ReorgYolo {
    fn name(&self) -> &'static str {
        "ReorgYolo-2"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let x = &inputs[0];
        let shape =
            crate::layout::nchw_shape(x, self.name(), PartialShape::dynamic_of_rank(4), |d| {
                self.out_dims(d).map(|o| o.to_vec())
            })?;
        Ok(vec![Fact::new(x.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let ([n, c, h, w], shape) =
            crate::layout::nchw_run(&x, self.name(), |d| self.out_dims(d).map(|o| o.to_vec()))?;
        if x.len() > u32::MAX as usize {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                "ReorgYolo-2: more than 2^32 elements",
            ));
        }
        let s = self.stride as usize;
        let c_in = c / (s * s);
        let (h_in, w_in) = (h * s, w * s);
        let mut positions = Vec::with_capacity(x.len());
        for b in 0..n {
            for ci in 0..c {
                let (offset, cc) = (ci / c_in, ci % c_in);
                for hi in 0..h {
                    let row = ((b * c_in + cc) * h_in + hi * s + offset / s) * w_in;
                    positions.extend((0..w).map(|wi| (row + wi * s + offset % s) as u32));
                }
            }
        }
        let t = Tensor::new(x.element_type(), shape, x.storage().take(&positions))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenVINO's example: [1, 8, 4, 4] with stride 2, values 0..128.
    #[test]
    fn the_darknet_mapping() {
        let x = Tensor::from_i32(vec![1, 8, 4, 4], (0..128).collect()).unwrap();
        let out = ReorgYolo { stride: 2 }.eval(vec![Arc::new(x)]).unwrap();
        assert_eq!(out[0].shape(), &[1, 32, 2, 2]);
        let v = out[0].values::<i32>().unwrap();
        // Positions walk the input's [8, 4, 4]; C' = 2, the input viewed as [2, 8, 8]:
        // input channel 0 reads view plane 0 at even rows and columns,
        assert_eq!(&v[..8], &[0, 2, 4, 6, 16, 18, 20, 22]);
        // channel 1 view plane 1, channel 2 plane 0 one column on.
        assert_eq!(&v[16..20], &[64, 66, 68, 70]);
        assert_eq!(&v[32..36], &[1, 3, 5, 7]);
    }

    #[test]
    fn bad_shapes_are_errors() {
        let op = ReorgYolo { stride: 2 };
        let f = |s: &str| irun_opkit::testing::fact(irun_tensor::ElementType::F32, s);
        assert!(op
            .infer(&[f("1,3,4,4")])
            .unwrap_err()
            .message
            .contains("fewer than stride"));
        assert!(op
            .infer(&[f("1,8,5,4")])
            .unwrap_err()
            .message
            .contains("height 5"));
        assert_eq!(
            op.infer(&[f("?,8,?,4")]).unwrap()[0].shape.to_string(),
            "[?,32,?,2]"
        );
    }
}
