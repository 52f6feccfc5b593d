use irun_opkit::epilogue::{Activation, Epilogue};
use irun_tensor::Tensor;

use super::*;
use crate::spatial::{AutoPad, Rounding};

fn spatial(stride: usize, pad: [usize; 2], dilation: usize, auto_pad: AutoPad) -> Spatial {
    Spatial {
        strides: vec![stride; 2],
        pads_begin: vec![pad[0]; 2],
        pads_end: vec![pad[1]; 2],
        dilations: vec![dilation; 2],
        auto_pad,
        rounding: Rounding::Floor,
    }
}

/// A deterministic spread of values: `i`'s pseudo-random value in `[-1, 1)`.
fn noise(i: usize, seed: usize) -> f32 {
    let h = (i.wrapping_mul(2654435761) ^ seed.wrapping_mul(40503)).wrapping_mul(2246822519);
    ((h >> 8) % 20001) as f32 / 10000.0 - 1.0
}

/// The definition: FakeQuantize-1 on every input (its formula, in f64 from the level the
/// op picks), the filters `code * scale`, zero padding, each output the f64 sum of its window
/// (NaN if it reads one), then the bias and ReLU.
#[allow(clippy::too_many_arguments)]
fn reference(
    x: &[f32],
    [n, ci, h, w]: [usize; 4],
    codes: &[i8],
    [co, kh, kw]: [usize; 3],
    scales: &[f32],
    sp: &Spatial,
    q: &ActivationLevels,
    bias: Option<&[f32]>,
) -> (Vec<f64>, Vec<f64>, [usize; 2]) {
    let (pt, _, oh) = sp.dim(0, h, kh).unwrap();
    let (pl, _, ow) = sp.dim(1, w, kw).unwrap();
    let l = f64::from(q.levels - 1);
    let value = |v: f32| {
        let k = f64::from(q.level(v));
        k / l * (f64::from(q.output_high) - f64::from(q.output_low)) + f64::from(q.output_low)
    };
    let mut out = vec![0f64; n * co * oh * ow];
    let mut magnitude = vec![0f64; n * co * oh * ow];
    for b in 0..n {
        for o in 0..co {
            for y in 0..oh {
                for xo in 0..ow {
                    let (mut s, mut m) = (0f64, 0f64);
                    for c in 0..ci {
                        for i in 0..kh {
                            for j in 0..kw {
                                let yy = (y * sp.strides[0] + i * sp.dilations[0]) as isize
                                    - pt as isize;
                                let xx = (xo * sp.strides[1] + j * sp.dilations[1]) as isize
                                    - pl as isize;
                                if yy < 0 || xx < 0 || yy >= h as isize || xx >= w as isize {
                                    continue;
                                }
                                let v =
                                    value(x[((b * ci + c) * h + yy as usize) * w + xx as usize]);
                                let wt = f64::from(codes[((o * ci + c) * kh + i) * kw + j])
                                    * f64::from(scales[o % scales.len()]);
                                s += v * wt;
                                m += (v * wt).abs();
                            }
                        }
                    }
                    let at = ((b * co + o) * oh + y) * ow + xo;
                    let s = s + bias.map_or(0.0, |bs| f64::from(bs[o]));
                    out[at] = if s.is_nan() || s > 0.0 || bias.is_none() {
                        s
                    } else {
                        0.0
                    };
                    magnitude[at] = m;
                }
            }
        }
    }
    (out, magnitude, [oh, ow])
}

struct Case {
    n: usize,
    ci: usize,
    co: usize,
    hw: [usize; 2],
    k: [usize; 2],
    sp: Spatial,
}

