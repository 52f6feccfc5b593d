//! DetectionOutput-1 and -8, the SSD head: decodes each prior box by its predicted offsets,
//! keeps the confident boxes of each class through non-maximum suppression and lists them.
//!
//! - Inputs: `loc [N, P·L·4]` (L = 1 with `share_location`, else the class count), `conf
//!   [N, P·C]`, `priors [1 | N, 1 | 2, P·S]` (S = 4 values per prior, or 5 when not
//!   `normalized`: a leading image id, and a prior whose id is -1 ends the list; the second
//!   row holds the four variances per prior unless `variance_encoded_in_target`); optional
//!   `arm_conf [N, P·2]` and `arm_loc` (the shape of `loc`), RefineDet's anchor refinement.
//!   v1 names the class count C in `num_classes`; v8 derives it as `conf`'s width over P.
//! - Decoding (`code_type`): CORNER adds `variance·offset` to each corner; CENTER_SIZE moves
//!   the centre by `variance·offset·size` and scales the size by `exp(variance·offset)`.
//!   Unnormalized priors are first divided by `input_width`/`input_height`. With the ARM
//!   inputs a prior is first decoded by `arm_loc`, and the result decoded by `loc` (its
//!   coordinates again divided by the input size when not normalized, as OpenVINO CPU does);
//!   a prior whose ARM objectness (`arm_conf[p·2 + 1]`) is below `objectness_score` scores 1
//!   for the background class and 0 for the others. `clip_before_nms` clamps decoded boxes to
//!   [0, 1].
//! - Caffe style: per class other than `background_label_id`, the boxes scoring above
//!   `confidence_threshold` by score (ties: the lower prior), the first `top_k` of them (-1:
//!   all), greedily kept unless their overlap (intersection over union) with a kept box
//!   exceeds `nms_threshold`. MXNet style (`decrease_label_id`): each prior's best class
//!   (from class 1, at or above the threshold) is a candidate; candidates by score (ties:
//!   class, then prior), the first `top_k`, suppressed within their class. Then, when an
//!   image has more than `keep_top_k[0]` (> -1) boxes, its best `keep_top_k[0]` by score
//!   (ties: the lower prior).
//! - Output `[1, 1, R, 7]` of rows `[image, label, score, x1, y1, x2, y2]`, by image, then
//!   class, then score; `label` is the class, less 1 in MXNet style; `clip_after_nms` clamps
//!   the corners. R is `N·keep_top_k[0]` when that is positive, else `N·top_k·C` when `top_k`
//!   is, else `N·C·P`. The rows after the last detection are zero, and the first of them has
//!   image -1.
//!
//! Computed in f32, as OpenVINO CPU runs it for every float type; boxes with inverted corners
//! keep their negative-area products as CPU's sizes do (its reference counts them as 0).

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};

#[derive(Debug, Clone)]
pub struct DetectionOutput {
    /// v1's `num_classes`; `None` for v8, which derives the count from the shapes.
    pub num_classes: Option<u64>,
    pub background: i64,
    pub top_k: i64,
    pub keep_top_k: i64,
    pub variance_in_target: bool,
    pub center_size: bool,
    pub share_location: bool,
    pub nms_threshold: f32,
    pub confidence_threshold: f32,
    pub clip_before_nms: bool,
    pub clip_after_nms: bool,
    /// `decrease_label_id`: MXNet-style suppression.
    pub mxnet: bool,
    pub normalized: bool,
    pub input_height: f32,
    pub input_width: f32,
    pub objectness_score: f32,
}

