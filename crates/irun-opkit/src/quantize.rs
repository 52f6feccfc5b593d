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
