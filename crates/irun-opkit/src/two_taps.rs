//! Filters of two taps per output (linear resampling along a row): each output is
//! `-0.0 + w0 * row[k0] + w1 * row[k1]` in f64, the operations of `Iterator::sum` over the
//! two products in its order, rounded to f32. On AVX-512 eight outputs at a time, their
//! inputs gathered: the scalar loop was 80% of an f32 upsampling's time.

/// Every output's two taps `(k0, w0), (k1, w1)`, by position.
#[derive(Clone, Debug)]
pub struct TwoTaps {
    k0: Vec<usize>,
    k1: Vec<usize>,
    w0: Vec<f64>,
    w1: Vec<f64>,
    /// One past the largest index: the shortest row the taps may read.
    reach: usize,
}

impl TwoTaps {
    /// The taps of each output in order.
    pub fn new(taps: impl IntoIterator<Item = [(usize, f64); 2]>) -> TwoTaps {
        let mut t = TwoTaps {
            k0: Vec::new(),
            k1: Vec::new(),
            w0: Vec::new(),
            w1: Vec::new(),
            reach: 0,
        };
        for [(k0, w0), (k1, w1)] in taps {
            t.k0.push(k0);
            t.k1.push(k1);
            t.w0.push(w0);
            t.w1.push(w1);
            t.reach = t.reach.max(k0 + 1).max(k1 + 1);
        }
        t
    }

    /// Outputs.
    pub fn len(&self) -> usize {
        self.k0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.k0.is_empty()
    }

    /// `dst[d]` = output `d` of `row`, rounded to f32. Panics unless `dst` has one slot per
    /// output and `row` reaches every tap (a caller's bug).
    pub fn dots_f32(&self, row: &[f64], dst: &mut [f32]) {
        assert!(
            dst.len() == self.len() && self.reach <= row.len(),
            "two-tap filters out of bounds"
        );
        #[cfg(target_arch = "x86_64")]
        if crate::simd::unit() == crate::simd::Unit::Avx512 {
            // SAFETY: AVX-512F is present (`unit()` found it), `dst` has one slot per tap
            // pair (asserted, and the four arrays are pushed together), and every index is
            // below `self.reach <= row.len()` (asserted).
            unsafe { avx512::dots_f32(self, row, dst) };
            return;
        }
        self.scalar_from(0, row, dst);
    }

    /// Outputs `from..` of [`Self::dots_f32`], one at a time.
    #[inline(always)]
    fn scalar_from(&self, from: usize, row: &[f64], dst: &mut [f32]) {
        for d in from..dst.len() {
            let (x0, x1) = (row[self.k0[d]], row[self.k1[d]]);
            dst[d] = (-0.0 + self.w0[d] * x0 + self.w1[d] * x1) as f32;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// [`super::TwoTaps::dots_f32`]: the same operations, unfused, eight lanes at a time,
    /// rounded to nearest (the default MXCSR mode, as `as f32`).
    ///
    /// # Safety
    /// AVX-512F must be available, `dst.len() == t.len()`, and every index of `t` below
    /// `row.len()`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn dots_f32(t: &super::TwoTaps, row: &[f64], dst: &mut [f32]) {
        let n = dst.len();
        let base = row.as_ptr();
        let zero = _mm512_set1_pd(-0.0);
        let mut d = 0;
        while d + 8 <= n {
            // Indices below row.len() <= isize::MAX are the same numbers as i64, and each
            // element gathered lies inside `row`; the loads read `d..d + 8 <= n` of arrays
            // of length n.
            let k0 = _mm512_loadu_si512(t.k0.as_ptr().add(d).cast());
            let k1 = _mm512_loadu_si512(t.k1.as_ptr().add(d).cast());
            let x0 = _mm512_i64gather_pd::<8>(k0, base.cast());
            let x1 = _mm512_i64gather_pd::<8>(k1, base.cast());
            let w0 = _mm512_loadu_pd(t.w0.as_ptr().add(d));
            let w1 = _mm512_loadu_pd(t.w1.as_ptr().add(d));
            let sum = _mm512_add_pd(
                _mm512_add_pd(zero, _mm512_mul_pd(w0, x0)),
                _mm512_mul_pd(w1, x1),
            );
            _mm256_storeu_ps(dst.as_mut_ptr().add(d), _mm512_cvtpd_ps(sum));
            d += 8;
        }
        t.scalar_from(d, row, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit for bit the definition (`Iterator::sum` of the two products, rounded to f32) for
    /// every length from 0 to 40 (whole vectors and tails), taps anywhere in the row,
    /// repeated, equal, at both ends, weights of any sign (negative zeros included, whose
    /// sign the sum's -0.0 start keeps), values past f32's range and subnormal.
    #[test]
    fn every_output_is_the_sum_of_its_two_products() {
        let row: Vec<f64> = (0..37)
            .map(|i| match i % 9 {
                0 => -0.0,
                1 => 3.5e39,
                2 => 1e-310,
                _ => ((i * 53 % 41) as f64 - 20.0) * 0.37,
            })
            .collect();
        for n in 0..=40usize {
            let taps: Vec<[(usize, f64); 2]> = (0..n)
                .map(|d| {
                    let k0 = d * 7 % row.len();
                    let k1 = if d % 5 == 0 {
                        k0
                    } else {
                        (k0 + 1 + d % 3) % row.len()
                    };
                    let w = (d % 11) as f64 / 10.0;
                    let w0 = if d % 4 == 0 { -0.0 } else { 1.0 - w };
                    [(k0, w0), (k1, if d % 6 == 0 { -w } else { w })]
                })
                .collect();
            let want: Vec<u32> = taps
                .iter()
                .map(|t| (t.iter().map(|&(k, w)| w * row[k]).sum::<f64>() as f32).to_bits())
                .collect();
            let mut got = vec![f32::NAN; n];
            TwoTaps::new(taps.iter().copied()).dots_f32(&row, &mut got);
            let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{n} outputs");
        }
    }

    #[test]
    #[should_panic(expected = "two-tap filters out of bounds")]
    fn a_row_short_of_a_tap_is_refused() {
        let t = TwoTaps::new([[(0, 0.5), (4, 0.5)]]);
        t.dots_f32(&[1.0; 4], &mut [0.0]);
    }
}
