//! RegionYolo-1: the YOLO detection head's activations on `[N, C, H, W]`, where each of the
//! regions holds `coords + 1 + classes` channel planes (box coordinates, objectness, class
//! scores):
//!
//! - `do_softmax=true` (YOLOv2): all `num` regions; the sigmoid on the x and y planes and on
//!   objectness, a softmax across the class planes at each pixel (the maximum subtracted);
//!   the output is the input's shape with dims `axis..=end_axis` flattened into one.
//! - `do_softmax=false` (YOLOv3): only the first `len(mask)` regions; the sigmoid on x, y,
//!   objectness and every class plane, w and h (and any further coordinates) left as they
//!   are; output `[N, len(mask)·(coords + 1 + classes), H, W]`.
//!
//! As OpenVINO's reference: the sigmoid `1 / (1 + exp(-x))` in f32, the softmax's exponentials
//! and sum in the element type. Floats only. `anchors` is read and not used (the boxes are
//! decoded after this op).

use std::sync::Arc;

use irun_tensor::{with_float, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use irun_opkit::number::Number;

#[derive(Debug)]
pub struct RegionYolo {
    pub coords: usize,
    pub classes: usize,
    pub num: usize,
    pub do_softmax: bool,
    pub mask: Vec<i64>,
    pub axis: i64,
    pub end_axis: i64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let count = |name: &'static str| -> Result<usize, OpError> {
        let v = a.i64_or(name, None)?;
        usize::try_from(v).map_err(|_| {
            OpError::attribute(
                name,
                format!("RegionYolo-1: {name} must be 0 or more, got {v}"),
            )
        })
    };
    let op = RegionYolo {
        coords: count("coords")?,
        classes: count("classes")?,
        num: count("num")?,
        do_softmax: a.bool_or("do_softmax", true)?,
        mask: a.i64_list_or("mask", Some(Vec::new()))?,
        axis: a.i64_or("axis", Some(1))?,
        end_axis: a.i64_or("end_axis", Some(3))?,
    };
    a.f64_list_or("anchors", Some(Vec::new()))?;
    if op.coords < 2 {
        return Err(OpError::attribute(
            "coords",
            format!(
                "RegionYolo-1: coords must be at least 2 (x and y), got {}",
                op.coords
            ),
        ));
    }
    Ok(Box::new(op))
}

impl RegionYolo {
    fn entries(&self) -> usize {
        self.coords + 1 + self.classes
    }

    fn regions(&self) -> usize {
        if self.do_softmax {
            self.num
        } else {
            self.mask.len()
        }
    }

    /// `axis..=end_axis` normalised for rank 4.
    fn flattened(&self) -> Result<(usize, usize), String> {
        let norm = |a: i64| if a < 0 { a + 4 } else { a };
        let (a, e) = (norm(self.axis), norm(self.end_axis));
        if !(0..4).contains(&a) || !(0..4).contains(&e) || a > e {
            return Err(format!(
                "axis {} and end_axis {} do not name dims of a 4-D input in order",
                self.axis, self.end_axis
            ));
        }
        Ok((a as usize, e as usize))
    }

    fn out_dims(&self, d: [Dim; 4]) -> Result<Vec<Dim>, String> {
        let need = (self.regions() * self.entries()) as u64;
        if d[1].get_static().is_some_and(|c| c < need) {
            return Err(format!(
                "{} channels are fewer than {} regions x {} entries",
                d[1],
                self.regions(),
                self.entries()
            ));
        }
        if self.do_softmax {
            let (a, e) = self.flattened()?;
            let merged = d[a..=e]
                .iter()
                .try_fold(1u64, |p, x| x.get_static().map(|v| p * v));
            let mut out = d[..a].to_vec();
            out.push(merged.map_or(Dim::DYNAMIC, Dim::fixed));
            out.extend_from_slice(&d[e + 1..]);
            Ok(out)
        } else {
            Ok(vec![d[0], Dim::fixed(need), d[2], d[3]])
        }
    }