fn check(case: &Case, q: ActivationLevels, nan_at: Option<usize>, with_epilogue: bool) {
    let Case {
        n,
        ci,
        co,
        hw,
        k,
        ref sp,
    } = *case;
    let mut x: Vec<f32> = (0..n * ci * hw[0] * hw[1])
        .map(|i| noise(i, ci * 31 + co) * 1.3)
        .collect();
    if let Some(i) = nan_at {
        x[i] = f32::NAN;
    }
    let codes: Vec<i8> = (0..co * ci * k[0] * k[1])
        .map(|i| (noise(i, 7 + co) * 127.5).clamp(-128.0, 127.0) as i8)
        .collect();
    let scales: Vec<f32> = (0..co).map(|o| 0.01 + 0.002 * o as f32).collect();
    let bias: Vec<f32> = (0..co).map(|o| noise(o, 99) * 0.5).collect();
    let mut conv = Int8Conv::new(sp, &codes, &[co, ci, k[0], k[1]], &scales, q)
        .expect("an exact integer form");
    if with_epilogue {
        let e = Epilogue {
            bias: Some(bias.clone()),
            bias_axis_from_end: 2,
            activation: Activation::Relu,
        };
        assert!(conv.set_epilogue(&e));
    }
    let input = Tensor::from_f32(vec![n, ci, hw[0], hw[1]], x.clone()).unwrap();
    let scalar = conv.run(&input, None, false).unwrap();
    let (want, magnitude, [oh, ow]) = reference(
        &x,
        [n, ci, hw[0], hw[1]],
        &codes,
        [co, k[0], k[1]],
        &scales,
        sp,
        &q,
        with_epilogue.then_some(&bias[..]),
    );
    assert_eq!(scalar.shape(), &[n, co, oh, ow]);
    let got = scalar.values::<f32>().unwrap();
    for (i, ((&g, &e), &m)) in got.iter().zip(&want).zip(&magnitude).enumerate() {
        let close = (f64::from(g) - e).abs() <= 1e-6 * (m + e.abs()) + 1e-30;
        assert!(
            close || (g.is_nan() && e.is_nan()),
            "output {i} of {}: {g} against {e}",
            got.len()
        );
    }
    if Int8Conv::fast_here() {
        let fast = conv.run(&input, None, true).unwrap();
        assert_eq!(
            bits(&fast),
            bits(&scalar),
            "the vector kernel's sums differ"
        );
    }
}

/// Unsigned levels (after a ReLU: level 0 is 0.0) and signed ones (level 128 is 0.0).
fn both_signs() -> [ActivationLevels; 2] {
    [
        ActivationLevels {
            input_low: 0.0,
            input_high: 1.1,
            output_low: 0.0,
            output_high: 1.1,
            levels: 256,
        },
        ActivationLevels {
            input_low: -0.9,
            input_high: 0.9 * 127.0 / 128.0,
            output_low: -0.9,
            output_high: 0.9 * 127.0 / 128.0,
            levels: 256,
        },
    ]
}

/// Every geometry the layout distinguishes: channel counts that fill no group or block, strides
/// 1 and 2 (one phase, four phases, one phase of four read), a 7x7 stem, dilation, `same_upper`,
/// two images; each against the f64 definition and, where the CPU has VNNI, the vector
/// kernel bit for bit against the scalar one.
#[test]
fn every_geometry_gives_the_quantized_convolution() {
    let cases = [
        Case {
            n: 1,
            ci: 3,
            co: 16,
            hw: [11, 13],
            k: [3, 3],
            sp: spatial(1, [1, 1], 1, AutoPad::Explicit),
        },
        Case {
            n: 1,
            ci: 5,
            co: 9,
            hw: [9, 9],
            k: [3, 3],
            sp: spatial(2, [1, 1], 1, AutoPad::Explicit),
        },
        Case {
            n: 1,
            ci: 8,
            co: 8,
            hw: [7, 7],
            k: [1, 1],
            sp: spatial(2, [0, 0], 1, AutoPad::Explicit),
        },
        Case {
            n: 1,
            ci: 4,
            co: 24,
            hw: [8, 10],
            k: [7, 7],
            sp: spatial(2, [3, 3], 1, AutoPad::Explicit),
        },
        Case {
            n: 1,
            ci: 6,
            co: 10,
            hw: [10, 9],
            k: [3, 3],
            sp: spatial(1, [2, 2], 2, AutoPad::Explicit),
        },
        Case {
            n: 2,
            ci: 5,
            co: 7,
            hw: [9, 8],
            k: [5, 5],
            sp: spatial(2, [0, 0], 1, AutoPad::SameUpper),
        },
        Case {
            n: 1,
            ci: 20,
            co: 17,
            hw: [30, 4],
            k: [1, 3],
            sp: spatial(1, [0, 1], 1, AutoPad::Explicit),
        },
        // Small planes with whole blocks of 32 channels: the channel-lane blocks.
        Case {
            n: 1,
            ci: 20,
            co: 32,
            hw: [7, 7],
            k: [3, 3],
            sp: spatial(1, [1, 1], 1, AutoPad::Explicit),
        },
        Case {
            n: 2,
            ci: 9,
            co: 64,
            hw: [27, 27],
            k: [3, 3],
            sp: spatial(2, [1, 1], 1, AutoPad::Explicit),
        },
        Case {
            n: 1,
            ci: 16,
            co: 32,
            hw: [13, 13],
            k: [1, 1],
            sp: spatial(2, [0, 0], 1, AutoPad::Explicit),
        },
    ];
    for case in &cases {
        for q in both_signs() {
            check(case, q, None, false);
            check(case, q, None, true);
        }
    }
}

