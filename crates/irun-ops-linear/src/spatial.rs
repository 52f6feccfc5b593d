//! The spatial attributes Convolution, GroupConvolution and the pools share, and the output
//! size rules (docs/semantics.md, section 3): `explicit` pads, `valid` (no pads), `same_upper` and
//! `same_lower` (output `ceil(in / s)`, the odd pad cell at the end or the start), and the
//! pools' `floor`, `ceil` and `ceil_torch` rounding.

use irun_tensor::Dim;

use crate::attrs::AttrReader;
use crate::op::{codes, OpError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoPad {
    Explicit,
    Valid,
    SameUpper,
    SameLower,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    Floor,
    Ceil,
    CeilTorch,
}

/// Strides, pads, dilations and kernel sizes per spatial dim, and the padding rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Spatial {
    pub strides: Vec<usize>,
    pub pads_begin: Vec<usize>,
    pub pads_end: Vec<usize>,
    pub dilations: Vec<usize>,
    pub auto_pad: AutoPad,
    pub rounding: Rounding,
}

/// A comma-separated list of non-negative integers (`strides="2,2"`); `default` when omitted.
pub fn list(
    a: &AttrReader,
    name: &'static str,
    default: Option<Vec<usize>>,
) -> Result<Vec<usize>, OpError> {
    let Some(v) = a.get(name) else {
        return default.ok_or_else(|| {
            OpError::attribute(
                name,
                format!("{} requires the attribute `{name}`", a.layer.type_name),
            )
        });
    };
    if v.value.trim().is_empty() {
        return Ok(Vec::new());
    }
    v.value
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            OpError::attribute(
                name,
                format!(
                    "`{name}=\"{}\"` is not a list of non-negative integers",
                    v.value
                ),
            )
        })
}

impl AutoPad {
    /// The `auto_pad` attribute (`notset` is `explicit`; omitted, `explicit`).
    pub fn read(a: &AttrReader) -> Result<AutoPad, OpError> {
        Ok(
            match a.enum_or(
                "auto_pad",
                &["explicit", "valid", "same_upper", "same_lower", "notset"],
                "explicit",
            )? {
                "valid" => AutoPad::Valid,
                "same_upper" => AutoPad::SameUpper,
                "same_lower" => AutoPad::SameLower,
                _ => AutoPad::Explicit,
            },
        )
    }
}

impl Spatial {
    /// Reads the attributes; `rounding` only for pools (`ceil_torch` only from MaxPool-14 and
    /// AvgPool-14), `dilations` absent for AvgPool (all 1).
    pub fn read(
        a: &AttrReader,
        pool: bool,
        ceil_torch: bool,
        dilations: bool,
    ) -> Result<Spatial, OpError> {
        let auto_pad = AutoPad::read(a)?;
        let rounding = if pool {
            let allowed: &[&str] = if ceil_torch {
                &["floor", "ceil", "ceil_torch"]
            } else {
                &["floor", "ceil"]
            };
            match a.enum_or("rounding_type", allowed, "floor")? {
                "ceil" => Rounding::Ceil,
                "ceil_torch" => Rounding::CeilTorch,
                _ => Rounding::Floor,
            }
        } else {
            Rounding::Floor
        };
        let strides = list(a, "strides", None)?;
        let n = strides.len();
        let s = Spatial {
            strides,
            pads_begin: list(a, "pads_begin", Some(vec![0; n]))?,
            pads_end: list(a, "pads_end", Some(vec![0; n]))?,
            dilations: if dilations {
                list(a, "dilations", Some(vec![1; n]))?
            } else {
                vec![1; n]
            },
            auto_pad,
            rounding,
        };
        if s.strides.contains(&0) || s.dilations.contains(&0) {
            return Err(OpError::attribute(
                "strides",
                "strides and dilations must be positive",
            ));
        }
        if [s.pads_begin.len(), s.pads_end.len(), s.dilations.len()]
            .iter()
            .any(|&l| l != n)
        {
            return Err(OpError::attribute(
                "pads_begin",
                "strides, pads_begin, pads_end and dilations must have one value per spatial dim",
            ));
        }
        Ok(s)
    }

    pub fn rank(&self) -> usize {
        self.strides.len()
    }

    /// `(pad_begin, pad_end, out)` of spatial dim `d` of size `input` with kernel `k`.
    pub fn dim(&self, d: usize, input: usize, k: usize) -> Result<(usize, usize, usize), OpError> {
        let (s, ek) = (self.strides[d], (k.max(1) - 1) * self.dilations[d] + 1);
        let same = |upper: bool| {
            let out = input.div_ceil(s);
            let total = ((out.max(1) - 1) * s + ek).saturating_sub(input);
            let small = total / 2;
            if upper {
                (small, total - small, out)
            } else {
                (total - small, small, out)
            }
        };
        let (pb, pe) = match self.auto_pad {
            AutoPad::SameUpper => return Ok(same(true)),
            AutoPad::SameLower => return Ok(same(false)),
            AutoPad::Valid => (0, 0),
            AutoPad::Explicit => (self.pads_begin[d], self.pads_end[d]),
        };
        let span = input + pb + pe;
        if span < ek {
            return Err(OpError::new(codes::SHAPE, format!(
                "spatial dim {d}: the kernel ({ek} with dilation) is larger than the padded input ({span})")));
        }
        let out = match self.rounding {
            Rounding::Floor => (span - ek) / s + 1,
            Rounding::Ceil => (span - ek).div_ceil(s) + 1,
            Rounding::CeilTorch => {
                let out = (span - ek).div_ceil(s) + 1;
                if (out - 1) * s >= input + pb {
                    out - 1
                } else {
                    out
                }
            }
        };
        Ok((pb, pe, out))
    }

