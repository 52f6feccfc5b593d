use super::*;

/// The convolution by its definition, in f64.
pub(super) fn reference(
    x: &[f32],
    w: &[f32],
    co: usize,
    ci: usize,
    k: [usize; 2],
    s: &Shape2,
) -> Vec<f64> {
    let [ih, iw] = s.input;
    let [oh, ow] = s.out;
    let mut out = vec![0f64; s.n * co * oh * ow];
    for n in 0..s.n {
        for o in 0..co {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut sum = 0f64;
                    for c in 0..ci {
                        for ky in 0..k[0] {
                            for kx in 0..k[1] {
                                let y =
                                    (oy * s.stride[0] + ky * s.dil[0]) as isize - s.pad[0] as isize;
                                let xx =
                                    (ox * s.stride[1] + kx * s.dil[1]) as isize - s.pad[1] as isize;
                                if y < 0 || xx < 0 || y >= ih as isize || xx >= iw as isize {
                                    continue;
                                }
                                let v = x[((n * ci + c) * ih + y as usize) * iw + xx as usize];
                                let f = w[((o * ci + c) * k[0] + ky) * k[1] + kx];
                                sum += v as f64 * f as f64;
                            }
                        }
                    }
                    out[((n * co + o) * oh + oy) * ow + ox] = sum;
                }
            }
        }
    }
    out
}

/// A convolution's geometry from its padding (`[begin, end]`), the output sized by the
/// floor rule; `None` when the dilated kernel does not fit the padded input.
pub(super) fn geometry(
    n: usize,
    input: [usize; 2],
    k: [usize; 2],
    stride: [usize; 2],
    dil: [usize; 2],
    [pad, pad_end]: [[usize; 2]; 2],
) -> Option<Shape2> {
    let reach = |d: usize| (k[d] - 1) * dil[d] + 1;
    let span = |d: usize| (input[d] + pad[d] + pad_end[d]).checked_sub(reach(d));
    let out = [span(0)? / stride[0] + 1, span(1)? / stride[1] + 1];
    Some(Shape2 {
        n,
        input,
        out,
        stride,
        dil,
        pad,
    })
}

/// Every value of `got` within 1e-5 (relative + absolute) of the f64 reference.
#[track_caller]
pub(super) fn assert_close(got: &[f32], want: &[f64], case: &str) {
    assert_within(got, want, 1e-5, case);
}

/// Every value of `got` within `tolerance` (relative + absolute) of the f64 reference.
#[track_caller]
pub(super) fn assert_within(got: &[f32], want: &[f64], tolerance: f64, case: &str) {
    assert_eq!(got.len(), want.len(), "{case}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (*g as f64 - w).abs() <= tolerance * (1.0 + w.abs()),
            "{case}: {g} vs {w}"
        );
    }
}

/// The convolution kernel this machine runs for the cases of these tests: the direct tiles
/// (and Winograd's transforms) where AVX-512 or AVX2 is found; elsewhere the Convolution
/// op's im2col + GEMM, which the tests then check on the same cases instead of skipping them.
pub(super) fn machine_path() -> &'static str {
    match crate::simd::unit() {
        crate::simd::Unit::Avx512 => "direct tiles (AVX-512)",
        crate::simd::Unit::Avx2 => "direct tiles (AVX2)",
        crate::simd::Unit::Baseline => "im2col + GEMM (no AVX2)",
    }
}

/// The convolution as the Convolution op computes it on this machine from filters it did
/// not prepare (what `irun run` does), at 1 and 2 threads (the same bits), checked within
/// `tolerance` of the f64 definition.
#[track_caller]
pub(super) fn check_the_op(
    x: &[f32],
    w: &[f32],
    co: usize,
    ci: usize,
    k: [usize; 2],
    s: &Shape2,
    case: &str,
) {
    use crate::spatial::{AutoPad, Rounding, Spatial};
    // The end padding that gives the geometry's output size (any that reaches the last
    // window does, the floor rule taking the rest).
    let pad_end = |d: usize| {
        ((s.out[d] - 1) * s.stride[d] + (k[d] - 1) * s.dil[d] + 1)
            .saturating_sub(s.input[d] + s.pad[d])
    };
    let op = crate::convolution::Convolution {
        spatial: Spatial {
            strides: s.stride.to_vec(),
            pads_begin: s.pad.to_vec(),
            pads_end: vec![pad_end(0), pad_end(1)],
            dilations: s.dil.to_vec(),
            auto_pad: AutoPad::Explicit,
            rounding: Rounding::Floor,
        },
    };
    let inputs = vec![
        Tensor::from_f32(vec![s.n, ci, s.input[0], s.input[1]], x.to_vec()).unwrap(),
        Tensor::from_f32(vec![co, ci, k[0], k[1]], w.to_vec()).unwrap(),
    ];
    let out = crate::testing::eval1(&op, inputs).unwrap();
    assert_eq!(out.shape(), &[s.n, co, s.out[0], s.out[1]], "{case}");
    assert_close(
        out.values::<f32>().unwrap(),
        &reference(x, w, co, ci, k, s),
        &format!("{case}, {}", machine_path()),
    );
}

