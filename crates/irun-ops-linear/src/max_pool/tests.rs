//! MaxPool against a direct walk of every window: values, indices, NaN, padding and the
//! integer rows.

use super::*;
use crate::spatial::{AutoPad, Rounding};
use crate::testing::{eval_all, fact, infer1};
use irun_tensor::ElementType::*;

fn op(k: usize, s: usize, p: usize, rounding: Rounding, version: u32) -> MaxPool {
    MaxPool {
        version,
        spatial: Spatial {
            strides: vec![s, s],
            pads_begin: vec![p, p],
            pads_end: vec![p, p],
            dilations: vec![1, 1],
            auto_pad: AutoPad::Explicit,
            rounding,
        },
        kernel: vec![k, k],
        index_type: I64,
        axis: 0,
    }
}

/// MaxPool-8 over every kind of window: strides below, at and above the kernel,
/// dilation, uneven pads and pads as large as the kernel (windows with no inside tap),
/// each rounding.
fn window_kinds() -> Vec<MaxPool> {
    [
        (3, 2, 1, 1, 1, Rounding::Floor),
        (2, 1, 1, 0, 0, Rounding::Floor),
        (3, 3, 2, 2, 1, Rounding::Ceil),
        (4, 2, 1, 3, 0, Rounding::CeilTorch),
        (1, 1, 1, 0, 0, Rounding::Floor),
        (2, 2, 1, 0, 0, Rounding::Floor),
        (2, 2, 1, 2, 2, Rounding::Floor),
        (5, 2, 1, 2, 2, Rounding::Ceil),
        (1, 2, 1, 0, 0, Rounding::Ceil),
        // ResNet's pool without pads or with ceil rounding (the u8 one-pass form).
        (3, 2, 1, 0, 0, Rounding::Ceil),
        (3, 2, 1, 1, 0, Rounding::CeilTorch),
    ]
    .into_iter()
    .map(|(k, s, d, pb, pe, rounding)| {
        let mut p = op(k, s, 0, rounding, 8);
        p.spatial.dilations = vec![d, d];
        p.spatial.pads_begin = vec![pb, pb];
        p.spatial.pads_end = vec![pe, pe];
        p
    })
    .collect()
}

/// The index counts from dim `axis`: the flat position in the whole input for axis 0,
/// wrapped to the dims from `axis` on for the others.
#[test]
fn indices_count_from_the_axis_across_planes() {
    let x = Tensor::from_f32(vec![2, 2, 2, 2], (0..16).map(|v| v as f32).collect()).unwrap();
    for (axis, want) in [(0, [3, 7, 11, 15]), (1, [3, 7, 3, 7]), (2, [3, 3, 3, 3])] {
        let pool = MaxPool {
            axis,
            ..op(2, 2, 0, Rounding::Floor, 8)
        };
        let out = eval_all(&pool, vec![x.clone()]).unwrap();
        assert_eq!(out[0].values::<f32>().unwrap(), &[3., 7., 11., 15.]);
        assert_eq!(out[1].values::<i64>().unwrap(), &want, "axis {axis}");
    }
}

#[test]
fn values_indices_nan_and_padding() {
    let x = Tensor::from_f32(
        vec![1, 1, 3, 3],
        vec![1., f32::NAN, 3., 4., 5., 6., 7., 8., 9.],
    )
    .unwrap();
    let out = eval_all(&op(2, 2, 1, Rounding::Ceil, 8), vec![x.clone()]).unwrap();
    assert_eq!(out[0].shape(), &[1, 1, 3, 3]);
    // Windows start at -1, 1, 3 on each axis: the last ones lie wholly in padding (the
    // explicit pad cell and a cell ceil rounding adds) and give the lowest value, index 0.
    let lo = f32::MIN;
    assert_eq!(
        out[0].values::<f32>().unwrap(),
        &[1., 3., lo, 7., 9., lo, lo, lo, lo]
    );
    assert_eq!(
        out[1].values::<i64>().unwrap(),
        &[0, 2, 0, 6, 8, 0, 0, 0, 0]
    );
    let out = eval_all(&op(2, 2, 1, Rounding::CeilTorch, 14), vec![x]).unwrap();
    assert_eq!(out[0].shape(), &[1, 1, 2, 2]);
    let f = infer1(
        &op(3, 2, 1, Rounding::Floor, 1),
        &[fact(F32, "1,64,112,112")],
    )
    .unwrap();
    assert_eq!(f.shape.to_string(), "[1,64,56,56]");
}

