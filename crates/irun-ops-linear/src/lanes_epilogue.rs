//! The epilogue's activation (on AVX-512 and AVX2 vectors) and ReduceMax's step (on AVX-512
//! vectors), for kernels that finish their sums in registers (`pointwise.rs`, `small_k.rs`):
//! bit for bit what `Epilogue::apply` and ReduceMax's f32 fold compute value by value.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use irun_opkit::epilogue::Activation;

/// The activation of each lane: ReLU keeps `x` where `x > 0` or NaN (not less-or-equal,
/// unordered) and gives `+0` elsewhere; HSwish is `x * t / 6` with `t = x + 3` set to 0
/// where `t < 0` and to 6 where `t > 6` (ordered comparisons, so a NaN `t` stays), the
/// multiply and the divide rounded separately, as the op computes them.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn activate(activation: Activation, x: __m512) -> __m512 {
    let zero = _mm512_setzero_ps();
    match activation {
        Activation::None => x,
        Activation::Relu => _mm512_maskz_mov_ps(_mm512_cmp_ps_mask::<_CMP_NLE_UQ>(x, zero), x),
        Activation::HSwish => {
            let six = _mm512_set1_ps(6.0);
            let t = _mm512_add_ps(x, _mm512_set1_ps(3.0));
            let t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask::<_CMP_LT_OQ>(t, zero), zero);
            let t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask::<_CMP_GT_OQ>(t, six), six);
            _mm512_div_ps(_mm512_mul_ps(x, t), six)
        }
    }
}

/// [`activate`] on AVX2's 8 lanes: the same comparisons, the same roundings.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn activate8(activation: Activation, x: __m256) -> __m256 {
    let zero = _mm256_setzero_ps();
    match activation {
        Activation::None => x,
        Activation::Relu => _mm256_and_ps(_mm256_cmp_ps::<_CMP_NLE_UQ>(x, zero), x),
        Activation::HSwish => {
            let six = _mm256_set1_ps(6.0);
            let t = _mm256_add_ps(x, _mm256_set1_ps(3.0));
            let t = _mm256_blendv_ps(t, zero, _mm256_cmp_ps::<_CMP_LT_OQ>(t, zero));
            let t = _mm256_blendv_ps(t, six, _mm256_cmp_ps::<_CMP_GT_OQ>(t, six));
            _mm256_div_ps(_mm256_mul_ps(x, t), six)
        }
    }
}

/// ReduceMax's step in each lane: `x` replaces the maximum so far `a` where greater
/// (ordered) or NaN; elsewhere, equal values (±0) included, `a` stays.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
pub(crate) fn max_step(a: __m512, x: __m512) -> __m512 {
    let wins = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, a) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
    _mm512_mask_mov_ps(a, wins, x)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The step lane by lane against ReduceMax's scalar rule: ties of ±0 keep the first,
    /// NaN wins from either side, -inf loses. Without AVX-512 the kernels that use the step
    /// do not run; the row maxima then come from `row_max::fold_groups`, checked on the same
    /// pairs against the outcomes written out.
    #[test]
    fn max_step_is_reduce_max_s_rule() {
        let pairs = [
            (0.0, -0.0),
            (-0.0, 0.0),
            (1.0, f32::NAN),
            (f32::NAN, 1.0),
            (f32::NEG_INFINITY, -3.0),
            (2.0, 2.0),
            (-1.0, -2.0),
            (5.0, f32::INFINITY),
        ];
        if !crate::avx512f() {
            eprintln!("max step: row_max::fold_groups (no AVX-512)");
            let outcomes = [
                0.0,
                -0.0,
                f32::NAN,
                f32::NAN,
                -3.0,
                2.0,
                -1.0,
                f32::INFINITY,
            ];
            // Eight groups of two rows of one value: the pair's first, then its second.
            let got = crate::row_max::fold_groups(8, 2, 1, &|first, rows, scratch| {
                scratch.clear();
                for r in first..first + rows {
                    let (a, x) = pairs[r / 2];
                    scratch.push(if r % 2 == 0 { a } else { x });
                }
            })
            .unwrap();
            for ((g, w), p) in got.iter().zip(outcomes).zip(pairs) {
                assert_eq!(g.to_bits(), w.to_bits(), "{p:?}");
            }
            return;
        }
        let a: Vec<f32> = (0..16).map(|i| pairs[i % 8].0).collect();
        let x: Vec<f32> = (0..16).map(|i| pairs[i % 8].1).collect();
        let mut got = [0f32; 16];
        // SAFETY: AVX-512F was found above; each pointer has 16 values.
        unsafe {
            let v = max_step(_mm512_loadu_ps(a.as_ptr()), _mm512_loadu_ps(x.as_ptr()));
            _mm512_storeu_ps(got.as_mut_ptr(), v);
        }
        for i in 0..16 {
            let want = if x[i] > a[i] || x[i].is_nan() {
                x[i]
            } else {
                a[i]
            };
            assert_eq!(got[i].to_bits(), want.to_bits(), "{} then {}", a[i], x[i]);
        }
    }
}
