use super::*;
use irun_opkit::testing::prelude::*;
use irun_opkit::testing::{eval1, fact};

/// Caffe style, CORNER code, shared locations, normalized priors with variances.
fn ssd() -> DetectionOutput {
    DetectionOutput {
        num_classes: None,
        background: 0,
        top_k: -1,
        keep_top_k: -1,
        variance_in_target: false,
        center_size: false,
        share_location: true,
        nms_threshold: 0.5,
        confidence_threshold: 0.1,
        clip_before_nms: false,
        clip_after_nms: false,
        mxnet: false,
        normalized: true,
        input_height: 1.0,
        input_width: 1.0,
        objectness_score: 0.0,
    }
}

/// Three priors: 0 and 1 overlap (IoU 0.6), 2 stands apart; the variances halve the
/// offsets. Two classes after the background.
fn three_priors() -> (Tensor, Tensor) {
    #[rustfmt::skip]
    let priors = [
        0.0, 0.0, 0.5, 0.5,  0.0, 0.0, 0.5, 0.4,  0.6, 0.6, 0.9, 0.9,
        0.5, 0.5, 0.5, 0.5,  0.5, 0.5, 0.5, 0.5,  0.5, 0.5, 0.5, 0.5,
    ];
    let zero_loc = f32s(&[1, 12], &[0.0; 12]);
    (f32s(&[1, 2, 12], &priors), zero_loc)
}

fn rows(t: &Tensor) -> Vec<[f32; 7]> {
    t.values::<f32>()
        .unwrap()
        .chunks(7)
        .map(|r| r.try_into().unwrap())
        .collect()
}

#[test]
fn caffe_style_suppresses_per_class_and_ends_with_minus_one() {
    let (priors, loc) = three_priors();
    // Per prior: background, class 1, class 2.
    #[rustfmt::skip]
    let conf = f32s(&[1, 9], &[
        0.1, 0.9, 0.05,
        0.1, 0.8, 0.3,
        0.1, 0.2, 0.05,
    ]);
    let out = eval1(&ssd(), vec![loc, conf, priors]).unwrap();
    // R = N·C·P = 9 rows.
    assert_eq!(out.shape(), &[1, 1, 9, 7]);
    let r = rows(&out);
    // Class 1: prior 0 (0.9) suppresses prior 1 (IoU 0.8 > 0.5); prior 2 stays.
    assert_eq!(r[0], [0.0, 1.0, 0.9, 0.0, 0.0, 0.5, 0.5]);
    assert_eq!(r[1], [0.0, 1.0, 0.2, 0.6, 0.6, 0.9, 0.9]);
    // Class 2: only prior 1 clears the threshold.
    assert_eq!(r[2], [0.0, 2.0, 0.3, 0.0, 0.0, 0.5, 0.4]);
    assert_eq!(r[3][0], -1.0);
    assert!(r[3][1..]
        .iter()
        .chain(r[4..].iter().flatten())
        .all(|&v| v == 0.0));
}

#[test]
fn keep_top_k_keeps_the_best_over_all_classes_then_lists_them_by_class() {
    let (priors, loc) = three_priors();
    #[rustfmt::skip]
    let conf = f32s(&[1, 9], &[
        0.0, 0.9, 0.05,
        0.0, 0.15, 0.3,
        0.0, 0.2, 0.95,
    ]);
    let op = DetectionOutput {
        keep_top_k: 2,
        ..ssd()
    };
    let out = eval1(&op, vec![loc, conf, priors]).unwrap();
    assert_eq!(out.shape(), &[1, 1, 2, 7]);
    let r = rows(&out);
    // Of 0.9 (1, p0), 0.2 (1, p2), 0.3 (2, p1), 0.95 (2, p2): 0.95 and 0.9, class 1 first.
    assert_eq!(r[0][..3], [0.0, 1.0, 0.9]);
    assert_eq!(r[1][..3], [0.0, 2.0, 0.95]);
}

#[test]
fn center_size_decoding_moves_the_centre_and_scales_the_size() {
    let op = DetectionOutput {
        center_size: true,
        ..ssd()
    };
    let var = [0.1, 0.1, 0.2, 0.2];
    // A 0.4 x 0.2 prior centred at (0.5, 0.5); offsets move it by 0.1 x size and
    // scale it by e^(0.2·ln 2) and e^0.
    let b = op.decode(
        [0.3, 0.4, 0.7, 0.6],
        &var,
        &[1.0, -1.0, 5.0 * 2f32.ln(), 0.0],
    );
    let want = [0.54 - 0.4, 0.48 - 0.1, 0.54 + 0.4, 0.48 + 0.1];
    for (x, y) in b.iter().zip(want) {
        assert!((x - y).abs() < 1e-6, "{b:?} vs {want:?}");
    }
}

