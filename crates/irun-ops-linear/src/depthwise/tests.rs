//! The depthwise walks against the convolution's definition.

use super::*;
use irun_opkit::epilogue::Activation;
use irun_opkit::quantize::fake_quantize_f32;

/// The direct definition: every output adds its in-bounds taps in tap order from 0.
fn direct(g: &Depthwise, x: &[f32], w: &[f32]) -> Vec<f32> {
    let [id, ih, iw] = g.input;
    let [kd, kh, kw] = g.kernel;
    let [od, oh, ow] = g.out;
    let mut out = Vec::new();
    for p in 0..g.n * g.channels {
        let c = p % g.channels;
        for (z, y, xo) in (0..od * oh * ow).map(|o| (o / (oh * ow), o / ow % oh, o % ow)) {
            let mut acc = 0f32;
            for (a, b, e) in (0..kd * kh * kw).map(|t| (t / (kh * kw), t / kw % kh, t % kw)) {
                let at = |o: usize, t: usize, d: usize| {
                    let v = (o * g.stride[d] + t * g.dil[d]) as isize - g.pad[d] as isize;
                    (v >= 0 && (v as usize) < g.input[d]).then_some(v as usize)
                };
                if let (Some(iz), Some(iy), Some(ix)) = (at(z, a, 0), at(y, b, 1), at(xo, e, 2)) {
                    acc += w[(c * kd + a) * kh * kw + b * kw + e]
                        * x[((p * id + iz) * ih + iy) * iw + ix];
                }
            }
            out.push(acc);
        }
    }
    out
}

/// The direct definition with fused multiply-adds: every output adds its in-bounds taps
/// in tap order from 0, each by one rounding (the phase walk's arithmetic).
fn direct_fused(g: &Depthwise, x: &[f32], w: &[f32]) -> Vec<f32> {
    let [_, ih, iw] = g.input;
    let [_, kh, kw] = g.kernel;
    let [_, oh, ow] = g.out;
    let at = |o: usize, t: usize, d: usize| {
        let v = (o * g.stride[d] + t * g.dil[d]) as isize - g.pad[d] as isize;
        (v >= 0 && (v as usize) < g.input[d]).then_some(v as usize)
    };
    let mut out = Vec::new();
    for p in 0..g.n * g.channels {
        let c = p % g.channels;
        for (y, xo) in (0..oh * ow).map(|o| (o / ow, o % ow)) {
            let mut acc = 0f32;
            for (a, b) in (0..kh * kw).map(|t| (t / kw, t % kw)) {
                if let (Some(iy), Some(ix)) = (at(y, a, 1), at(xo, b, 2)) {
                    acc = w[c * kh * kw + a * kw + b].mul_add(x[(p * ih + iy) * iw + ix], acc);
                }
            }
            out.push(acc);
        }
    }
    out
}

/// A 2-D geometry with the output size the padding at both ends gives.
fn geometry_2d(
    channels: usize,
    input: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    dil: [usize; 2],
    pad: [[usize; 2]; 2],
) -> Option<Depthwise> {
    let out: Vec<usize> = (0..2)
        .map(|d| {
            let reach = dil[d] * (kernel[d] - 1) + 1;
            (input[d] + pad[d][0] + pad[d][1])
                .checked_sub(reach)
                .map(|r| r / stride[d] + 1)
        })
        .collect::<Option<_>>()?;
    Some(Depthwise {
        n: 2,
        channels,
        input: [1, input[0], input[1]],
        kernel: [1, kernel[0], kernel[1]],
        out: [1, out[0], out[1]],
        stride: [1, stride[0], stride[1]],
        dil: [1, dil[0], dil[1]],
        pad: [0, pad[0][0], pad[1][0]],
    })
}

