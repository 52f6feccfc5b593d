//! PriorBoxClustered-1 (SSD-style anchors of fixed sizes): inputs `output_size [H, W]` (the
//! feature map) and `image_size [IH, IW]`, integers; attributes `width` and `height` (one
//! prior per pair), `step` / `step_w` / `step_h`, `offset`, `clip`, `variance` (0, 1 or 4
//! values; none means 0.1). Output f32 `[2, 4·H·W·P]`: row 0 the boxes `(x1, y1, x2, y2)` of
//! each position (row-major) and prior, divided by the image size; row 1 the variances.
//!
//! As OpenVINO's reference, in f32: the centre is `((w + offset)·step_w, (h + offset)·step_h)`
//! (steps from `step_w`/`step_h`, else `step`; all zero means the image size over the map
//! size), the box `centre ∓ size / 2`, clamped to [0, 1] with `clip`. `img_w`/`img_h` are read
//! and not used (the image size is the input).

use std::sync::Arc;

use irun_tensor::Tensor;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct PriorBoxClustered {
    pub widths: Vec<f32>,
    pub heights: Vec<f32>,
    pub clip: bool,
    pub step: f32,
    pub step_w: f32,
    pub step_h: f32,
    pub offset: f32,
    pub variances: Vec<f32>,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let floats = |name: &'static str| -> Result<Vec<f32>, OpError> {
        Ok(a.f64_list_or(name, Some(Vec::new()))?
            .into_iter()
            .map(|v| v as f32)
            .collect())
    };
    let (widths, heights) = (floats("width")?, floats("height")?);
    if widths.len() != heights.len() {
        return Err(OpError::attribute(
            "width",
            format!(
                "PriorBoxClustered-1: {} widths and {} heights",
                widths.len(),
                heights.len()
            ),
        ));
    }
    let mut variances = floats("variance")?;
    if !matches!(variances.len(), 0 | 1 | 4) {
        return Err(OpError::attribute(
            "variance",
            format!(
                "PriorBoxClustered-1: variance takes 0, 1 or 4 values, got {}",
                variances.len()
            ),
        ));
    }
    if variances.is_empty() {
        variances.push(0.1);
    }
    a.i64_or("img_w", Some(0))?;
    a.i64_or("img_h", Some(0))?;
    Ok(Box::new(PriorBoxClustered {
        widths,
        heights,
        clip: a.bool_or("clip", true)?,
        step: a.f64_or("step", 0.0)? as f32,
        step_w: a.f64_or("step_w", 0.0)? as f32,
        step_h: a.f64_or("step_h", 0.0)? as f32,
        offset: a.f64_or("offset", 0.0)? as f32,
        variances,
    }))
}

impl PriorBoxClustered {
    fn len(&self, [h, w]: [i64; 2]) -> u64 {
        4 * h as u64 * w as u64 * self.widths.len() as u64
    }
}

impl Op for PriorBoxClustered {
    fn name(&self) -> &'static str {
        "PriorBoxClustered-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[0]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        crate::layout::prior_boxes(inputs, self.name(), self.widths.len() as u64)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [layer, image] = take_inputs::<2>(inputs, self.name())?;
        let [lh, lw] = crate::layout::size_pair(&layer, 0, self.name())?;
        let [ih, iw] = crate::layout::size_pair(&image, 1, self.name())?;
        let (img_w, img_h) = (iw as f32, ih as f32);
        let (mut step_w, mut step_h) = (
            if self.step_w == 0.0 {
                self.step
            } else {
                self.step_w
            },
            if self.step_h == 0.0 {
                self.step
            } else {
                self.step_h
            },
        );
        if step_w == 0.0 && step_h == 0.0 {
            step_w = img_w / lw as f32;
            step_h = img_h / lh as f32;
        }
        let half = self.len([lh, lw]) as usize;
        let mut out = vec![0f32; 2 * half];
        let (boxes, variances) = out.split_at_mut(half);
        // `clamp` keeps NaN, as the reference's std::min(std::max(..)) does.
        let clip = |v: f32| if self.clip { v.clamp(0.0, 1.0) } else { v };
        let mut at = 0;
        for h in 0..lh {
            for w in 0..lw {
                let cx = (w as f32 + self.offset) * step_w;
                let cy = (h as f32 + self.offset) * step_h;
                for (&bw, &bh) in self.widths.iter().zip(&self.heights) {
                    boxes[at] = clip((cx - bw / 2.0) / img_w);
                    boxes[at + 1] = clip((cy - bh / 2.0) / img_h);
                    boxes[at + 2] = clip((cx + bw / 2.0) / img_w);
                    boxes[at + 3] = clip((cy + bh / 2.0) / img_h);
                    for j in 0..4 {
                        variances[at + j] = self.variances[j % self.variances.len()];
                    }
                    at += 4;
                }
            }
        }
        let t = Tensor::from_f32(vec![2, half], out)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Value {
        Arc::new(Tensor::from_i64(vec![v.len()], v.to_vec()).unwrap())
    }

    #[test]
    fn boxes_around_each_cell_centre_then_variances() {
        let op = PriorBoxClustered {
            widths: vec![4.0, 2.0],
            heights: vec![2.0, 6.0],
            clip: false,
            step: 0.0,
            step_w: 0.0,
            step_h: 0.0,
            offset: 0.5,
            variances: vec![0.1, 0.1, 0.2, 0.2],
        };
        let out = op.eval(vec![ints(&[2, 3]), ints(&[20, 30])]).unwrap();
        assert_eq!(out[0].shape(), &[2, 48]);
        let v = out[0].values::<f32>().unwrap();
        // Cell (0, 0): centre (5, 5) with steps 30/3 and 20/2; prior 0 is 4 x 2.
        assert_eq!(&v[..4], &[3.0 / 30.0, 4.0 / 20.0, 7.0 / 30.0, 6.0 / 20.0]);
        assert_eq!(&v[48..52], &[0.1, 0.1, 0.2, 0.2]);
        let clipped = PriorBoxClustered { clip: true, ..op };
        let out = clipped.eval(vec![ints(&[2, 3]), ints(&[20, 30])]).unwrap();
        assert!(out[0]
            .values::<f32>()
            .unwrap()
            .iter()
            .all(|&x| (0.0..=1.0).contains(&x)));
    }
}