/// Which blocking each plane takes: the channel lanes where they compute at least 5% fewer
/// positions (so the cases above run both kernels), the position blocks elsewhere.
#[test]
fn small_planes_of_whole_channel_blocks_take_the_channel_lanes() {
    let geometry = |hw: usize, k: usize, s: usize, p: usize| {
        layout::Geometry::new(
            &spatial(s, [p, p], 1, AutoPad::Explicit),
            64,
            [hw, hw],
            [k, k],
        )
        .unwrap()
    };
    let choice = |g: &layout::Geometry, co: usize| channel_lanes::positions_per_block(g, co);
    assert_eq!(choice(&geometry(7, 3, 1, 1), 512), Some(10));
    assert_eq!(choice(&geometry(7, 3, 1, 1), 48), None);
    assert!(choice(&geometry(14, 3, 1, 1), 256).is_some());
    assert!(choice(&geometry(27, 3, 2, 1), 64).is_some());
    // 3136 outputs of 3264 computed positions: 4% fewer, not enough.
    assert_eq!(choice(&geometry(56, 3, 1, 1), 64), None);
    // 784 of 864: 9% fewer.
    assert_eq!(choice(&geometry(28, 3, 1, 1), 128), Some(8));
}

/// A NaN input makes exactly the outputs whose windows read it NaN (in every channel), the
/// others stay as the definition gives them.
#[test]
fn a_nan_input_spreads_to_the_windows_that_read_it() {
    let case = Case {
        n: 1,
        ci: 5,
        co: 9,
        hw: [9, 9],
        k: [3, 3],
        sp: spatial(2, [1, 1], 1, AutoPad::Explicit),
    };
    for q in both_signs() {
        check(&case, q, Some(2 * 81 + 4 * 9 + 4), true);
        check(&case, q, Some(0), false);
    }
}

/// Ranges where no level is 0.0 have no exact integer form (the padding would need a
/// level between two), nor do reversed ones or windows whose sums could overflow.
#[test]
fn only_exact_integer_forms_are_built() {
    let sp = spatial(1, [1, 1], 1, AutoPad::Explicit);
    let off_grid = ActivationLevels {
        input_low: -0.3,
        input_high: 1.0,
        output_low: -0.3,
        output_high: 1.0,
        levels: 256,
    };
    let codes = vec![1i8; 4 * 3 * 3 * 3];
    assert!(Int8Conv::new(&sp, &codes, &[4, 3, 3, 3], &[1.0], off_grid).is_none());
    let reversed = ActivationLevels {
        input_low: 1.0,
        input_high: 0.0,
        ..both_signs()[0]
    };
    assert!(Int8Conv::new(&sp, &codes, &[4, 3, 3, 3], &[1.0], reversed).is_none());
    let huge = vec![1i8; 8000 * 9];
    assert!(Int8Conv::new(&sp, &huge, &[1, 8000, 3, 3], &[1.0], both_signs()[0]).is_none());
    assert!(Int8Conv::new(&sp, &codes, &[4, 3, 3, 3], &[1.0], both_signs()[1]).is_some());
}