/// The row kernel (gathered taps, branch-free merge) and the values-only walks (by phases
/// on AVX-512 or AVX2, MaxPool-1 and an unread MaxPool-8 take it) against a direct walk of each
/// window as the spec states it, on data with many ties, both zeros, -inf, NaN and
/// all-NaN windows, over strides, dilations, asymmetric padding and ceil rounding.
#[test]
fn row_kernel_matches_a_direct_window_walk() {
    let (planes, h, w) = (3usize, 9usize, 11usize);
    let mut seed = 7u32;
    let x: Vec<f32> = (0..planes * h * w)
        .map(|i| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            // Rows 0-1 of plane 2 are all NaN, so some windows see nothing else; -inf
            // (which the running maximum starts from) and both zeros, so that which of
            // equal values wins shows.
            if (i / w) % h < 2 && i / (h * w) == 2 || seed >> 28 == 0 {
                f32::NAN
            } else {
                [f32::NEG_INFINITY, -2.0, -1.0, -0.0, 0.0, 1.0, 2.0][(seed >> 24) as usize % 7]
            }
        })
        .collect();
    let input = Tensor::from_f32(vec![1, planes, h, w], x.clone()).unwrap();
    for p in window_kinds() {
        let (k, s, d) = (p.kernel[0], p.spatial.strides[0], p.spatial.dilations[0]);
        let (pb, pe) = (p.spatial.pads_begin[0], p.spatial.pads_end[0]);
        let out = eval_all(&p, vec![input.clone()]).unwrap();
        // MaxPool-1, which keeps no indices, finds the same values.
        let v1 = MaxPool {
            version: 1,
            ..p.clone()
        };
        let v1_out = eval_all(&v1, vec![input.clone()]).unwrap();
        let v1_values = v1_out[0].values::<f32>().unwrap();
        // So does MaxPool-8 whose indices nothing reads, with an empty placeholder.
        let unread = crate::testing::on_threads(2, || {
            p.eval_reading(vec![Arc::new(input.clone())], &[true, false])
        })
        .unwrap();
        assert_eq!(*unread[0], out[0]);
        assert_eq!(
            (unread[1].shape(), unread[1].element_type()),
            (&[0][..], I64)
        );
        let (oh, ow) = (out[0].shape()[2], out[0].shape()[3]);
        let (values, indices) = (
            out[0].values::<f32>().unwrap(),
            out[1].values::<i64>().unwrap(),
        );
        for o in 0..planes * oh * ow {
            let (pl, oy, ox) = (o / (oh * ow), o / ow % oh, o % ow);
            let mut best: Option<(f32, usize)> = None;
            for ky in 0..k {
                for kx in 0..k {
                    let iy = (oy * s + ky * d) as isize - pb as isize;
                    let ix = (ox * s + kx * d) as isize - pb as isize;
                    if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                        continue;
                    }
                    let at = (pl * h + iy as usize) * w + ix as usize;
                    let v = x[at];
                    if !v.is_nan() && best.is_none_or(|(b, _)| v > b) {
                        best = Some((v, at));
                    }
                }
            }
            let (v, at) = best.unwrap_or((f32::MIN, 0));
            let case = format!("k{k} s{s} d{d} pads {pb},{pe} output {o}");
            assert_eq!(values[o].to_bits(), v.to_bits(), "{case}");
            assert_eq!(v1_values[o].to_bits(), v.to_bits(), "{case}, values only");
            assert_eq!(indices[o], at as i64, "{case}");
        }
    }
}

/// The separable pass of integer maxima against the window walk (with indices, which
/// takes the other path) on u8 and i32, for every kind of window: strides, dilation,
/// pads as large as the kernel (windows with no inside tap), and each rounding.
#[test]
fn integer_rows_match_the_window_walk() {
    let (planes, h, w) = (3usize, 9usize, 12usize);
    let mut seed = 11u32;
    let bytes: Vec<u8> = (0..planes * h * w)
        .map(|_| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 24) as u8
        })
        .collect();
    let ints: Vec<i32> = bytes
        .iter()
        .map(|&b| i32::from(b) * 1000 - 128_000)
        .collect();
    let inputs = [
        Tensor::from_values(vec![1, planes, h, w], bytes).unwrap(),
        Tensor::from_values(vec![1, planes, h, w], ints).unwrap(),
    ];
    for p in window_kinds() {
        for input in &inputs {
            let walked = eval_all(&p, vec![input.clone()]).unwrap();
            let rows = p
                .eval_reading(vec![Arc::new(input.clone())], &[true, false])
                .unwrap();
            assert_eq!(*rows[0], walked[0], "{:?} {:?}", p.kernel, p.spatial);
        }
    }
}