fn read(a: &AttrReader, v8: bool) -> Result<Box<dyn Op>, OpError> {
    let num_classes = if v8 {
        None
    } else {
        let c = a.i64_or("num_classes", None)?;
        Some(u64::try_from(c).ok().filter(|&c| c > 0).ok_or_else(|| {
            OpError::attribute(
                "num_classes",
                format!("num_classes must be positive, got {c}"),
            )
        })?)
    };
    let keep = a.i64_list_or("keep_top_k", None)?;
    let Some(&keep_top_k) = keep.first() else {
        return Err(OpError::attribute(
            "keep_top_k",
            "keep_top_k must hold at least one value",
        ));
    };
    let code = a.enum_or(
        "code_type",
        &[
            "caffe.priorboxparameter.corner",
            "caffe.priorboxparameter.center_size",
        ],
        "caffe.priorboxparameter.corner",
    )?;
    let normalized = a.bool_or("normalized", false)?;
    let size = |name: &'static str| -> Result<f32, OpError> {
        let v = a.i64_or(name, Some(1))?;
        if !normalized && v <= 0 {
            return Err(OpError::attribute(
                name,
                format!("{name} must be positive when the priors are not normalized, got {v}"),
            ));
        }
        Ok(v as f32)
    };
    Ok(Box::new(DetectionOutput {
        num_classes,
        background: a.i64_or("background_label_id", Some(0))?,
        top_k: a.i64_or("top_k", Some(-1))?,
        keep_top_k,
        variance_in_target: a.bool_or("variance_encoded_in_target", false)?,
        center_size: code == "caffe.priorboxparameter.center_size",
        share_location: a.bool_or("share_location", true)?,
        nms_threshold: a.f64_or("nms_threshold", 0.0)? as f32,
        confidence_threshold: a.f64_or("confidence_threshold", 0.0)? as f32,
        clip_before_nms: a.bool_or("clip_before_nms", false)?,
        clip_after_nms: a.bool_or("clip_after_nms", false)?,
        mxnet: a.bool_or("decrease_label_id", false)?,
        normalized,
        input_height: size("input_height")?,
        input_width: size("input_width")?,
        objectness_score: a.f64_or("objectness_score", 0.0)? as f32,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("nms_threshold")?;
    read(a, false)
}

pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("nms_threshold")?;
    read(a, true)
}

/// A box `[x1, y1, x2, y2]`.
type Corners = [f32; 4];

/// The sizes the shapes give: images N, priors P, classes C (each unknown while its dims are).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Counts {
    images: Option<u64>,
    priors: Option<u64>,
    classes: Option<u64>,
}

/// Input dims, each input's `None` when its rank is unknown and each dim's `None` when dynamic.
type Dims = Vec<Option<Vec<Option<u64>>>>;

impl DetectionOutput {
    fn prior_size(&self) -> u64 {
        if self.normalized {
            4
        } else {
            5
        }
    }

    fn loc_classes(&self, classes: u64) -> u64 {
        if self.share_location {
            1
        } else {
            classes
        }
    }