#[test]
fn mxnet_style_takes_each_priors_best_class_and_lowers_the_label() {
    let (priors, loc) = three_priors();
    #[rustfmt::skip]
    let conf = f32s(&[1, 9], &[
        0.0, 0.9, 0.5,
        0.0, 0.1, 0.8,
        0.0, 0.2, 0.05,
    ]);
    let op = DetectionOutput {
        mxnet: true,
        ..ssd()
    };
    let r = rows(&eval1(&op, vec![loc, conf, priors]).unwrap());
    // Prior 1's best class is 2, so it is not suppressed by prior 0 (class 1).
    assert_eq!(r[0][..3], [0.0, 0.0, 0.9]);
    assert_eq!(r[1][..3], [0.0, 0.0, 0.2]);
    assert_eq!(r[2][..3], [0.0, 1.0, 0.8]);
    assert_eq!(r[3][0], -1.0);
}

#[test]
fn unnormalized_priors_end_at_image_id_minus_one() {
    let op = DetectionOutput {
        normalized: false,
        input_width: 64.0,
        input_height: 32.0,
        variance_in_target: true,
        ..ssd()
    };
    // Two priors of 5 values; the second's id is -1, so only the first is a candidate.
    let priors = f32s(
        &[1, 1, 10],
        &[0.0, 8.0, 4.0, 40.0, 16.0, -1.0, 0.0, 0.0, 1.0, 1.0],
    );
    let conf = f32s(&[1, 4], &[0.0, 0.9, 0.0, 0.95]);
    let loc = f32s(&[1, 8], &[0.0, 0.0, 0.125, 0.25, 0.0, 0.0, 0.0, 0.0]);
    let r = rows(&eval1(&op, vec![loc, conf, priors]).unwrap());
    // The prior over the input size: (0.125, 0.125, 0.625, 0.5), plus the offsets.
    assert_eq!(r[0], [0.0, 1.0, 0.9, 0.125, 0.125, 0.75, 0.75]);
    assert_eq!(r[1][0], -1.0);
}

#[test]
fn arm_objectness_below_the_threshold_makes_a_prior_background() {
    let (priors, loc) = three_priors();
    let conf = f32s(&[1, 9], &[0.0, 0.9, 0.0, 0.0, 0.0, 0.8, 0.0, 0.7, 0.0]);
    let arm_conf = f32s(&[1, 6], &[0.0, 0.9, 0.0, 0.01, 0.0, 0.9]);
    let op = DetectionOutput {
        objectness_score: 0.5,
        ..ssd()
    };
    let arm_loc = loc.clone();
    let r = rows(&eval1(&op, vec![loc, conf, priors, arm_conf, arm_loc]).unwrap());
    // Prior 1 (objectness 0.01) drops out of class 2.
    assert_eq!(r[0][..3], [0.0, 1.0, 0.9]);
    assert_eq!(r[1][..3], [0.0, 1.0, 0.7]);
    assert_eq!(r[2][0], -1.0);
}

#[test]
fn output_rows_follow_keep_top_k_then_top_k_then_every_box() {
    let infer = |op: &DetectionOutput| {
        op.infer(&[fact(F32, "2,48"), fact(F32, "2,36"), fact(F32, "1,2,48")])
            .map(|f| f[0].shape.to_string())
    };
    let keep = DetectionOutput {
        keep_top_k: 5,
        ..ssd()
    };
    assert_eq!(infer(&keep).unwrap(), "[1,1,10,7]");
    let top = DetectionOutput { top_k: 4, ..ssd() };
    assert_eq!(infer(&top).unwrap(), "[1,1,24,7]");
    assert_eq!(infer(&ssd()).unwrap(), "[1,1,72,7]");
}

#[test]
fn mismatched_inputs_are_refused_with_the_input_named() {
    let try_infer = |op: &DetectionOutput, shapes: [&str; 3]| {
        op.infer(&shapes.map(|s| fact(F32, s))).unwrap_err()
    };
    let e = try_infer(&ssd(), ["1,48", "1,36", "1,2,50"]);
    assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(2)));
    assert!(e.message.contains("multiple of 4"), "{}", e.message);
    let e = try_infer(&ssd(), ["1,44", "1,36", "1,2,48"]);
    assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(0)));
    let e = try_infer(&ssd(), ["1,48", "2,36", "1,2,48"]);
    assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(1)));
    let v1 = DetectionOutput {
        num_classes: Some(4),
        ..ssd()
    };
    let e = try_infer(&v1, ["1,48", "1,36", "1,2,48"]);
    assert!(e.message.contains("12 priors x 4 classes"), "{}", e.message);
    let e = try_infer(&ssd(), ["1,48", "1,36", "1,1,48"]);
    assert!(e.message.contains("2 row(s)"), "{}", e.message);
}