fn assert_phases_match(g: &Depthwise, case: &str) {
    let x = values(g.n * g.channels * g.input.iter().product::<usize>(), 7);
    let w = values(g.channels * g.kernel.iter().product::<usize>(), 11);
    if !phases::supported() {
        // The walk this machine takes (rows, plane runs or channel blocks) sums in another
        // order than the fused definition: within f32 rounding of it.
        let want = direct_fused(g, &x, &w);
        let got = g.run(&x, &w).unwrap();
        assert_eq!(got.len(), want.len(), "{case}");
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "{case} (without AVX-512 or AVX2), output {i}: {a} vs {b}"
            );
        }
        return;
    }
    assert!(g.suits_phases(&w), "{case}");
    let want: Vec<u32> = direct_fused(g, &x, &w)
        .iter()
        .map(|v| v.to_bits())
        .collect();
    let got: Vec<u32> = g
        .by_phases(&x, &w)
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(got, want, "{case}");
    if super::blocks::supported() {
        let blocks: Vec<u32> = g
            .by_blocks(&x, &w, None, &[])
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(blocks, want, "channel blocks, {case}");
        // With a bias by channel and HSwish applied to each block as it is written: the
        // walk's sums finished by the epilogue's own pass.
        let e = epilogue(g.channels);
        let mut finished = g.by_blocks(&x, &w, None, &[]).unwrap();
        e.apply(&mut finished, g.planes());
        let fused = g.by_blocks(&x, &w, Some(&e), &[]).unwrap();
        irun_opkit::testing::assert_same_bits(&fused, &finished, format!("fused, {case}"));
    }
    assert_eq!(g.run(&x, &w).unwrap().len(), want.len(), "{case}");
}

/// A bias of its own for each channel (values around HSwish's bends) and HSwish.
fn epilogue(channels: usize) -> Epilogue {
    Epilogue {
        bias: Some((0..channels).map(|c| c as f32 * 0.75 - 3.5).collect()),
        bias_axis_from_end: 2,
        activation: Activation::HSwish,
    }
}

/// FakeQuantize ranges after the depthwise layer: none, one for all channels, or one per
/// channel (each its own width, some ranges narrower than the outputs so that both ends
/// clamp).
fn quantize_cases(channels: usize) -> [Vec<FakeQuantizeRange>; 3] {
    let range = |c: usize| {
        let low = -0.5 - (c % 7) as f32 * 0.25;
        let high = 0.75 + (c % 5) as f32 * 0.5;
        FakeQuantizeRange {
            input_low: low,
            input_high: high,
            output_low: low,
            output_high: high,
            last_level: 255.0,
        }
    };
    [
        Vec::new(),
        vec![range(3)],
        (0..channels).map(range).collect(),
    ]
}

/// `run_finished` is `run` then the epilogue and the FakeQuantize, bit for bit, on the
/// channel-block walk (enough blocks for every thread), the phase walk (one block) and the
/// plane and row walks (a NaN weight), at 1 and 2 threads.
#[test]
fn the_epilogue_lands_as_its_own_pass_would() {
    for (channels, nan) in [(80, false), (5, false), (24, true)] {
        let g = geometry_2d(channels, [30, 27], [3, 3], [1, 1], [1, 1], [[1, 1], [1, 1]]).unwrap();
        let x = values(g.n * g.channels * g.input.iter().product::<usize>(), 3);
        let mut w = values(g.channels * g.kernel.iter().product::<usize>(), 4);
        if nan {
            w[5] = f32::NAN;
        }
        let e = epilogue(channels);
        let plane: usize = g.out.iter().product();
        for quantize in quantize_cases(channels) {
            for threads in [1, 2] {
                irun_opkit::testing::on_threads(threads, || {
                    let mut want = g.run(&x, &w).unwrap();
                    e.apply(&mut want, g.planes());
                    for (i, values) in want.chunks_mut(plane).enumerate() {
                        if let Some(q) = quantize.get(i % quantize.len().max(1)) {
                            for v in values {
                                *v = fake_quantize_f32(
                                    *v,
                                    q.input_low,
                                    q.input_high,
                                    q.output_low,
                                    q.output_high,
                                    q.last_level,
                                );
                            }
                        }
                    }
                    let got = g.run_finished(&x, &w, Some(&e), &quantize).unwrap();
                    let at = format!(
                        "{channels} channels, NaN weight {nan}, {} ranges, {threads} threads",
                        quantize.len()
                    );
                    irun_opkit::testing::assert_same_bits(&got, &want, at);
                });
            }
        }
    }
}