/// The words hold, byte by byte, the level FakeQuantize-1's formula gives each input, on the
/// vector path and the scalar one alike: the range's ends and their neighbours, exact ties
/// (half a level: to even), infinities, NaN (level 0, reported), a row length with a tail.
#[test]
fn words_hold_the_fake_quantize_levels() {
    let q = ActivationLevels {
        levels: 256,
        ..both_signs()[1]
    };
    let step = (q.input_high - q.input_low) / 255.0;
    let mut specials = vec![
        q.input_low,
        q.input_high,
        f32::from_bits(q.input_low.to_bits() - 1),
        f32::from_bits(q.input_low.to_bits() + 1),
        f32::from_bits(q.input_high.to_bits() - 1),
        f32::from_bits(q.input_high.to_bits() + 1),
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
    ];
    specials.extend((0..60).map(|k| q.input_low + (k as f32 + 0.5) * step * 3.0));
    for len in [specials.len(), 16, 5] {
        let rows: Vec<Vec<f32>> = (0..3)
            .map(|c| {
                specials
                    .iter()
                    .cycle()
                    .skip(c * 7)
                    .take(len)
                    .copied()
                    .collect()
            })
            .collect();
        for with_nan in [false, true] {
            let mut rows = rows.clone();
            if with_nan {
                rows[1][len - 1] = f32::NAN;
            }
            let r = [&rows[0][..], &rows[1][..], &rows[2][..]];
            let (mut fast, mut slow) = (vec![0u32; len], vec![0u32; len]);
            let nan_fast = layout::pack_words(&q, r, 200, &mut fast, true);
            let nan_slow = layout::pack_words(&q, r, 200, &mut slow, false);
            assert_eq!((nan_fast, nan_slow), (with_nan, with_nan));
            assert_eq!(fast, slow, "length {len}");
            for (x, word) in slow.iter().enumerate() {
                let bytes = word.to_le_bytes();
                for c in 0..3 {
                    let v = rows[c][x];
                    let want = if v.is_nan() { 0 } else { q.level(v) as u8 };
                    assert_eq!(bytes[c], want, "row {c} value {v}");
                }
                assert_eq!(bytes[3], 200);
            }
        }
    }
}

/// A FakeQuantize taken over as the epilogue's last step gives, bit for bit, the op's
/// formula applied to the output the kernel gives without it: one range for all channels,
/// or one per channel, on both blockings; another count of ranges is refused.
#[test]
fn a_fake_quantize_after_the_epilogue_is_the_ops_formula() {
    use irun_opkit::quantize::{fake_quantize_f32, FakeQuantizeRange};
    let sp = spatial(1, [1, 1], 1, AutoPad::Explicit);
    let range = |c: usize| FakeQuantizeRange {
        input_low: -0.4 + 0.01 * c as f32,
        input_high: 0.35 - 0.02 * c as f32,
        output_low: -0.5,
        output_high: 0.45 + 0.01 * c as f32,
        last_level: 254.0,
    };
    // 11 channels on the position blocks, 32 on a 7x7 plane on the channel lanes.
    for (ci, co, hw) in [(6, 11, [9, 7]), (8, 32, [7, 7])] {
        let x: Vec<f32> = (0..ci * hw[0] * hw[1]).map(|i| noise(i, 5)).collect();
        let codes: Vec<i8> = (0..co * ci * 9)
            .map(|i| (noise(i, 3) * 127.0) as i8)
            .collect();
        let input = Tensor::from_f32(vec![1, ci, hw[0], hw[1]], x).unwrap();
        let plain = Int8Conv::new(&sp, &codes, &[co, ci, 3, 3], &[0.02], both_signs()[1]).unwrap();
        let plain = plain.run(&input, None, true).unwrap();
        let plane = hw[0] * hw[1];
        for ranges in [vec![range(0)], (0..co).map(range).collect::<Vec<_>>()] {
            let mut conv =
                Int8Conv::new(&sp, &codes, &[co, ci, 3, 3], &[0.02], both_signs()[1]).unwrap();
            assert!(!conv.set_output_quantize(&[range(0), range(1)]));
            assert!(conv.set_output_quantize(&ranges));
            let quantized = conv.run(&input, None, true).unwrap();
            let want: Vec<u32> = plain
                .values::<f32>()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let q = ranges[(i / plane) % ranges.len()];
                    let (il, ih, ol, oh) = (q.input_low, q.input_high, q.output_low, q.output_high);
                    fake_quantize_f32(v, il, ih, ol, oh, 254.0).to_bits()
                })
                .collect();
            let got: Vec<u32> = quantized
                .values::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(got, want, "{co} channels, {} ranges", ranges.len());
            assert!(want.iter().collect::<std::collections::HashSet<_>>().len() > 20);
        }
    }
}

