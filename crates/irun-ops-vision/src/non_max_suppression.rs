//! NonMaxSuppression-5 and -9: per batch and class, boxes taken greedily by score, each
//! dropping (hard NMS) or down-weighting (soft NMS) the boxes that overlap it.
//!
//! - Inputs `boxes [B, M, 4]`, `scores [B, K, M]` (floats), then optional one-value inputs
//!   `max_output_boxes_per_class` (default 0: nothing is selected), `iou_threshold`,
//!   `score_threshold`, `soft_nms_sigma` (default 0 each).
//! - `box_encoding`: `corner` (`[y1, x1, y2, x2]`, either diagonal) or `center`
//!   (`[xc, yc, w, h]`); IoU is 0 when either box has no area.
//! - Candidates score strictly above `score_threshold`. The best waiting candidate (ties:
//!   the lower box index) is compared with the boxes selected since it was last compared,
//!   newest first: an IoU above `iou_threshold` drops it (v5: at or above, as its
//!   reference does; v9 as its specification and reference and ONNX say, where OpenVINO CPU
//!   also drops at equality; v9 has no hard drop when `soft_nms_sigma > 0`), and soft NMS
//!   multiplies its score by
//!   `exp(-0.5 IoU^2 / sigma)`. Unchanged, it is selected; lowered but still above the
//!   threshold, it waits again.
//! - Outputs: `selected_indices [S, 3]` (batch, class, box; `output_type`),
//!   `selected_scores [S, 3]` (batch, class, score; the scores' type), `valid_outputs [1]`
//!   (S). With `sort_result_descending` all selections are ordered by score (ties: batch,
//!   class, box), else by batch and class in selection order. S rows exactly, as OpenVINO
//!   CPU returns them.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use irun_opkit::number::Number;
use irun_tensor::{with_float, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};

#[derive(Debug)]
pub struct NonMaxSuppression {
    pub v9: bool,
    pub center: bool,
    pub sort_descending: bool,
    pub output_type: ElementType,
}

fn read(a: &AttrReader, v9: bool) -> Result<Box<dyn Op>, OpError> {
    let center = a.enum_or("box_encoding", &["corner", "center"], "corner")? == "center";
    let output_type = match a.enum_or("output_type", &["i64", "i32"], "i64")? {
        "i32" => ElementType::I32,
        _ => ElementType::I64,
    };
    Ok(Box::new(NonMaxSuppression {
        v9,
        center,
        sort_descending: a.bool_or("sort_result_descending", true)?,
        output_type,
    }))
}

pub fn build_v5(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, false)
}

pub fn build_v9(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, true)
}

/// A box as `[ymin, xmin, ymax, xmax]`.
type Corners = [f32; 4];

fn iou(a: &Corners, b: &Corners) -> f32 {
    let area = |c: &Corners| (c[2] - c[0]) * (c[3] - c[1]);
    let (aa, ab) = (area(a), area(b));
    if aa <= 0.0 || ab <= 0.0 {
        return 0.0;
    }
    let h = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let w = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = h * w;
    inter / (aa + ab - inter)
}

/// A waiting candidate: its score now, its box, and how many selections it has been
/// compared with.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: f32,
    index: usize,
    checked: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    /// Higher score first, then the lower box index.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.index.cmp(&self.index))
    }
}

/// The run-time thresholds.
struct Limits {
    max_boxes: usize,
    iou: f32,
    score: f32,
    sigma: f32,
}