/// The phase walk (AVX-512 or AVX2) and the channel-block walk (AVX-512), bit for bit
/// against the fused direct definition:
/// MobileNet's shapes (7x7 under 5x5 in one tile, 14x14, stride 2 at either parity of the
/// left padding and odd widths), 1-D, strides 3 and mixed, dilation, padding wider than
/// the kernel, and 150 random geometries. Not with a non-finite weight.
#[test]
fn the_phase_walk_equals_the_fused_definition_bit_for_bit() {
    // Without either unit the same geometries check the walks this machine takes instead.
    eprintln!(
        "depthwise path: {}",
        match (phases::supported(), crate::avx512f()) {
            (true, true) => "phases and channel blocks (AVX-512)",
            (true, false) => "phases (AVX2)",
            _ => "rows, plane runs or channel blocks (no AVX-512 or AVX2)",
        }
    );
    let fixed = [
        ([7, 7], [5, 5], [1, 1], [1, 1], [[2, 2], [2, 2]]),
        ([14, 14], [3, 3], [1, 1], [1, 1], [[1, 1], [1, 1]]),
        ([56, 56], [3, 3], [2, 2], [1, 1], [[0, 1], [0, 1]]),
        ([57, 55], [3, 3], [2, 2], [1, 1], [[1, 1], [1, 1]]),
        ([13, 12], [5, 5], [2, 2], [1, 1], [[2, 2], [3, 3]]),
        ([1, 30], [1, 4], [1, 3], [1, 2], [[0, 0], [2, 2]]),
        ([9, 11], [3, 2], [2, 1], [2, 3], [[2, 1], [0, 4]]),
        ([6, 5], [2, 2], [1, 2], [1, 1], [[4, 3], [3, 5]]),
        // Planes whose channel blocks go in several bands of rows (padding rows at the top
        // of the first and the bottom of the last).
        ([200, 70], [3, 3], [1, 1], [1, 1], [[1, 1], [1, 1]]),
        ([150, 90], [5, 5], [2, 2], [2, 2], [[3, 1], [2, 4]]),
    ];
    for (input, kernel, stride, dil, pad) in fixed {
        let g = geometry_2d(19, input, kernel, stride, dil, pad).unwrap();
        assert_phases_match(
            &g,
            &format!("{input:?} {kernel:?} {stride:?} {dil:?} {pad:?}"),
        );
    }
    let mut seed = 12345u32;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (seed >> 8) as usize % n
    };
    let mut tried = 0;
    while tried < 150 {
        let input = [1 + next(20), 1 + next(40)];
        let kernel = [1 + next(5), 1 + next(5)];
        let stride = [1 + next(3), 1 + next(3)];
        let dil = [1 + next(2), 1 + next(2)];
        let pad = [[next(4), next(4)], [next(4), next(4)]];
        if let Some(g) = geometry_2d(1 + next(20), input, kernel, stride, dil, pad) {
            let case = format!("{input:?} {kernel:?} {stride:?} {dil:?} {pad:?}");
            assert_phases_match(&g, &case);
            tried += 1;
        }
    }
    let g = geometry_2d(3, [5, 5], [3, 3], [1, 1], [1, 1], [[1, 1], [1, 1]]).unwrap();
    let mut w = values(27, 1);
    w[4] = f32::NAN;
    assert!(!g.suits_phases(&w), "a NaN weight takes the other walks");
    assert_eq!(
        phases::supported(),
        crate::avx512f() || crate::simd::unit() != crate::simd::Unit::Baseline
    );
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