    /// Checks the inputs' dims against each other as OpenVINO's shape inference does.
    fn counts(&self, dims: &Dims) -> Result<Counts, OpError> {
        let name = self.name();
        let bad = |slot: usize, code: &'static str, m: String| {
            Err(OpError::input(slot, code, format!("{name}: {m}")))
        };
        let ranks = [2, 2, 3, 2, 2];
        for (slot, d) in dims.iter().enumerate() {
            if let Some(d) = d {
                if d.len() != ranks[slot] {
                    return bad(
                        slot,
                        codes::RANK,
                        format!(
                            "input {slot} must be {}-D, got rank {}",
                            ranks[slot],
                            d.len()
                        ),
                    );
                }
            }
        }
        let dim = |slot: usize, axis: usize| dims.get(slot)?.as_ref().and_then(|d| d[axis]);
        let mut c = Counts::default();
        let size = self.prior_size();
        if let Some(rows) = dim(2, 1) {
            let want = if self.variance_in_target { 1 } else { 2 };
            if rows != want {
                return bad(
                    2,
                    codes::SHAPE,
                    format!("priors must have {want} row(s) (variance_encoded_in_target is {}), got {rows}", self.variance_in_target),
                );
            }
        }
        if let Some(width) = dim(2, 2) {
            if width == 0 || width % size != 0 {
                return bad(
                    2,
                    codes::SHAPE,
                    format!("the priors' last dim {width} must be a positive multiple of {size} values per prior"),
                );
            }
            c.priors = Some(width / size);
        }
        if c.priors.is_none() && dims.len() == 5 {
            c.priors = dim(3, 1).map(|w| w / 2);
        }
        c.classes = self.num_classes;
        if let (None, Some(p), Some(w)) = (c.classes, c.priors, dim(1, 1)) {
            if w % p != 0 {
                return bad(
                    1,
                    codes::SHAPE,
                    format!("the confidences' width {w} is not a multiple of the {p} priors"),
                );
            }
            c.classes = Some(w / p);
        }
        if let (Some(p), Some(k), Some(w)) = (c.priors, c.classes, dim(1, 1)) {
            if w != p * k {
                return bad(
                    1,
                    codes::SHAPE,
                    format!("the confidences' width {w} is not {p} priors x {k} classes"),
                );
            }
        }
        if let (Some(p), Some(k), Some(w)) = (c.priors, c.classes, dim(0, 1)) {
            let want = p * self.loc_classes(k) * 4;
            if w != want {
                return bad(
                    0,
                    codes::SHAPE,
                    format!("the box offsets' width {w} is not {want} ({p} priors x {} location classes x 4)", self.loc_classes(k)),
                );
            }
        }
        for slot in [0, 1, 3, 4] {
            match (c.images, dim(slot, 0)) {
                (Some(n), Some(m)) if n != m => {
                    return bad(
                        slot,
                        codes::SHAPE,
                        format!("input {slot} holds {m} images where input 0 holds {n}"),
                    )
                }
                (None, m) if slot < dims.len() => c.images = m,
                _ => {}
            }
        }
        if let (Some(n), Some(b)) = (c.images, dim(2, 0)) {
            if b != 1 && b != n {
                return bad(
                    2,
                    codes::SHAPE,
                    format!("the priors' first dim {b} must be 1 or the {n} images"),
                );
            }
        }
        if dims.len() == 5 {
            if let (Some(p), Some(w)) = (c.priors, dim(3, 1)) {
                if w != 2 * p {
                    return bad(
                        3,
                        codes::SHAPE,
                        format!("the ARM confidences' width {w} is not 2 x {p} priors"),
                    );
                }
            }
            if let (Some(l), Some(a)) = (dim(0, 1), dim(4, 1)) {
                if l != a {
                    return bad(
                        4,
                        codes::SHAPE,
                        format!("the ARM box offsets' width {a} differs from the box offsets' {l}"),
                    );
                }
            }
        }
        Ok(c)
    }

    /// The output's row count R, when the counts it needs are known.
    fn rows(&self, c: Counts) -> Option<u64> {
        let n = c.images?;
        if self.keep_top_k > 0 {
            Some(n * self.keep_top_k as u64)
        } else if self.top_k > 0 {
            Some(n * self.top_k as u64 * c.classes?)
        } else {
            Some(n * c.classes? * c.priors?)
        }
    }

    /// `prior` moved by `offset` (with `var`iances unless they are encoded in the target).
    fn decode(&self, prior: Corners, var: &[f32], offset: &[f32]) -> Corners {
        let mut p = prior;
        if !self.normalized {
            p[0] /= self.input_width;
            p[1] /= self.input_height;
            p[2] /= self.input_width;
            p[3] /= self.input_height;
        }
        let v = |k: usize| if self.variance_in_target { 1.0 } else { var[k] };
        let mut b = if self.center_size {
            let (w, h) = (p[2] - p[0], p[3] - p[1]);
            let (cx, cy) = ((p[0] + p[2]) / 2.0, (p[1] + p[3]) / 2.0);
            let cx = v(0) * offset[0] * w + cx;
            let cy = v(1) * offset[1] * h + cy;
            let w = (v(2) * offset[2]).exp() * w;
            let h = (v(3) * offset[3]).exp() * h;
            [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0]
        } else if self.variance_in_target {
            [0, 1, 2, 3].map(|k| p[k] + offset[k])
        } else {
            [0, 1, 2, 3].map(|k| p[k] + var[k] * offset[k])
        };
        if self.clip_before_nms {
            b = b.map(clip);
        }
        b
    }

    /// Greedy suppression's one step: box `i` joins `kept` (boxes taken so far, best first)
    /// unless it overlaps one of them by more than `nms_threshold`.
    fn keep(&self, kept: &mut Vec<usize>, boxes: &[Corners], i: usize) {
        if kept
            .iter()
            .all(|&k| overlap(&boxes[i], &boxes[k]) <= self.nms_threshold)
        {
            kept.push(i);
        }
    }

    /// The first `top_k` of `candidates` (all when it is negative).
    fn top(&self, candidates: &mut Vec<impl Sized>) {
        if self.top_k >= 0 {
            candidates.truncate(self.top_k as usize);
        }
    }

    /// One image's detections as `(class, prior)` per class, each in score order.
    fn detect(
        &self,
        conf: &[f32],
        boxes: &[Vec<Corners>],
        classes: usize,
        live: usize,
    ) -> Vec<Vec<usize>> {
        let priors = boxes.iter().map(Vec::len).max().unwrap_or(0);
        let score = |c: usize, p: usize| conf[p * classes + c];
        let class_boxes = |c: usize| &boxes[if self.share_location { 0 } else { c }];
        let mut kept: Vec<Vec<usize>> = vec![Vec::new(); classes];
        if !self.mxnet {
            irun_opkit::par::for_each_mut(&mut kept, &|c, kept| {
                if c as i64 == self.background {
                    return;
                }
                let mut cand: Vec<usize> = (0..live)
                    .filter(|&p| score(c, p) > self.confidence_threshold)
                    .collect();
                cand.sort_by(|&a, &b| score(c, b).total_cmp(&score(c, a)).then(a.cmp(&b)));
                self.top(&mut cand);
                for i in cand {
                    self.keep(kept, class_boxes(c), i);
                }
            });
        } else {
            let mut cand: Vec<(usize, usize)> = (0..live)
                .filter_map(|p| {
                    let mut best: Option<(usize, f32)> = None;
                    for c in 1..classes {
                        let s = score(c, p);
                        if c as i64 != self.background
                            && s >= self.confidence_threshold
                            && s > best.map_or(-1.0, |b| b.1)
                        {
                            best = Some((c, s));
                        }
                    }
                    best.map(|(c, _)| (c, p))
                })
                .collect();
            cand.sort_by(|a, b| {
                score(b.0, b.1)
                    .total_cmp(&score(a.0, a.1))
                    .then((a.0 * priors + a.1).cmp(&(b.0 * priors + b.1)))
            });
            self.top(&mut cand);
            for (c, p) in cand {
                self.keep(&mut kept[c], class_boxes(c), p);
            }
        }
        let total: usize = kept.iter().map(Vec::len).sum();
        if self.keep_top_k >= 0 && total > self.keep_top_k as usize {
            let mut all: Vec<(usize, usize)> = kept
                .iter()
                .enumerate()
                .flat_map(|(c, ps)| ps.iter().map(move |&p| (c, p)))
                .collect();
            all.sort_by(|a, b| {
                score(b.0, b.1)
                    .total_cmp(&score(a.0, a.1))
                    .then(a.1.cmp(&b.1))
                    .then(a.0.cmp(&b.0))
            });
            all.truncate(self.keep_top_k as usize);
            kept.iter_mut().for_each(Vec::clear);
            for (c, p) in all {
                kept[c].push(p);
            }
        }
        kept
    }
}