impl NonMaxSuppression {
    fn name_str(&self) -> &'static str {
        if self.v9 {
            "NonMaxSuppression-9"
        } else {
            "NonMaxSuppression-5"
        }
    }

    fn corners(&self, b: &[f32]) -> Corners {
        if self.center {
            let (xc, yc, w, h) = (b[0], b[1], b[2], b[3]);
            [yc - h / 2.0, xc - w / 2.0, yc + h / 2.0, xc + w / 2.0]
        } else {
            [
                b[0].min(b[2]),
                b[1].min(b[3]),
                b[0].max(b[2]),
                b[1].max(b[3]),
            ]
        }
    }

    /// The selections of one batch and class: `(box, score)` in selection order.
    fn select(&self, boxes: &[Corners], scores: &[f32], lim: &Limits) -> Vec<(usize, f32)> {
        let mut heap: BinaryHeap<Candidate> = scores
            .iter()
            .enumerate()
            .filter(|(_, &s)| s > lim.score)
            .map(|(index, &score)| Candidate {
                score,
                index,
                checked: 0,
            })
            .collect();
        let hard = !self.v9 || lim.sigma <= 0.0;
        let scale = if lim.sigma > 0.0 {
            -0.5 / lim.sigma
        } else {
            0.0
        };
        let mut selected: Vec<(usize, f32)> = Vec::new();
        while selected.len() < lim.max_boxes {
            let Some(mut c) = heap.pop() else { break };
            let original = c.score;
            let mut dropped = false;
            for &(j, _) in selected[c.checked..].iter().rev() {
                let o = iou(&boxes[c.index], &boxes[j]);
                let over = if self.v9 { o > lim.iou } else { o >= lim.iou };
                if hard && over {
                    dropped = true;
                    break;
                }
                if lim.sigma > 0.0 {
                    c.score *= (scale * o * o).exp();
                }
                if c.score <= lim.score {
                    break;
                }
            }
            c.checked = selected.len();
            if dropped {
                continue;
            }
            if c.score == original {
                selected.push((c.index, c.score));
            } else if c.score > lim.score {
                heap.push(c);
            }
        }
        selected
    }
}

/// The one value of optional input `slot`, as f64; `default` when absent.
fn scalar(inputs: &[Value], slot: usize, default: f64) -> Result<f64, OpError> {
    let Some(t) = inputs.get(slot) else {
        return Ok(default);
    };
    let bad = || {
        OpError::input(
            slot,
            codes::BAD_VALUE,
            format!("input {slot} must hold one number"),
        )
    };
    match irun_opkit::number::f64_values(t).as_deref() {
        Some(&[v]) => Ok(v),
        _ => Err(bad()),
    }
}