/// Levels between int8 convolutions: a convolution told to write the levels of its last
/// FakeQuantize writes, on both blockings and both kernels, the level of each f32 output
/// it would write otherwise; one that reads them (its input, or its residual addend) gives
/// bit for bit what it gives on those f32 values; an output with a NaN is f32 again.
#[test]
fn levels_written_and_read_are_the_f32_values_levels() {
    use irun_opkit::epilogue::Residual;
    use irun_opkit::quantize::FakeQuantizeRange;
    let sp = spatial(1, [1, 1], 1, AutoPad::Explicit);
    let q = FakeQuantizeRange {
        input_low: -0.3,
        input_high: 0.4,
        output_low: -0.25,
        output_high: 0.5,
        last_level: 255.0,
    };
    let on_grid = on_grid(&q);
    for (ci, co, hw) in [(6, 12, [9, 7]), (8, 32, [7, 7])] {
        let shape = [co, ci, 3, 3];
        // Two images, so that a NaN in the second comes after the first's levels.
        let mut x: Vec<f32> = (0..2 * ci * hw[0] * hw[1]).map(|i| noise(i, 11)).collect();
        let codes: Vec<i8> = (0..co * ci * 9)
            .map(|i| (noise(i, 13) * 127.0) as i8)
            .collect();
        let next_codes: Vec<i8> = (0..co * co * 9)
            .map(|i| (noise(i, 17) * 127.0) as i8)
            .collect();
        let bias: Vec<f32> = (0..co).map(|o| noise(o, 19) * 0.1).collect();
        let conv = |levels_out: bool| {
            let mut c = Int8Conv::new(&sp, &codes, &shape, &[0.002], both_signs()[1]).unwrap();
            let e = Epilogue {
                bias: Some(bias.clone()),
                bias_axis_from_end: 2,
                activation: Activation::Relu,
            };
            assert!(c.set_epilogue(&e));
            assert!(c.set_output_quantize(&[q]));
            if levels_out {
                let other = FakeQuantizeRange {
                    output_high: 0.6,
                    ..q
                };
                assert!(!c.set_levels_output(&other), "not its FakeQuantize");
                assert!(c.set_levels_output(&q));
            }
            c
        };
        let (values, levels) = (conv(false), conv(true));
        for vectorised in [true, false] {
            let input = Tensor::from_f32(vec![2, ci, hw[0], hw[1]], x.clone()).unwrap();
            let f32_out = values.run(&input, None, vectorised).unwrap();
            let level_out = levels.run(&input, None, vectorised).unwrap();
            let got = level_out.values::<u8>().expect("levels");
            let want: Vec<u8> = f32_out
                .values::<f32>()
                .unwrap()
                .iter()
                .map(|&v| on_grid.level(v) as u8)
                .collect();
            assert_eq!(got, &want[..], "{co} channels, vectorised {vectorised}");
            assert!(want.iter().collect::<std::collections::HashSet<_>>().len() > 20);

            // The next convolution reads them as it reads the f32 values.
            let mut next =
                Int8Conv::new(&sp, &next_codes, &[co, co, 3, 3], &[0.003], on_grid).unwrap();
            assert!(next.set_levels_input(0, &q));
            let other = FakeQuantizeRange {
                output_low: -0.2,
                ..q
            };
            assert!(!next.set_levels_input(0, &other), "other levels");
            let a = next.run(&f32_out, None, vectorised).unwrap();
            let b = next.run(&level_out, None, vectorised).unwrap();
            assert_eq!(bits(&a), bits(&b));

            // And as a residual addend: each level its value.
            let mut res =
                Int8Conv::new(&sp, &next_codes, &[co, co, 3, 3], &[0.003], on_grid).unwrap();
            let residual = Residual {
                relu: true,
                quantize: vec![q],
            };
            assert!(res.set_residual(&residual));
            assert!(res.set_levels_input(1, &q));
            let table = q.level_values();
            let addend_values: Vec<f32> = got.iter().map(|&k| table[usize::from(k)]).collect();
            let addend_values =
                Tensor::from_f32(level_out.shape().to_vec(), addend_values).unwrap();
            let a = res.run(&f32_out, Some(&addend_values), vectorised).unwrap();
            let b = res.run(&f32_out, Some(&level_out), vectorised).unwrap();
            assert_eq!(bits(&a), bits(&b));
        }
        // A NaN input has no level: the output is the f32 one, NaN where it reads it.
        x[ci * hw[0] * hw[1] + 5] = f32::NAN;
        let input = Tensor::from_f32(vec![2, ci, hw[0], hw[1]], x.clone()).unwrap();
        let f32_out = values.run(&input, None, true).unwrap();
        let fallback = levels.run(&input, None, true).unwrap();
        assert_eq!(bits(&f32_out), bits(&fallback));
        assert!(f32_out.values::<f32>().unwrap().iter().any(|v| v.is_nan()));
    }
}