/// A kernel with an empty dim (spatial.rs sizes the output as for 1), or an empty input
/// with padded outputs: every output is an empty sum, 0, whatever the walk (the plane runs
/// would size their buffers by `kw - 1`, the row walk split empty rows into phases).
#[test]
fn an_empty_kernel_or_input_dim_gives_zeros() {
    for out_w in [5, 30] {
        let g = Depthwise {
            n: 1,
            channels: 2,
            input: [1, 3, out_w],
            kernel: [1, 3, 0],
            out: [1, 3, out_w],
            stride: [1, 1, 1],
            dil: [1, 1, 1],
            pad: [0, 1, 0],
        };
        let x = values(2 * 3 * out_w, 3);
        assert_eq!(g.run(&x, &[]).unwrap(), vec![0.0; 2 * 3 * out_w]);
    }
    // An empty input row padded to rows of 2 and 24 outputs, at stride 2 (the wide ones
    // split into phases by the row walk).
    for out_w in [2, 24] {
        let g = Depthwise {
            n: 1,
            channels: 2,
            input: [1, 3, 0],
            kernel: [1, 1, 1],
            out: [1, 3, out_w],
            stride: [1, 1, 2],
            dil: [1, 1, 1],
            pad: [0, 0, 2 * out_w],
        };
        assert_eq!(g.run(&[], &[1.0, 1.0]).unwrap(), vec![0.0; 2 * 3 * out_w]);
    }
}

/// Both walks, bit for bit against the direct definition, on inexact values (so the
/// order of the additions shows): 19 channels (a full block and a partial one), two batch
/// items, 1-D, 2-D and 3-D, strides, dilation, asymmetric padding, padding wider than the
/// kernel; the plane runs wherever they apply, and not with a non-finite weight.
#[test]
fn both_walks_equal_the_direct_definition_bit_for_bit() {
    type Dims = [usize; 3];
    let cases: [(Dims, Dims, Dims, Dims, Dims); 6] = [
        ([1, 9, 11], [1, 3, 3], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
        ([1, 6, 7], [1, 3, 2], [1, 1, 1], [1, 2, 3], [0, 2, 0]),
        ([1, 1, 9], [1, 1, 3], [1, 1, 1], [1, 1, 1], [0, 0, 4]),
        ([1, 13, 12], [1, 5, 5], [1, 2, 2], [1, 1, 1], [0, 2, 3]),
        ([1, 1, 30], [1, 1, 4], [1, 1, 3], [1, 1, 2], [0, 0, 2]),
        ([4, 5, 6], [2, 3, 3], [2, 1, 2], [1, 2, 1], [1, 1, 0]),
    ];
    for (input, kernel, stride, dil, pad) in cases {
        let out: Vec<usize> = (0..3)
            .map(|d| (input[d] + 2 * pad[d] - dil[d] * (kernel[d] - 1) - 1) / stride[d] + 1)
            .collect();
        let g = Depthwise {
            n: 2,
            channels: 19,
            input,
            kernel,
            out: [out[0], out[1], out[2]],
            stride,
            dil,
            pad,
        };
        let x = values(2 * 19 * input.iter().product::<usize>(), 3);
        let w = values(19 * kernel.iter().product::<usize>(), 5);
        let want: Vec<u32> = direct(&g, &x, &w).iter().map(|v| v.to_bits()).collect();
        let mut walks = vec![
            g.by_rows(&x, &w).unwrap(),
            g.by_channel_blocks(&x, &w).unwrap(),
        ];
        if g.suits_plane_runs(&w) {
            walks.push(g.by_plane_runs(&x, &w).unwrap());
            let mut inf = w.clone();
            inf[0] = f32::INFINITY;
            assert!(!g.suits_plane_runs(&inf));
        }
        for got in walks {
            let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "input {input:?} kernel {kernel:?}");
        }
    }
}
