use super::tests::{assert_close, filters, geometry, reference, values};
use super::winograd::WinogradFilters;
use super::*;

/// `got` against the f64 definition, with `each`'s mark (`1 + index % 7`, added once to
/// every value) taken off first: a value marked twice or never, or a stretch handed over
/// at the wrong index, is off by at least 1.
#[track_caller]
fn assert_marked_close(got: &[f32], want: &[f64], case: &str) {
    let unmarked: Vec<f32> = got
        .iter()
        .enumerate()
        .map(|(i, &v)| v - (1 + i % 7) as f32)
        .collect();
    // The mark's rounding adds at most an ulp of 7 to each value.
    let want: Vec<f64> = want.iter().map(|&w| w * (1.0 + 1e-7)).collect();
    assert_close(&unmarked, &want, case);
}

fn mark(start: usize, dst: &mut [f32]) {
    for (i, v) in dst.iter_mut().enumerate() {
        *v += (1 + (start + i) % 7) as f32;
    }
}

#[test]
fn matches_the_definition_and_the_thread_counts_agree() {
    if !DirectFilters::supported() {
        return;
    }
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
        let f = WinogradFilters::new(&w, co, ci).unwrap();
        let want = reference(&x, &w, co, ci, [3, 3], &s);
        let run = |t| crate::testing::on_threads(t, || f.run(&x, &s, &mark)).unwrap();
        let one = run(1);
        assert_marked_close(&one, &want, &format!("case {i}"));
        for t in [2, 3] {
            assert!(
                run(t)
                    .iter()
                    .zip(&one)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "case {i}: {t} threads differ from 1"
            );
        }
    }
}

#[test]
fn run_takes_the_transform_where_it_suits_and_the_tiles_elsewhere() {
    if !DirectFilters::supported() {
        return;
    }
    // A 3x3 stride-1 layer of 32 channels on 32x32 suits; the same at stride 2 does not.
    for (stride, transformed) in [([1, 1], true), ([2, 2], false)] {
        let (co, ci, input) = (32, 32, [64, 64]);
        let s = geometry(1, input, [3, 3], stride, [1, 1], [[1, 1], [1, 1]]).unwrap();
        let x = values(ci * input[0] * input[1], 5);
        let w = values(co * ci * 9, 6);
        let f = DirectFilters::new(&filters(&w), co, ci, [3, 3]).unwrap();
        let got = crate::testing::on_threads(2, || f.run(&x, &s, &mark)).unwrap();
        assert_marked_close(&got, &reference(&x, &w, co, ci, [3, 3], &s), "run");
        assert_eq!(f.winograd.get().is_some(), transformed, "stride {stride:?}");
    }
}

#[test]
fn the_filter_transform_is_g_g_gt() {
    // One filter, values chosen so that every entry of G g Gᵀ is exact in f32: for g = the
    // outer product of (1, 2, 3) with (1, 0, -1), G g Gᵀ = (G (1,2,3)) ⊗ (G (1,0,-1)) =
    // (1, 3, 1, 3) ⊗ (1, 0, 0, -1).
    let col = [1.0f32, 2.0, 3.0];
    let row = [1.0f32, 0.0, -1.0];
    let w: Vec<f32> = (0..9).map(|i| col[i / 3] * row[i % 3]).collect();
    let f = WinogradFilters::new(&w, 1, 1).unwrap();
    let (gc, gr) = ([1.0f32, 3.0, 1.0, 3.0], [1.0f32, 0.0, 0.0, -1.0]);
    for (a, ga) in gc.iter().enumerate() {
        for (b, gb) in gr.iter().enumerate() {
            // Point 4a + b of output channel 0 (rows padded to MR channels).
            assert_eq!(f.point(4 * a + b, 0, 0), ga * gb, "point ({a}, {b})");
        }
    }
}

#[test]
fn overflowing_or_mismatched_filters_are_refused() {
    assert!(WinogradFilters::new(&[0.0; 9], 2, 1).is_err());
    assert!(WinogradFilters::new(&[], usize::MAX / 4, 4).is_err());
}