    fn run<T: Number>(&self, x: &[T], [n, c, h, w]: [usize; 4]) -> Vec<T> {
        let area = h * w;
        let (regions, entries) = (self.regions(), self.entries());
        let per_batch = regions * entries * area;
        let sigmoid = |v: T| T::from_f64(f64::from(1.0f32 / (1.0 + (-(v.to_f64() as f32)).exp())));
        let mut out = Vec::with_capacity(n * per_batch);
        for b in 0..n {
            let src = &x[b * c * area..][..per_batch];
            out.extend_from_slice(src);
            let dst = &mut out[b * per_batch..];
            for r in 0..regions {
                let region = &mut dst[r * entries * area..][..entries * area];
                let objectness_end = if self.do_softmax {
                    self.coords + 1
                } else {
                    entries
                };
                for (i, v) in region.iter_mut().enumerate() {
                    let plane = i / area;
                    if plane < 2 || (plane >= self.coords && plane < objectness_end) {
                        *v = sigmoid(*v);
                    }
                }
                if self.do_softmax && self.classes > 0 {
                    let scores = &mut region[(self.coords + 1) * area..];
                    for p in 0..area {
                        let at = |k: usize| k * area + p;
                        let max = (0..self.classes)
                            .map(|k| scores[at(k)].to_f64())
                            .fold(scores[at(0)].to_f64(), f64::max);
                        let mut sum = T::from_f64(0.0);
                        for k in 0..self.classes {
                            let e = T::from_f64((scores[at(k)].to_f64() - max).exp());
                            scores[at(k)] = e;
                            sum = T::from_f64(sum.to_f64() + e.to_f64());
                        }
                        for k in 0..self.classes {
                            scores[at(k)] = T::from_f64(scores[at(k)].to_f64() / sum.to_f64());
                        }
                    }
                }
            }
        }
        out
    }
}

impl Op for RegionYolo {
    fn name(&self) -> &'static str {
        "RegionYolo-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let x = &inputs[0];
        if !x.ty.is_real() && x.ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("RegionYolo-1: input must be floats, got {}", x.ty),
            ));
        }
        let shape = crate::layout::nchw_shape(x, self.name(), PartialShape::dynamic_rank(), |d| {
            self.out_dims(d)
        })?;
        Ok(vec![Fact::new(x.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let ([n, c, h, w], shape) = crate::layout::nchw_run(&x, self.name(), |d| self.out_dims(d))?;
        let ty = x.element_type();
        let bad = || OpError::new(codes::UNSUPPORTED_TYPE, format!("RegionYolo-1 on {ty}"));
        let out = with_float!(ty, T => {
            let v = self.run(x.values::<T>().ok_or_else(bad)?, [n, c, h, w]);
            Tensor::new(ty, shape, T::wrap(v))
        }, else return Err(bad()))
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(do_softmax: bool) -> RegionYolo {
        RegionYolo {
            coords: 4,
            classes: 3,
            num: 2,
            do_softmax,
            mask: vec![0],
            axis: 1,
            end_axis: 3,
        }
    }

    #[test]
    fn yolo_v2_flattens_and_takes_the_softmax_of_the_classes() {
        // 2 regions x 8 entries on a 1 x 2 image.
        let x: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) * 0.25).collect();
        let out = op(true)
            .eval(vec![Arc::new(
                Tensor::from_f32(vec![1, 16, 1, 2], x.clone()).unwrap(),
            )])
            .unwrap();
        assert_eq!(out[0].shape(), &[1, 32]);
        let v = out[0].values::<f32>().unwrap();
        let sig = |t: f32| 1.0 / (1.0 + (-t).exp());
        assert_eq!(v[0], sig(x[0]), "x");
        assert_eq!(v[4], x[4], "w stays");
        assert_eq!(v[8], sig(x[8]), "objectness");
        let classes: Vec<f32> = (0..3).map(|k| v[10 + 2 * k]).collect();
        assert!((classes.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(classes[0] < classes[1] && classes[1] < classes[2]);
    }

    #[test]
    fn yolo_v3_keeps_the_masked_regions_and_sigmoids_the_classes() {
        let x: Vec<f32> = (0..32).map(|i| i as f32 * 0.1).collect();
        let out = op(false)
            .eval(vec![Arc::new(
                Tensor::from_f32(vec![1, 16, 1, 2], x.clone()).unwrap(),
            )])
            .unwrap();
        assert_eq!(out[0].shape(), &[1, 8, 1, 2]);
        let v = out[0].values::<f32>().unwrap();
        let sig = |t: f32| 1.0 / (1.0 + (-t).exp());
        assert_eq!(v[15], sig(x[15]), "the last class plane");
        assert_eq!(v[6], x[6], "h stays");
        let e = op(false)
            .infer(&[irun_opkit::testing::fact(ElementType::F32, "1,7,2,2")])
            .unwrap_err();
        assert!(e.message.contains("fewer than"), "{}", e.message);
    }
}