    /// The output dim for a partial input dim (dynamic stays dynamic).
    pub fn out_dim(&self, d: usize, input: Dim, k: usize) -> Result<Dim, OpError> {
        match input.get_static() {
            Some(n) => Ok(Dim::fixed(self.dim(d, n as usize, k)?.2 as u64)),
            None => Ok(Dim::DYNAMIC),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(auto_pad: AutoPad, rounding: Rounding, s: usize, p: (usize, usize)) -> Spatial {
        Spatial {
            strides: vec![s],
            pads_begin: vec![p.0],
            pads_end: vec![p.1],
            dilations: vec![1],
            auto_pad,
            rounding,
        }
    }

    #[test]
    fn output_sizes() {
        assert_eq!(
            sp(AutoPad::Explicit, Rounding::Floor, 2, (3, 3))
                .dim(0, 224, 7)
                .unwrap(),
            (3, 3, 112)
        );
        assert_eq!(
            sp(AutoPad::Valid, Rounding::Floor, 1, (9, 9))
                .dim(0, 5, 3)
                .unwrap(),
            (0, 0, 3)
        );
        assert_eq!(
            sp(AutoPad::SameUpper, Rounding::Floor, 1, (0, 0))
                .dim(0, 5, 2)
                .unwrap(),
            (0, 1, 5)
        );
        assert_eq!(
            sp(AutoPad::SameLower, Rounding::Floor, 1, (0, 0))
                .dim(0, 5, 2)
                .unwrap(),
            (1, 0, 5)
        );
        // 3x3, k2 s2, pads 1: ceil 3, ceil_torch 2.
        assert_eq!(
            sp(AutoPad::Explicit, Rounding::Ceil, 2, (1, 1))
                .dim(0, 3, 2)
                .unwrap()
                .2,
            3
        );
        assert_eq!(
            sp(AutoPad::Explicit, Rounding::CeilTorch, 2, (1, 1))
                .dim(0, 3, 2)
                .unwrap()
                .2,
            2
        );
        assert!(sp(AutoPad::Explicit, Rounding::Floor, 1, (0, 0))
            .dim(0, 2, 3)
            .is_err());
    }
}

/// The positions `lo..hi` of a run of `n` taps `start + k * step` that lie inside a row of
/// `len` values (`0 <= start + k * step < len`); those before `lo` and from `hi` are
/// padding.
#[inline(always)]
pub fn inside_run(start: isize, step: usize, len: usize, n: usize) -> (usize, usize) {
    let (s, len, n) = (step.max(1) as isize, len as isize, n as isize);
    let lo = if start >= 0 { 0 } else { (-start + s - 1) / s }.min(n);
    let hi = if start >= len {
        lo
    } else {
        ((len - start + s - 1) / s).clamp(lo, n)
    };
    (lo as usize, hi as usize)
}

/// `dst[k] = src[start + k * step]` where that lies inside `src`, `fill` where it does not: a run
/// of taps along one input row, padding on either side reading as `fill`. The in-bounds span is
/// computed once, so the copy has no per-element check (at step 1 it is one `memcpy`).
#[inline(always)]
pub fn gather_run<T: Copy>(src: &[T], start: isize, step: usize, fill: T, dst: &mut [T]) {
    let (lo, hi) = inside_run(start, step, src.len(), dst.len());
    dst[..lo].fill(fill);
    dst[hi..].fill(fill);
    if hi > lo {
        let (s, count) = (step.max(1), hi - lo);
        let from = &src[(start + (lo * s) as isize) as usize..][..(count - 1) * s + 1];
        if s == 1 {
            dst[lo..hi].copy_from_slice(from);
        } else if s == 2 {
            // Stride 2 (most strided pools and convolutions): the even elements of pairs,
            // which vectorises where indexing `from[2 * j]` does not.
            let (body, last) = dst[lo..hi].split_at_mut(count - 1);
            for (d, pair) in body.iter_mut().zip(from.chunks_exact(2)) {
                *d = pair[0];
            }
            last[0] = from[(count - 1) * 2];
        } else {
            for (j, d) in dst[lo..hi].iter_mut().enumerate() {
                *d = from[j * s];
            }
        }
    }
}

#[cfg(test)]
mod gather_tests {
    use super::gather_run;

    #[test]
    fn gather_run_reads_inside_and_fills_outside() {
        let src: Vec<i32> = (10..20).collect();
        for start in -7isize..14 {
            for step in 1..4usize {
                for n in 0..9usize {
                    let mut dst = vec![0; n];
                    gather_run(&src, start, step, -1, &mut dst);
                    let want: Vec<i32> = (0..n)
                        .map(|k| {
                            let i = start + (k * step) as isize;
                            if (0..10).contains(&i) {
                                src[i as usize]
                            } else {
                                -1
                            }
                        })
                        .collect();
                    assert_eq!(dst, want, "start {start} step {step} n {n}");
                }
            }
        }
    }
}