pub(super) fn filters(w: &[f32]) -> Tensor {
    Tensor::from_f32(vec![w.len()], w.to_vec()).unwrap()
}

pub(super) fn values(len: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        })
        .collect()
}

#[test]
fn matches_the_definition_at_every_thread_count() {
    eprintln!("convolution path: {}", machine_path());
    // (n, co, ci, input, kernel, stride, dil, pad begin, pad end): channel counts off the
    // tile sizes, asymmetric and no padding, dilation, 1-D, a plane narrower than a tile,
    // strides 2 and 3 (a 7x7 stem, a 1x1 that reads one phase, strides that differ by
    // dim, stride with dilation), padding past what the strided windows reach.
    let cases = [
        (1, 8, 3, [9, 11], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
        (2, 13, 5, [7, 6], [3, 2], [1, 1], [1, 1], [0, 1], [2, 0]),
        (1, 17, 4, [12, 12], [3, 3], [1, 1], [2, 2], [2, 2], [2, 2]),
        (1, 9, 6, [1, 40], [1, 5], [1, 1], [1, 1], [0, 2], [0, 2]),
        (1, 3, 2, [3, 3], [3, 3], [1, 1], [1, 1], [0, 0], [0, 0]),
        (1, 16, 16, [14, 14], [5, 5], [1, 1], [1, 1], [2, 2], [2, 2]),
        (1, 10, 3, [23, 21], [7, 7], [2, 2], [1, 1], [3, 3], [3, 3]),
        (2, 12, 7, [14, 14], [1, 1], [2, 2], [1, 1], [0, 0], [0, 0]),
        (1, 9, 5, [15, 16], [3, 3], [2, 3], [1, 1], [1, 1], [0, 2]),
        (1, 8, 4, [17, 17], [3, 3], [2, 2], [2, 3], [2, 1], [1, 3]),
        (1, 8, 2, [9, 9], [2, 2], [3, 3], [1, 1], [4, 4], [4, 4]),
        // For the channel tiles: output channels past one block of 32 and not a multiple
        // of it, rows wider than one tile (31 = 16 + 15), input channels over more than
        // one block (28 at 3x3, 256 at 1x1), a 7x7 plane of 3x3 stride 2, more tiles than
        // one group keeps sums for (40 > 36).
        (1, 40, 37, [5, 31], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
        (1, 35, 30, [20, 20], [3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
        (2, 33, 300, [3, 4], [1, 1], [1, 1], [1, 1], [0, 0], [0, 0]),
        (1, 64, 30, [14, 14], [3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
    ];
    for (i, &(n, co, ci, input, k, stride, dil, pad, pad_end)) in cases.iter().enumerate() {
        let s = geometry(n, input, k, stride, dil, [pad, pad_end]).unwrap();
        let x = values(n * ci * input[0] * input[1], 7 + i as u32);
        let w = values(co * ci * k[0] * k[1], 99 + i as u32);
        if !DirectFilters::supported() {
            check_the_op(&x, &w, co, ci, k, &s, &format!("case {i}"));
            continue;
        }
        let f = DirectFilters::new(&filters(&w), co, ci, k).unwrap();
        let want = reference(&x, &w, co, ci, k, &s);
        // Whole planes at 1, 2 and 3 threads; blocks of positions (a budget of a few
        // hundred bytes) at 1 and 2.
        let run = |t, budget, tiling| {
            crate::testing::on_threads(t, || f.run_within(&x, &s, &|_, _| {}, budget, tiling))
                .unwrap()
        };
        let runs = [
            run(1, usize::MAX, Tiling::Positions),
            run(2, usize::MAX, Tiling::Positions),
            run(3, usize::MAX, Tiling::Positions),
            run(1, 600, Tiling::Positions),
            run(2, 600, Tiling::Positions),
            run(1, usize::MAX, Tiling::Channels),
            run(2, usize::MAX, Tiling::Channels),
            run(3, usize::MAX, Tiling::Channels),
        ];
        assert_close(&runs[0], &want, &format!("case {i}"));
        assert_eq!(runs[0], runs[1], "case {i}: 1 and 2 threads");
        assert_eq!(runs[0], runs[2], "case {i}: 1 and 3 threads");
        assert_eq!(runs[0], runs[3], "case {i}: in blocks");
        assert_eq!(runs[0], runs[4], "case {i}: in blocks, 2 threads");
        // The same chains of multiply-adds, so the same bits.
        for (t, run) in runs[5..].iter().enumerate() {
            assert_eq!(
                &runs[0],
                run,
                "case {i}: channel tiles, {} thread(s)",
                t + 1
            );
        }
    }
}

/// Random small geometries, padding wider than the kernel reaches and strides past the
/// kernel included, in whole planes and in blocks.
#[test]
fn random_geometries_match_the_definition() {
    eprintln!("convolution path: {}", machine_path());
    let mut seed = 12345u32;
    let mut pick = |n: usize| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as usize % n
    };
    for case in 0..150 {
        let k = [1 + pick(4), 1 + pick(4)];
        let stride = [1 + pick(3), 1 + pick(3)];
        let dil = [1 + pick(2), 1 + pick(2)];
        let input = [1 + pick(12), 1 + pick(12)];
        let pad = [pick(4), pick(4)];
        let pad_end = [pick(4), pick(4)];
        let (n, co, ci) = (1 + pick(2), 1 + pick(20), 1 + pick(5));
        let Some(s) = geometry(n, input, k, stride, dil, [pad, pad_end]) else {
            continue;
        };
        let x = values(n * ci * input[0] * input[1], case);
        let w = values(co * ci * k[0] * k[1], case + 1000);
        if !DirectFilters::supported() {
            check_the_op(&x, &w, co, ci, k, &s, &format!("case {case}: {s:?}"));
            continue;
        }
        let f = DirectFilters::new(&filters(&w), co, ci, k).unwrap();
        let want = reference(&x, &w, co, ci, k, &s);
        let runs = [
            (usize::MAX, Tiling::Positions),
            (500, Tiling::Positions),
            (usize::MAX, Tiling::Channels),
        ];
        for (budget, tiling) in runs {
            let got = crate::testing::on_threads(2, || {
                f.run_within(&x, &s, &|_, _| {}, budget, tiling).unwrap()
            });
            assert_close(
                &got,
                &want,
                &format!("case {case}: {s:?} k {k:?} co {co} ci {ci}"),
            );
        }
    }
}

#[test]
fn each_sees_every_output_once_where_it_lies() {
    let (co, ci, k) = (19, 2, [3, 3]);
    let s = Shape2 {
        n: 2,
        input: [9, 7],
        out: [9, 7],
        stride: [1, 1],
        dil: [1, 1],
        pad: [1, 1],
    };
    if !DirectFilters::supported() {
        // No tiles hand over blocks here: the op's path computes the whole output, then
        // applies an epilogue once; its values are checked on the same geometry.
        let (w, x) = (values(co * ci * 9, 3), values(2 * ci * 63, 4));
        return check_the_op(&x, &w, co, ci, k, &s, machine_path());
    }
    let f = DirectFilters::new(&filters(&values(co * ci * 9, 3)), co, ci, k).unwrap();
    let x = values(2 * ci * 63, 4);
    let runs = [
        (usize::MAX, Tiling::Positions),
        (300, Tiling::Positions),
        (usize::MAX, Tiling::Channels),
    ];
    for (budget, tiling) in runs {
        let seen = std::sync::Mutex::new(Vec::new());
        let out = crate::testing::on_threads(2, || {
            f.run_within(
                &x,
                &s,
                &|at, v| seen.lock().unwrap().push((at, v.to_vec())),
                budget,
                tiling,
            )
        })
        .unwrap();
        let mut times = vec![0; out.len()];
        for (at, v) in seen.into_inner().unwrap() {
            assert_eq!(
                &out[at..at + v.len()],
                &v[..],
                "{tiling:?}, budget {budget}"
            );
            times[at..at + v.len()].iter_mut().for_each(|t| *t += 1);
        }
        assert!(times.iter().all(|&t| t == 1), "{tiling:?}: {times:?}");
    }
}

/// The tile kernel of this CPU (AVX-512 or AVX2) computes each output as one fused
/// multiply-add chain over (input channel, tap) in order, from zero: bit for bit the scalar
/// chain, at every tile width and over enough steps that AVX2 carries its sums across
/// chunks, for every count of needed rows, with and without the next tile's inputs fetched.
/// This is what makes the two units give the same results.
#[test]
fn the_tile_is_one_fused_chain_per_output_in_step_order() {
    if !DirectFilters::supported() {
        return;
    }
    let taps = [0usize, 1, 2, 9, 10, 11, 18, 19, 20];
    let cases = [
        (1, 1, MR),
        (3, 2, 5),
        (40, 3, MR),
        (17, 1, 3),
        (70, 2, 1),
        (40, 2, 6),
        // Planes past L2 (64 x 4200 values): the AVX2 kernel fetches the next tile's inputs.
        (64, 3, 5),
    ];
    for (ci, vectors, rows) in cases {
        let plane = if ci == 64 { 4200 } else { 20 + 48 + 40 };
        let q0 = 20;
        let x = values(ci * plane, 7 + ci as u32);
        let w = values(MR * ci * taps.len(), 11 + vectors as u32);
        let mut acc = [[f32::NAN; NR]; MR];
        tile(rows, vectors, &w, &x, plane, &taps, q0, &mut acc);
        let k = ci * taps.len();
        for (r, row) in acc.iter().enumerate().take(rows) {
            for (i, &got) in row[..16 * vectors].iter().enumerate() {
                let mut want = 0f32;
                for c in 0..ci {
                    for (t, &off) in taps.iter().enumerate() {
                        let f = w[r * k + c * taps.len() + t];
                        want = f.mul_add(x[c * plane + q0 + off + i], want);
                    }
                }
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "ci {ci}, vectors {vectors}, rows {rows}, row {r}, position {i}"
                );
            }
        }
    }
}

/// The channel tiles run only output channel counts that fill their 32 lanes but for an
/// eighth: a detector head's 5 channels and a 20-channel layer go to the position tiles,
/// ResNet's 64 to 512 and 300 (10 tiles, 6% empty) to the channel tiles.
#[test]
fn channel_tiles_take_only_channel_counts_that_fill_them() {
    for (co, fills) in [
        (1, false),
        (5, false),
        (20, false),
        (28, false),
        (29, true),
        (32, true),
        (48, false),
        (64, true),
        (300, true),
        (512, true),
    ] {
        assert_eq!(super::lanes::fills_lanes(co), fills, "{co} channels");
    }
}

/// Filters of fewer than 25 taps at a stride leave the direct kernels for the GEMM (their
/// strided reads starve the position tiles) but where AVX-512 runs them onto a plane of at
/// most 64x64 outputs, and a 1x1 filter at a stride always; at stride 1, and with 25 taps or
/// more at a stride, AVX-512 keeps them.
#[test]
fn strided_small_filters_go_to_the_gemm_unless_the_plane_is_small() {
    if !DirectFilters::supported() {
        return;
    }
    let (co, ci) = (20, 8);
    // (kernel, stride, input side, whether AVX-512 runs it direct)
    for (k, stride, side, avx512_runs) in [
        ([3, 3], [2, 2], 40, true),
        ([3, 3], [2, 2], 128, true),
        ([3, 3], [2, 2], 130, false),
        ([3, 3], [1, 2], 40, true),
        ([3, 3], [1, 2], 160, false),
        ([1, 1], [2, 2], 40, false),
        ([5, 5], [2, 2], 160, true),
        ([7, 7], [2, 2], 160, true),
        ([3, 3], [1, 1], 160, true),
    ] {
        let s = geometry(1, [side, side], k, stride, [1, 1], [[1, 1], [1, 1]]).unwrap();
        let w = values(co * ci * k[0] * k[1], 5);
        let f = DirectFilters::new(&filters(&w), co, ci, k).unwrap();
        let runs = f.runs(&s);
        let avx512 = crate::simd::unit() == crate::simd::Unit::Avx512;
        if stride != [1, 1] && k[0] * k[1] < 25 && !(avx512 && avx512_runs) {
            assert!(!runs, "{k:?} at stride {stride:?} onto {:?}", s.out);
        } else if avx512 {
            assert_eq!(
                runs, avx512_runs,
                "{k:?} at stride {stride:?} onto {:?}",
                s.out
            );
        }
    }
}
