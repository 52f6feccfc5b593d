//! FakeQuantize-1's formula, shared by the op and the kernels that apply it to their output:
//! `x` at or below the lower of the input range's ends gives `output_low`, above the higher
//! `output_high`, else the level `round_half_even((x - il) / (ih - il) * (levels - 1))`
//! scaled back into the output range, every step in the one float type.

/// The formula in one float type (`l` is `levels - 1`), and its level of an `x` inside the
/// input range.
macro_rules! fake_quantize_in {
    ($name:ident, $level:ident, $f:ty) => {
        /// The level of `x` inside the input range: `round_half_even((x - il) / (ih - il) *
        /// l)`, the one rounding of the op.
        #[inline(always)]
        pub fn $level(x: $f, il: $f, ih: $f, l: $f) -> $f {
            ((x - il) / (ih - il) * l).round_ties_even()
        }

        #[inline(always)]
        pub fn $name(x: $f, il: $f, ih: $f, ol: $f, oh: $f, l: $f) -> $f {
            if x <= il.min(ih) {
                ol
            } else if x > il.max(ih) {
                oh
            } else {
                $level(x, il, ih, l) / l * (oh - ol) + ol
            }
        }
    };
}
fake_quantize_in!(fake_quantize_f32, level_f32, f32);
fake_quantize_in!(fake_quantize_f64, level_f64, f64);

/// The byte of a level `k` (an integer from 0 to 255, as f32): the low byte of `2^23 + k`,
/// which f32 holds exactly with `k` in its last mantissa bits. A vector add and a truncation,
/// where `k as u8` (saturating, NaN-checking) compiles to a branchy conversion per element.
#[inline(always)]
fn level_byte(k: f32) -> u8 {
    (k + 8_388_608.0).to_bits() as u8
}

/// The ranges of one FakeQuantize-1 for one channel (or for all), as a kernel applies it
/// to its output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FakeQuantizeRange {
    pub input_low: f32,
    pub input_high: f32,
    pub output_low: f32,
    pub output_high: f32,
    /// `levels - 1`, as f32.
    pub last_level: f32,
}

impl FakeQuantizeRange {
    /// The op's f32 result for `x`.
    #[inline(always)]
    pub fn apply(&self, x: f32) -> f32 {
        fake_quantize_f32(
            x,
            self.input_low,
            self.input_high,
            self.output_low,
            self.output_high,
            self.last_level,
        )
    }

    /// Applies `ranges` (one for all channels, or one per channel) to `planes`, whole
    /// channel planes of `plane` values from channel `first`: each plane its channel's.
    pub fn apply_to_planes(
        ranges: &[FakeQuantizeRange],
        planes: &mut [f32],
        first: usize,
        plane: usize,
    ) {
        if ranges.is_empty() {
            return;
        }
        for (i, values) in planes.chunks_mut(plane.max(1)).enumerate() {
            ranges[(first + i) % ranges.len()].apply_all(values);
        }
    }

    /// The level `x` lands on (0 ..= `last_level`), for a range whose input ends are in
    /// order (`input_low < input_high`); NaN for NaN.
    #[inline(always)]
    pub fn level(&self, x: f32) -> f32 {
        if x <= self.input_low {
            0.0
        } else if x > self.input_high {
            self.last_level
        } else {
            level_f32(x, self.input_low, self.input_high, self.last_level)
        }
    }

    /// The output value of level `k`: `output_low` and `output_high` at the ends (what the
    /// op gives below and above the input range), `k / l * (oh - ol) + ol` between. Inside
    /// the range the op rounds the top level to `(oh - ol) + ol`, which may be an ulp off
    /// `output_high`; the levels form takes the end itself, the exact value of the level.
    #[inline(always)]
    pub fn value_of_level(&self, k: u8) -> f32 {
        let k = f32::from(k);
        if k <= 0.0 {
            self.output_low
        } else if k >= self.last_level {
            self.output_high
        } else {
            k / self.last_level * (self.output_high - self.output_low) + self.output_low
        }
    }

    /// [`Self::value_of_level`] of every byte.
    pub fn level_values(&self) -> [f32; 256] {
        std::array::from_fn(|k| self.value_of_level(k as u8))
    }

    /// Writes the level of each of `src` into `dst` (as long); whether any was NaN (which
    /// has no level: its byte is then 0). For a range whose input ends are in order and with
    /// at most 256 levels.
    pub fn levels_into(&self, src: &[f32], dst: &mut [u8]) -> bool {
        let mut nan = false;
        for (d, &x) in dst.iter_mut().zip(src) {
            nan |= x.is_nan();
            // `max` takes 0 for NaN.
            *d = level_byte(self.level(x).max(0.0));
        }
        nan
    }

    /// Applies it to every element of `v`, at the widest vector unit.
    pub fn apply_all(&self, v: &mut [f32]) {
        crate::simd::widest(
            #[inline(always)]
            || {
                for x in v.iter_mut() {
                    *x = self.apply(*x);
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(levels: u32) -> FakeQuantizeRange {
        FakeQuantizeRange {
            input_low: -1.3,
            input_high: 2.7,
            output_low: -0.9,
            output_high: 3.1,
            last_level: (levels - 1) as f32,
        }
    }

    /// Inputs below, at, inside and above the range, every tie of 16 levels, NaN and the
    /// infinities.
    fn inputs(q: &FakeQuantizeRange) -> Vec<f32> {
        let mut x: Vec<f32> = (0..400).map(|i| -1.5 + 0.0113 * i as f32).collect();
        let step = (q.input_high - q.input_low) / q.last_level;
        x.extend((0..16).map(|k| q.input_low + (k as f32 + 0.5) * step));
        x.extend([
            q.input_low,
            q.input_high,
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
        ]);
        x
    }

    /// A level's value is the op's output for every input that lands on it, but for the
    /// top level inside the range, where the op's rounding may be an ulp off the end.
    #[test]
    fn a_levels_value_is_what_the_op_gives_its_inputs() {
        for levels in [2, 16, 255, 256] {
            let q = range(levels);
            for x in inputs(&q).into_iter().filter(|x| !x.is_nan()) {
                let k = q.level(x);
                assert!((0.0..=q.last_level).contains(&k) && k.fract() == 0.0, "{x}");
                let (got, want) = (q.value_of_level(k as u8), q.apply(x));
                if k == q.last_level && x <= q.input_high {
                    assert!((got - want).abs() <= f32::EPSILON * want.abs(), "{x}");
                } else {
                    assert_eq!(got.to_bits(), want.to_bits(), "{levels} {x}");
                }
            }
        }
    }

    /// The vector pass gives every element the scalar level, and reports NaN.
    #[test]
    fn levels_into_is_the_level_of_each_value() {
        let q = range(256);
        let x = inputs(&q);
        let mut got = vec![7u8; x.len()];
        assert!(q.levels_into(&x, &mut got));
        for (&g, &v) in got.iter().zip(&x) {
            let want = if v.is_nan() { 0 } else { q.level(v) as u8 };
            assert_eq!(g, want, "{v}");
        }
        let finite: Vec<f32> = x.into_iter().filter(|v| !v.is_nan()).collect();
        assert!(!q.levels_into(&finite, &mut got));
        for k in 0..=255u8 {
            assert_eq!(level_byte(f32::from(k)), k);
        }
    }
}