/// The levels of 256 levels read on `q`'s output range: each of its output values is its
/// own level.
fn on_grid(q: &irun_opkit::quantize::FakeQuantizeRange) -> ActivationLevels {
    ActivationLevels {
        input_low: q.output_low,
        input_high: q.output_high,
        output_low: q.output_low,
        output_high: q.output_high,
        levels: 256,
    }
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.values::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// A levels output is, on both blockings and with either kernel, the level of each output
/// the same convolution writes as f32: for every activation, with and without a residual
/// (its addend as values or as levels, a FakeQuantize before it of one range or one per
/// channel, a ReLU after it or not), with the last FakeQuantize taken over by the kernel
/// or left to the readers, for output ranges from below 0 and from 0 (where a ReLU before
/// the levels changes none and the vector pass leaves it out), and for two images of a
/// channel count that is not a whole number of blocks.
#[test]
fn a_levels_output_is_the_level_of_each_f32_output() {
    use irun_opkit::epilogue::Residual;
    use irun_opkit::quantize::FakeQuantizeRange;
    let sp = spatial(1, [1, 1], 1, AutoPad::Explicit);
    let range = |low: f32, c: usize| FakeQuantizeRange {
        input_low: low,
        input_high: 0.4 + 0.01 * c as f32,
        output_low: low,
        output_high: 0.4 + 0.01 * c as f32,
        last_level: 255.0,
    };
    for (n, ci, co, hw) in [(2, 6, 12, [9, 7]), (1, 8, 32, [7, 7]), (2, 5, 32, [5, 6])] {
        let plane = hw[0] * hw[1];
        let x: Vec<f32> = (0..n * ci * plane).map(|i| noise(i, 23)).collect();
        let input = Tensor::from_f32(vec![n, ci, hw[0], hw[1]], x).unwrap();
        let codes: Vec<i8> = (0..co * ci * 9)
            .map(|i| (noise(i, 29) * 127.0) as i8)
            .collect();
        let bias: Vec<f32> = (0..co).map(|o| noise(o, 31) * 0.1).collect();
        let addend: Vec<f32> = (0..n * co * plane).map(|i| noise(i, 37) * 0.3).collect();
        let out_shape = vec![n, co, hw[0], hw[1]];
        for low in [-0.3, 0.0] {
            let q = range(low, 0);
            let on_grid = on_grid(&q);
            // The addend as levels of `q`, and as the values those levels stand for.
            let addend_levels: Vec<u8> = addend.iter().map(|&v| q.level(v) as u8).collect();
            let table = q.level_values();
            let addend_values: Vec<f32> = addend_levels
                .iter()
                .map(|&k| table[usize::from(k)])
                .collect();
            let addend_levels = Tensor::from_values(out_shape.clone(), addend_levels).unwrap();
            let addend_values = Tensor::from_f32(out_shape.clone(), addend_values).unwrap();
            let residuals = [
                None,
                Some((true, Vec::new())),
                Some((false, vec![range(-0.2, 0)])),
                Some((true, (0..co).map(|c| range(-0.25, c)).collect::<Vec<_>>())),
            ];
            let axes = [Activation::None, Activation::Relu, Activation::HSwish]
                .into_iter()
                .flat_map(|a| {
                    residuals
                        .iter()
                        .flat_map(move |r| [(a, r, true), (a, r, false)])
                });
            for (activation, residual, taken) in axes {
                let conv = |levels_out: bool| {
                    let mut c =
                        Int8Conv::new(&sp, &codes, &[co, ci, 3, 3], &[0.003], both_signs()[1])
                            .unwrap();
                    let e = Epilogue {
                        bias: Some(bias.clone()),
                        bias_axis_from_end: 2,
                        activation,
                    };
                    assert!(c.set_epilogue(&e));
                    // The last FakeQuantize, if the kernel takes it over.
                    let last = if taken { vec![q] } else { Vec::new() };
                    match residual {
                        None if taken => assert!(c.set_output_quantize(&last)),
                        None => {}
                        Some((relu, before)) => {
                            if !before.is_empty() {
                                assert!(c.set_output_quantize(before));
                            }
                            let r = Residual {
                                relu: *relu,
                                quantize: last,
                            };
                            assert!(c.set_residual(&r));
                            assert!(c.set_levels_input(1, &q));
                        }
                    }
                    if levels_out {
                        assert!(c.set_levels_output(&q));
                    }
                    c
                };
                let (values, levels) = (conv(false), conv(true));
                let addends: &[Option<&Tensor>] = match residual {
                    None => &[None],
                    Some(_) => &[Some(&addend_values), Some(&addend_levels)],
                };
                for &other in addends {
                    let f32_out = values.run(&input, other, true).unwrap();
                    let want: Vec<u8> = f32_out
                        .values::<f32>()
                        .unwrap()
                        .iter()
                        .map(|&v| match taken {
                            // Each value is its level's (the FakeQuantize's output).
                            true => on_grid.level(v) as u8,
                            false => q.level(v) as u8,
                        })
                        .collect();
                    for vectorised in [true, false] {
                        let got = levels.run(&input, other, vectorised).unwrap();
                        // The residual as (its ReLU, ranges before it).
                        let r = residual.as_ref().map(|(relu, before)| (relu, before.len()));
                        let case = format!(
                            "{co} channels, low {low}, {activation:?}, residual {r:?}, \
                             taken {taken}, vectorised {vectorised}"
                        );
                        assert_eq!(got.values::<u8>().expect("levels"), &want[..], "{case}");
                    }
                    let distinct = want.iter().collect::<std::collections::HashSet<_>>();
                    assert!(distinct.len() > 10, "{distinct:?}");
                }
            }
        }
    }
}

/// The reciprocal with one correction gives the division's quotient for every level count
/// NNCF writes (and every other up to 256), checked element by element; counts that are
/// not whole numbers of levels are refused.
#[test]
fn level_quotients_by_the_reciprocal_are_the_divisions() {
    for last in 1..=255u32 {
        assert!(finish::exact_by_reciprocal(last as f32), "{last}");
    }
    for last in [0.0, 0.5, 254.5, 256.0, f32::NAN, f32::INFINITY] {
        assert!(!finish::exact_by_reciprocal(last), "{last}");
    }
}

/// The vector levels are the op's f32 levels at and around every boundary between two
/// levels (eight floats each side of it), for ranges of awkward widths (tiny, huge,
/// subnormal) and few and many levels.
#[test]
fn vector_levels_are_the_ops_at_every_boundary() {
    if !avx512::available() {
        return;
    }
    let ranges = [
        (-1.3f32, 2.7f32, 255.0f32),
        (0.0, 6.0, 255.0),
        (-0.123_456_7, 0.987_654_3, 255.0),
        (0.0, 2.0, 255.0),
        (-5.0e-3, 3.0e-3, 15.0),
        (1.0e-3, 1.0e-3 + 3.0e-5, 254.0),
        (-1.0e30, 3.0e30, 255.0),
        (-3.0, 1.0e-38, 1.0),
        (1.0, 1.0 + 1.0e-6, 255.0),
        (0.0, 1.0e-39, 255.0),
    ];
    for (low, high, last) in ranges {
        let q = FakeQuantizeRange {
            input_low: low,
            input_high: high,
            output_low: 0.0,
            output_high: 1.0,
            last_level: last,
        };
        let mut x = vec![
            low,
            high,
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            0.0,
            -0.0,
        ];
        for k in 1..=last as u32 {
            // The least input whose level is at least `k`, by bisection over the floats.
            let (mut below, mut above) = (low, high.next_up());
            while below.next_up() < above {
                let mid = below + (above - below) / 2.0;
                let mid = if mid <= below {
                    below.next_up()
                } else {
                    mid.min(above.next_down())
                };
                if q.level(mid) >= k as f32 {
                    above = mid;
                } else {
                    below = mid;
                }
            }
            let mut v = above;
            for _ in 0..8 {
                v = v.next_down();
            }
            for _ in 0..17 {
                x.push(v);
                v = v.next_up();
            }
        }
        x.extend((0..4096).map(|i| low + (high - low) * (noise(i, 9) * 0.6 + 0.5)));
        let mut got = [0i32; 16];
        // SAFETY: `available()` says AVX-512 F is there.
        unsafe {
            use std::arch::x86_64::*;
            let levels = avx512::LevelRange::new(low, high, last);
            for chunk in x.chunks(16) {
                let mut lanes = [0f32; 16];
                lanes[..chunk.len()].copy_from_slice(chunk);
                let (k, _) = levels.levels(_mm512_loadu_ps(lanes.as_ptr()));
                _mm512_storeu_si512(got.as_mut_ptr().cast(), k);
                for (&v, &g) in chunk.iter().zip(&got) {
                    let want = if v.is_nan() { 0.0 } else { q.level(v) };
                    assert_eq!(
                        g as f32, want,
                        "{v:e} in {low:e}..{high:e} of {last} levels"
                    );
                }
            }
        }
    }
}

/// The stride-2 split of a row's words by pairs picks what `step_by` picks, for even and odd
/// rows and destinations shorter or longer than the picks; other strides too.
#[test]
fn every_nth_word_is_step_by() {
    for len in 0..19 {
        let src: Vec<u32> = (0..len).map(|i| 0x0101_0101 * i + 0x8000_0007).collect();
        for n in 1..=3 {
            for room in [0, len / 3, len.div_ceil(n as u32), len + 2] {
                let mut got = vec![7u32; room as usize];
                layout::every_nth_word(&src, n, &mut got);
                let mut want = vec![7u32; room as usize];
                for (d, &w) in want.iter_mut().zip(src.iter().step_by(n)) {
                    *d = w;
                }
                assert_eq!(got, want, "len {len}, n {n}, room {room}");
            }
        }
    }
}

/// A quantizing task writes the phase planes of one row phase: two of a stride-2 layer's
/// four, the one plane of a stride-1 layer or of a 1x1 stride-2 layer without padding.
#[test]
fn a_quantizing_task_holds_the_planes_of_one_row_phase() {
    let cases = [
        (2, [1, 1], [3, 3], 2),
        (2, [3, 3], [7, 7], 2),
        (1, [1, 1], [3, 3], 1),
        (2, [0, 0], [1, 1], 1),
        (3, [1, 1], [2, 2], 2),
    ];
    for (stride, pad, kernel, planes) in cases {
        let sp = spatial(stride, pad, 1, AutoPad::Explicit);
        let g = layout::Geometry::new(&sp, 8, [20, 20], kernel).unwrap();
        assert_eq!(
            g.planes_per_task(),
            planes,
            "stride {stride}, kernel {kernel:?}"
        );
    }
}