fn clip(v: f32) -> f32 {
    v.clamp(0.0, 1.0)
}

/// Intersection over union, 0 for boxes that do not overlap; the areas are the corners'
/// products even when inverted, as OpenVINO CPU computes them.
fn overlap(a: &Corners, b: &Corners) -> f32 {
    if b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1] {
        return 0.0;
    }
    let w = a[2].min(b[2]) - a[0].max(b[0]);
    let h = a[3].min(b[3]) - a[1].max(b[1]);
    if w <= 0.0 || h <= 0.0 {
        return 0.0;
    }
    let area = |c: &Corners| (c[2] - c[0]) * (c[3] - c[1]);
    let inter = w * h;
    inter / (area(a) + area(b) - inter)
}

impl Op for DetectionOutput {
    fn name(&self) -> &'static str {
        if self.num_classes.is_some() {
            "DetectionOutput-1"
        } else {
            "DetectionOutput-8"
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 3, 5, self.name())?;
        if inputs.len() == 4 {
            return Err(OpError::new(
                codes::ARITY,
                format!("{} takes 3 or 5 inputs, got 4", self.name()),
            ));
        }
        // Ranks are checked with the dims, in `counts`.
        let ty = crate::layout::float_inputs(inputs, &[], self.name())?;
        let dims: Dims = inputs
            .iter()
            .map(|f| {
                f.shape
                    .dims()
                    .map(|d| d.iter().map(|d| d.get_static()).collect())
            })
            .collect();
        let c = self.counts(&dims)?;
        let rows = self.rows(c).map_or(Dim::DYNAMIC, Dim::fixed);
        Ok(vec![Fact::new(
            ty,
            PartialShape::new(vec![Dim::fixed(1), Dim::fixed(1), rows, Dim::fixed(7)]),
        )])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let name = self.name();
        let dims: Dims = inputs
            .iter()
            .map(|t| Some(t.shape().iter().map(|&d| Some(d as u64)).collect()))
            .collect();
        let c = self.counts(&dims)?;
        let (Some(n), Some(priors), Some(classes), Some(rows)) =
            (c.images, c.priors, c.classes, self.rows(c))
        else {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!("{name}: input shapes"),
            ));
        };
        let (n, priors, classes, rows) =
            (n as usize, priors as usize, classes as usize, rows as usize);
        let ty = inputs[0].element_type();
        let floats = |slot: usize| crate::layout::f32_values(&inputs[slot], name);
        let (loc, mut conf, prior_data) = (floats(0)?, floats(1)?, floats(2)?);
        let arm = if inputs.len() == 5 {
            Some((floats(3)?, floats(4)?))
        } else {
            None
        };
        let size = self.prior_size() as usize;
        let loc_classes = self.loc_classes(classes as u64) as usize;
        let prior_rows = if self.variance_in_target { 1 } else { 2 };
        let prior_batch = inputs[2].shape()[0];
        let mut out = vec![0f32; rows * 7];
        let mut count = 0;
        for image in 0..n {
            let base = if prior_batch == 1 {
                0
            } else {
                image * prior_rows * priors * size
            };
            let (boxes_row, var_row) = (
                &prior_data[base..][..priors * size],
                &prior_data[base + priors * size..][..if self.variance_in_target {
                    0
                } else {
                    priors * 4
                }],
            );
            // Unnormalized priors lead with an image id; -1 ends the list.
            let live = if self.normalized {
                priors
            } else {
                (0..priors)
                    .find(|&p| boxes_row[p * size] == -1.0)
                    .unwrap_or(priors)
            };
            let conf = &mut conf[image * priors * classes..][..priors * classes];
            if let Some((arm_conf, _)) = &arm {
                for p in 0..priors {
                    if arm_conf[(image * priors + p) * 2 + 1] < self.objectness_score {
                        for k in 0..classes {
                            conf[p * classes + k] = if k as i64 == self.background {
                                1.0
                            } else {
                                0.0
                            };
                        }
                    }
                }
            }
            let offset = size - 4;
            let prior_box = |p: usize| -> Corners {
                boxes_row[p * size + offset..][..4]
                    .try_into()
                    .expect("4 values")
            };
            let var = |p: usize| &var_row[if self.variance_in_target { 0 } else { p * 4 }..];
            let img_loc = &loc[image * priors * loc_classes * 4..][..priors * loc_classes * 4];
            let boxes: Vec<Vec<Corners>> = (0..loc_classes)
                .map(|l| {
                    if !self.share_location && l as i64 == self.background {
                        return vec![[0.0; 4]; priors];
                    }
                    (0..priors)
                        .map(|p| {
                            if p >= live {
                                return [0.0; 4];
                            }
                            let at = (p * loc_classes + l) * 4;
                            match &arm {
                                Some((_, arm_loc)) => {
                                    let a = &arm_loc[image * priors * loc_classes * 4..];
                                    let refined = self.decode(prior_box(p), var(p), &a[at..at + 4]);
                                    // OpenVINO CPU divides the refined box by the input size again.
                                    self.decode(refined, var(p), &img_loc[at..at + 4])
                                }
                                None => self.decode(prior_box(p), var(p), &img_loc[at..at + 4]),
                            }
                        })
                        .collect()
                })
                .collect();
            let kept = self.detect(conf, &boxes, classes, live);
            for (k, ps) in kept.iter().enumerate() {
                let bx = &boxes[if self.share_location { 0 } else { k }];
                for &p in ps {
                    let Some(row) = out.get_mut(count * 7..count * 7 + 7) else {
                        return Err(OpError::new(
                            codes::INTERNAL,
                            format!("{name}: more detections than the {rows} output rows"),
                        ));
                    };
                    let b = if self.clip_after_nms {
                        bx[p].map(clip)
                    } else {
                        bx[p]
                    };
                    let label = if self.mxnet { k as f32 - 1.0 } else { k as f32 };
                    row.copy_from_slice(&[
                        image as f32,
                        label,
                        conf[p * classes + k],
                        b[0],
                        b[1],
                        b[2],
                        b[3],
                    ]);
                    count += 1;
                }
            }
        }
        if count < rows {
            out[count * 7] = -1.0;
        }
        Ok(vec![crate::layout::float_tensor(
            ty,
            vec![1, 1, rows, 7],
            out,
            name,
        )?])
    }
}

#[cfg(test)]
mod tests;