impl Op for NonMaxSuppression {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 2, 6, self.name())?;
        let (boxes, scores) = (&inputs[0], &inputs[1]);
        for (slot, f) in inputs.iter().enumerate().take(2) {
            if f.ty != ElementType::Dynamic && !f.ty.is_real() {
                return Err(OpError::input(
                    slot,
                    codes::ELEMENT_TYPE,
                    format!("{}: input {slot} must be floats, got {}", self.name(), f.ty),
                ));
            }
            if f.rank().is_some_and(|r| r != 3) {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!("{}: input {slot} {} must be 3-D", self.name(), f.shape),
                ));
            }
        }
        for (slot, f) in inputs.iter().enumerate().skip(2) {
            if f.rank().is_some_and(|r| r > 1)
                || f.shape
                    .to_static()
                    .is_some_and(|s| s.iter().product::<usize>() != 1)
            {
                return Err(OpError::input(
                    slot,
                    codes::SHAPE,
                    format!(
                        "{}: input {slot} {} must hold one value",
                        self.name(),
                        f.shape
                    ),
                ));
            }
        }
        let mut bound = None;
        if let (Some(b), Some(s)) = (boxes.shape.dims(), scores.shape.dims()) {
            if b[2].get_static().is_some_and(|v| v != 4) {
                return Err(OpError::input(
                    0,
                    codes::SHAPE,
                    format!("{}: boxes {} must end in 4", self.name(), boxes.shape),
                ));
            }
            if !b[0].compatible(s[0]) || !b[1].compatible(s[2]) {
                return Err(OpError::input(
                    1,
                    codes::SHAPE,
                    format!(
                        "{}: scores {} do not fit boxes {}",
                        self.name(),
                        scores.shape,
                        boxes.shape
                    ),
                ));
            }
            if let (Some(nb), Some(nk), Some(m)) =
                (s[0].get_static(), s[1].get_static(), s[2].get_static())
            {
                let per = match inputs.get(2).and_then(crate::util::known_ints) {
                    Some(v) => (v.first().copied().unwrap_or(0).max(0) as u64).min(m),
                    None if inputs.len() > 2 => m,
                    None => 0,
                };
                bound = Some(nb * nk * per);
            }
        }
        let s = Dim::interval(0, bound).unwrap_or(Dim::DYNAMIC);
        let score_ty = if scores.ty == ElementType::Dynamic {
            boxes.ty
        } else {
            scores.ty
        };
        Ok(vec![
            Fact::new(self.output_type, PartialShape::new(vec![s, Dim::fixed(3)])),
            Fact::new(score_ty, PartialShape::new(vec![s, Dim::fixed(3)])),
            Fact::new(self.output_type, PartialShape::fixed(&[1])),
        ])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let (boxes, scores) = (&inputs[0], &inputs[1]);
        let (bs, ss) = (boxes.shape(), scores.shape());
        if bs.len() != 3 || ss.len() != 3 || bs[2] != 4 || bs[0] != ss[0] || bs[1] != ss[2] {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("{}: boxes {bs:?} and scores {ss:?} do not fit", self.name()),
            ));
        }
        let (nb, nk, m) = (ss[0], ss[1], ss[2]);
        let max_boxes = scalar(&inputs, 2, 0.0)?;
        let lim = Limits {
            max_boxes: if max_boxes > 0.0 {
                (max_boxes as u64).min(m as u64) as usize
            } else {
                0
            },
            iou: scalar(&inputs, 3, 0.0)? as f32,
            score: scalar(&inputs, 4, 0.0)? as f32,
            sigma: scalar(&inputs, 5, 0.0)? as f32,
        };
        let floats = |t: &Tensor| -> Result<Vec<f32>, OpError> {
            let ty = t.element_type();
            let v = irun_opkit::number::f64_values(t)
                .filter(|_| ty.is_real())
                .ok_or_else(|| {
                    OpError::new(codes::UNSUPPORTED_TYPE, format!("{} on {ty}", self.name()))
                })?;
            Ok(v.into_iter().map(|x| x as f32).collect())
        };
        let (bv, sv) = (floats(boxes)?, floats(scores)?);
        // (batch, class, box, score)
        let mut picks: Vec<(usize, usize, usize, f32)> = Vec::new();
        for b in 0..nb {
            let corners: Vec<Corners> = (0..m)
                .map(|i| self.corners(&bv[(b * m + i) * 4..][..4]))
                .collect();
            for k in 0..nk {
                let s = &sv[(b * nk + k) * m..][..m];
                picks.extend(
                    self.select(&corners, s, &lim)
                        .into_iter()
                        .map(|(i, sc)| (b, k, i, sc)),
                );
            }
        }
        if self.sort_descending {
            picks.sort_by(|x, y| {
                y.3.total_cmp(&x.3)
                    .then((x.0, x.1, x.2).cmp(&(y.0, y.1, y.2)))
            });
        }
        let n = picks.len();
        let idx: Vec<i64> = picks
            .iter()
            .flat_map(|p| [p.0 as i64, p.1 as i64, p.2 as i64])
            .collect();
        let sty = scores.element_type();
        let scores_out = with_float!(sty, T => Tensor::new(sty, vec![n, 3],
            T::wrap(picks.iter().flat_map(|p| [p.0 as f64, p.1 as f64, p.3 as f64]).map(T::from_f64).collect())),
            else return Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{} on {sty}", self.name()))));
        let ints = |v: Vec<i64>, shape: Vec<usize>| match self.output_type {
            ElementType::I32 => Tensor::from_i32(shape, v.into_iter().map(|x| x as i32).collect()),
            _ => Tensor::from_i64(shape, v),
        };
        let err = |e: irun_tensor::TensorError| OpError::new(codes::RUN_SHAPE, e.to_string());
        Ok(vec![
            Arc::new(ints(idx, vec![n, 3]).map_err(err)?),
            Arc::new(scores_out.map_err(err)?),
            Arc::new(ints(vec![n as i64], vec![1]).map_err(err)?),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_opkit::testing::eval_all;
    use irun_opkit::testing::prelude::*;

    /// ONNX's NonMaxSuppression boxes: two clusters of three near-identical boxes (scores
    /// .9 .75 .6 and .95 .5 .3), center encoding.
    fn onnx_boxes() -> (Tensor, Tensor) {
        #[rustfmt::skip]
        let boxes = [
            0.5, 0.5, 1.0, 1.0,  0.5, 0.6, 1.0, 1.0,  0.5, 0.4, 1.0, 1.0,
            0.5, 10.5, 1.0, 1.0,  0.5, 10.6, 1.0, 1.0,  0.5, 100.5, 1.0, 1.0,
        ];
        (
            f32s(&[1, 6, 4], &boxes),
            f32s(&[1, 1, 6], &[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]),
        )
    }

    fn nms(v9: bool, sort: bool) -> NonMaxSuppression {
        NonMaxSuppression {
            v9,
            center: true,
            sort_descending: sort,
            output_type: ElementType::I64,
        }
    }

    #[test]
    fn onnx_center_point_box_format() {
        let (b, s) = onnx_boxes();
        let out = eval_all(
            &nms(true, true),
            vec![
                b,
                s,
                i64s(&[1], &[3]),
                f32s(&[1], &[0.5]),
                f32s(&[1], &[0.0]),
            ],
        )
        .unwrap();
        assert_eq!(out[0], i64s(&[3, 3], &[0, 0, 3, 0, 0, 0, 0, 0, 5]));
        assert_eq!(
            out[1],
            f32s(&[3, 3], &[0., 0., 0.95, 0., 0., 0.9, 0., 0., 0.3])
        );
        assert_eq!(out[2], i64s(&[1], &[3]));
    }

    /// IoU exactly at the threshold drops the box in v5 and keeps it in v9 (ONNX's
    /// `iou_threshold_boundary`); a score at the score threshold is not a candidate.
    #[test]
    fn thresholds_are_inclusive_for_iou_and_strict_for_scores() {
        // Two boxes sharing half their area: IoU = 1/3.
        let b = f32s(&[1, 2, 4], &[0., 0., 1., 2., 0., 1., 1., 3.]);
        let s = f32s(&[1, 1, 2], &[0.9, 0.8]);
        for v9 in [false, true] {
            let mut op = nms(v9, true);
            op.center = false;
            let out = eval_all(
                &op,
                vec![
                    b.clone(),
                    s.clone(),
                    i64s(&[], &[5]),
                    f32s(&[], &[1.0 / 3.0]),
                ],
            )
            .unwrap();
            let kept = if v9 { 2 } else { 1 };
            assert_eq!(out[2], i64s(&[1], &[kept]), "v9 {v9}");
            let out = eval_all(
                &op,
                vec![
                    b.clone(),
                    s.clone(),
                    i64s(&[], &[5]),
                    f32s(&[], &[0.5]),
                    f32s(&[], &[0.8]),
                ],
            )
            .unwrap();
            assert_eq!(out[0], i64s(&[1, 3], &[0, 0, 0]), "v9 {v9}");
        }
    }

    /// Soft NMS (v9): the overlapping box is kept at a lower score and selected after the
    /// other cluster's best.
    #[test]
    fn soft_nms_lowers_scores() {
        let mut op = nms(true, true);
        op.center = false;
        let b = f32s(
            &[1, 3, 4],
            &[0., 0., 1., 1., 0., 0., 1., 1.2, 5., 5., 6., 6.],
        );
        let s = f32s(&[1, 1, 3], &[0.9, 0.85, 0.5]);
        let out = eval_all(
            &op,
            vec![
                b,
                s,
                i64s(&[], &[3]),
                f32s(&[], &[0.5]),
                f32s(&[], &[0.0]),
                f32s(&[], &[0.5]),
            ],
        )
        .unwrap();
        let iou: f32 = 1.0 / 1.2;
        let lowered = 0.85 * (-0.5 * iou * iou / 0.5f32).exp();
        assert_eq!(out[0], i64s(&[3, 3], &[0, 0, 0, 0, 0, 2, 0, 0, 1]));
        let got = out[1].values::<f32>().unwrap()[8];
        assert!((got - lowered).abs() < 1e-6, "{got} vs {lowered}");
    }

    #[test]
    fn unsorted_groups_by_class() {
        let (b, _) = onnx_boxes();
        let s = f32s(
            &[1, 2, 6],
            &[
                0.9, 0.75, 0.6, 0.95, 0.5, 0.3, 0.1, 0.2, 0.3, 0.4, 0.5, 0.99,
            ],
        );
        let out = eval_all(
            &nms(false, false),
            vec![b, s, i64s(&[], &[1]), f32s(&[], &[0.5])],
        )
        .unwrap();
        assert_eq!(out[0], i64s(&[2, 3], &[0, 0, 3, 0, 1, 5]));
        let f = nms(false, false)
            .infer(&[fact(F32, "1,6,4"), fact(F32, "1,2,6"), i64_value(&[1])])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[..2,3]");
    }
}
