use super::{Tiles, WinogradFilters};
use crate::direct_conv::tests::{
    assert_within, check_the_op, filters, geometry, machine_path, reference, values,
};
use crate::direct_conv::DirectFilters;

/// `got` against the f64 definition, with `each`'s mark (`1 + index % 7`, added once to
/// every value) taken off first: a value marked twice or never, or a stretch handed over
/// at the wrong index, is off by at least 1 (a wrong coefficient by far more than the
/// tolerance). F4's larger coefficients round more: measured against the f64 definition on
/// random values in [-0.5, 0.5], the largest errors are, at 37 input channels (outputs of
/// rms 1.4), 3.0e-6 for the direct tiles, 1.5e-6 for F2, 2.2e-5 for F4; at 200 (rms 3.5)
/// 1.2e-5, 5.5e-6 and 9.4e-5; at 512 (rms 5.6) 8.4e-5, 2.7e-5 and 3.4e-4.
#[track_caller]
fn assert_marked_close(got: &[f32], want: &[f64], tiles: Tiles, case: &str) {
    let unmarked: Vec<f32> = got
        .iter()
        .enumerate()
        .map(|(i, &v)| v - (1 + i % 7) as f32)
        .collect();
    // The mark's rounding adds at most an ulp of 7 to each value.
    let want: Vec<f64> = want.iter().map(|&w| w * (1.0 + 1e-7)).collect();
    let tolerance = match tiles {
        Tiles::F2 => 1e-5,
        Tiles::F4 => 2e-4,
    };
    assert_within(&unmarked, &want, tolerance, case);
}

fn mark(start: usize, dst: &mut [f32]) {
    for (i, v) in dst.iter_mut().enumerate() {
        *v += (1 + (start + i) % 7) as f32;
    }
}

#[test]
fn matches_the_definition_and_the_thread_counts_agree() {
    eprintln!("3x3 convolution path: {}", machine_path());
    // (n, co, ci, input, pad begin, pad end): odd output sizes (the last tiles cut), padding
    // that differs by side and none, padding of 2 (outputs beyond the input's edge), output
    // channels off the 8-channel tiles, narrow planes whose bands take several tile rows
    // (tiles of a product tile cross rows), wide ones of many bands (several tasks), a band
    // cut by its bytes (ci = 200), a 1x1 output, two items.
    let cases = [
        (1, 8, 3, [9, 11], [1, 1], [1, 1]),
        (2, 13, 5, [7, 6], [0, 1], [2, 0]),
        (1, 17, 4, [12, 12], [2, 2], [2, 2]),
        (1, 40, 37, [5, 31], [1, 1], [1, 1]),
        (1, 9, 6, [40, 100], [1, 1], [1, 1]),
        (1, 8, 8, [21, 7], [1, 1], [1, 1]),
        (1, 3, 200, [30, 8], [1, 1], [1, 1]),
        (1, 8, 2, [3, 3], [0, 0], [0, 0]),
        (2, 16, 9, [33, 34], [0, 0], [2, 1]),
    ];
    for (i, &(n, co, ci, input, pad, pad_end)) in cases.iter().enumerate() {
        let s = geometry(n, input, [3, 3], [1, 1], [1, 1], [pad, pad_end]).unwrap();
        let x = values(n * ci * input[0] * input[1], 11 + i as u32);
        let w = values(co * ci * 9, 211 + i as u32);
        if !DirectFilters::supported() {
            check_the_op(&x, &w, co, ci, [3, 3], &s, &format!("case {i}"));
            continue;
        }
        let want = reference(&x, &w, co, ci, [3, 3], &s);
        for tiles in [Tiles::F2, Tiles::F4] {
            let f = WinogradFilters::new(&w, co, ci, tiles).unwrap();
            let run = |t| crate::testing::on_threads(t, || f.run(&x, &s, &mark)).unwrap();
            let one = run(1);
            assert_marked_close(&one, &want, tiles, &format!("case {i}, {tiles:?}"));
            for t in [2, 3] {
                crate::testing::assert_same_bits(
                    &run(t),
                    &one,
                    format!("case {i}, {tiles:?}: {t} threads against 1"),
                );
            }
        }
    }
}

