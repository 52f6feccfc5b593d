//! Weighted sums of a few pixels of a channel-last image (`c` values a pixel), a group of
//! channels at a time: ROIAlign's samples and GridSample's points read every channel of
//! each of their taps, one contiguous run per tap, where a plane per channel read the same
//! few scattered values once per channel.

/// Channels summed at once: their sums stay in registers (four 4-lane f64 vectors).
pub const GROUP: usize = 16;

/// `Σ wt * img[k * c + first + j]` over `taps` (pixel `k`, weight `wt`) for `j < G`, in f64,
/// from -0.0 and in the taps' order, each product rounded before its sum (never fused): per
/// channel the bits of `Iterator::sum` over the same products. Fixed-size loops over whole
/// groups, so that the conversions, products and sums are vector instructions.
#[inline(always)]
pub fn weighted_sums<const G: usize>(
    img: &[f32],
    c: usize,
    first: usize,
    taps: impl IntoIterator<Item = (usize, f64)>,
) -> [f64; G] {
    let mut sums = [-0.0f64; G];
    for (k, wt) in taps {
        let px: &[f32; G] = img[k * c + first..][..G].try_into().expect("G values");
        for j in 0..G {
            sums[j] += wt * px[j] as f64;
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_of_each_channel_in_tap_order() {
        let c = 20;
        let img: Vec<f32> = (0..3 * c).map(|i| (i as f32 * 0.7).sin()).collect();
        let taps = [(2, 0.25), (0, -1.5), (1, 1e-3)];
        let got = weighted_sums::<GROUP>(&img, c, 3, taps);
        for (j, &g) in got.iter().enumerate() {
            let want: f64 = taps
                .iter()
                .map(|&(k, wt)| wt * img[k * c + 3 + j] as f64)
                .sum();
            assert_eq!(g.to_bits(), want.to_bits(), "channel {j}");
        }
        assert_eq!(weighted_sums::<1>(&img, c, 0, []), [-0.0]);
    }
}