#[test]
fn run_takes_the_transform_that_suits_the_plane_and_the_tiles_elsewhere() {
    // 32 channels: F4 on 64x64, F2 on 30x30, the direct tiles at stride 2 and on 14x14.
    let (co, ci) = (32, 32);
    let cases = [
        ([64, 64], [1, 1], Some(Tiles::F4)),
        ([30, 30], [1, 1], Some(Tiles::F2)),
        ([64, 64], [2, 2], None),
        ([14, 14], [1, 1], None),
    ];
    let w = values(co * ci * 9, 6);
    if !DirectFilters::supported() {
        // No transform without AVX-512: the op's path on every plane.
        for (input, stride, _) in cases {
            let s = geometry(1, input, [3, 3], stride, [1, 1], [[1, 1], [1, 1]]).unwrap();
            let x = values(ci * input[0] * input[1], 5);
            check_the_op(&x, &w, co, ci, [3, 3], &s, machine_path());
        }
        return;
    }
    let run = |f: &DirectFilters, input: [usize; 2], stride| {
        let s = geometry(1, input, [3, 3], stride, [1, 1], [[1, 1], [1, 1]]).unwrap();
        let x = values(ci * input[0] * input[1], 5);
        let got = crate::testing::on_threads(2, || f.run(&x, &s, &mark)).unwrap();
        (got, reference(&x, &w, co, ci, [3, 3], &s))
    };
    for (input, stride, tiles) in cases {
        let f = DirectFilters::new(&filters(&w), co, ci, [3, 3]).unwrap();
        let (got, want) = run(&f, input, stride);
        assert_marked_close(&got, &want, tiles.unwrap_or(Tiles::F2), "run");
        let made = f.winograd.get().and_then(Option::as_ref).map(|u| u.tiles);
        assert_eq!(made, tiles, "{input:?} at stride {stride:?}");
    }
    // Filters transformed for F4 are not used for a plane that wants F2: that plane runs
    // on the direct tiles, within their tolerance.
    let f = DirectFilters::new(&filters(&w), co, ci, [3, 3]).unwrap();
    run(&f, [64, 64], [1, 1]);
    let (got, want) = run(&f, [30, 30], [1, 1]);
    assert_marked_close(&got, &want, Tiles::F2, "F4 filters, a plane for F2");
}

#[test]
fn the_filter_transform_is_g_g_gt() {
    // A filter of rank one, g = (1, 2, 3) ⊗ (1, 0, -1), whose transform is the outer
    // product of G applied to each factor: for F2 (1, 3, 1, 3) ⊗ (1, 0, 0, -1), exact in
    // f32; for F4 (1/4, -1, -1/3, 17/24, 3/8, 3) ⊗ (1/4, 0, 0, -1/8, -1/8, -1), within
    // the one rounding to f32.
    let col = [1.0f32, 2.0, 3.0];
    let row = [1.0f32, 0.0, -1.0];
    let w: Vec<f32> = (0..9).map(|i| col[i / 3] * row[i % 3]).collect();
    let f2 = (
        vec![1.0, 3.0, 1.0, 3.0],
        vec![1.0, 0.0, 0.0, -1.0],
        Tiles::F2,
    );
    let f4 = (
        vec![0.25, -1.0, -1.0 / 3.0, 17.0 / 24.0, 3.0 / 8.0, 3.0],
        vec![0.25, 0.0, 0.0, -1.0 / 8.0, -1.0 / 8.0, -1.0],
        Tiles::F4,
    );
    for (gc, gr, tiles) in [f2, f4] {
        let f = WinogradFilters::new(&w, 1, 1, tiles).unwrap();
        let n = gc.len();
        for (a, ga) in gc.iter().enumerate() {
            for (b, gb) in gr.iter().enumerate() {
                // Point n a + b of output channel 0 (rows padded to MR channels).
                let want: f64 = ga * gb;
                let got = f.point(n * a + b, 0, 0);
                assert!(
                    (got as f64 - want).abs() <= want.abs() * 1e-7,
                    "{tiles:?} point ({a}, {b}): {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn overflowing_or_mismatched_filters_are_refused() {
    assert!(WinogradFilters::new(&[0.0; 9], 2, 1, Tiles::F2).is_err());
    assert!(WinogradFilters::new(&[], usize::MAX / 4, 4, Tiles::F4).is_err());
}
