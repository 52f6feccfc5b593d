//! numpy broadcasting, written once: for inference on partial shapes ([`broadcast_shapes`]) and
//! for kernels on static shapes ([`Broadcast`]), which every n-ary elementwise op uses.

use irun_tensor::{fmt_shape, Dim, PartialShape};

use crate::op::{codes, OpError};

/// OpenVINO's numpy broadcast of two dims: a static 1 takes the other; two static dims must be
/// equal; a static dim `d` other than 1 against an interval wins if the interval admits `d` or
/// 1; two intervals give an interval that holds every possible result. `None`: incompatible.
pub fn broadcast_dims(a: Dim, b: Dim) -> Option<Dim> {
    let one = Dim::fixed(1);
    if a == one {
        return Some(b);
    }
    if b == one {
        return Some(a);
    }
    match (a.get_static(), b.get_static()) {
        (Some(x), Some(y)) => (x == y).then_some(a),
        (Some(x), None) => (b.contains(x) || b.contains(1)).then_some(a),
        (None, Some(y)) => (a.contains(y) || a.contains(1)).then_some(b),
        (None, None) => {
            if !a.contains(1) && !b.contains(1) {
                return a.intersect(b);
            }
            let max = match (a.max(), b.max()) {
                (Some(x), Some(y)) => Some(x.max(y)),
                _ => None,
            };
            Dim::interval(a.min().min(b.min()), max)
        }
    }
}

/// The numpy broadcast of `shapes` (right-aligned; missing leading dims are 1). A dynamic rank
/// anywhere gives a dynamic rank. `Err(j)`: input `j` cannot broadcast with the shapes before
/// it.
pub fn broadcast_shapes(shapes: &[&PartialShape]) -> Result<PartialShape, usize> {
    let mut dims: Vec<Dim> = Vec::new();
    let mut dynamic_rank = false;
    for (j, s) in shapes.iter().enumerate() {
        let Some(sd) = s.dims() else {
            dynamic_rank = true;
            continue;
        };
        if sd.len() > dims.len() {
            let mut grown = sd[..sd.len() - dims.len()].to_vec();
            grown.extend_from_slice(&dims);
            // The new leading dims came from `sd` itself: merge only the overlap below.
            let lead = sd.len() - dims.len();
            for (k, &d) in sd[lead..].iter().enumerate() {
                grown[lead + k] = broadcast_dims(grown[lead + k], d).ok_or(j)?;
            }
            dims = grown;
        } else {
            let lead = dims.len() - sd.len();
            for (k, &d) in sd.iter().enumerate() {
                dims[lead + k] = broadcast_dims(dims[lead + k], d).ok_or(j)?;
            }
        }
    }
    Ok(if dynamic_rank {
        PartialShape::dynamic_rank()
    } else {
        PartialShape::new(dims)
    })
}

/// [`broadcast_shapes`] with OpenVINO's error: the port of the input that does not fit and
/// every input shape.
pub fn broadcast_or_error(shapes: &[&PartialShape]) -> Result<PartialShape, OpError> {
    broadcast_shapes(shapes).map_err(|j| {
        let all: Vec<String> = shapes.iter().map(|s| s.to_string()).collect();
        OpError::input(
            j,
            codes::SHAPE,
            format!(
                "Argument shapes are inconsistent: {} do not broadcast (numpy rules)",
                all.join(" and ")
            ),
        )
    })
}

/// How `N` static input shapes broadcast to one output: the output cut into rows of the
/// innermost (collapsed) dim, and for each input where a row starts and whether it moves
/// along the row (step 1) or repeats one value (step 0).
#[derive(Clone, Debug)]
pub struct Broadcast<const N: usize> {
    out_shape: Vec<usize>,
    /// Output dims after dropping 1s and merging neighbours every input treats alike.
    dims: Vec<usize>,
    /// Element strides of each input per collapsed dim; 0 where the input is broadcast.
    strides: [Vec<usize>; N],
}

impl<const N: usize> Broadcast<N> {
    /// The broadcast of `shapes`, or a run-time error naming them when they do not broadcast.
    pub fn new(shapes: [&[usize]; N]) -> Result<Broadcast<N>, OpError> {
        let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut out_shape = vec![1usize; rank];
        for s in &shapes {
            let lead = rank - s.len();
            for (k, &d) in s.iter().enumerate() {
                let o = &mut out_shape[lead + k];
                if *o == 1 {
                    *o = d;
                } else if d != 1 && d != *o {
                    let all: Vec<String> = shapes.iter().map(|s| fmt_shape(s)).collect();
                    return Err(OpError::new(
                        codes::RUN_SHAPE,
                        format!(
                            "shapes {} do not broadcast (numpy rules)",
                            all.join(" and ")
                        ),
                    ));
                }
            }
        }
        // Strides of each input over the output dims, 0 where it is broadcast.
        let full: [Vec<usize>; N] = std::array::from_fn(|j| {
            let s = shapes[j];
            let lead = rank - s.len();
            let mut st = vec![0usize; rank];
            let mut acc = 1usize;
            for k in (0..s.len()).rev() {
                st[lead + k] = if s[k] == 1 { 0 } else { acc };
                acc *= s[k];
            }
            st
        });
        // Collapse: drop output dims of 1; merge dim k into the one before when every input
        // is contiguous across them (stride[k-1] == stride[k] * dim[k]) or broadcast in both.
        let mut dims: Vec<usize> = Vec::new();
        let mut strides: [Vec<usize>; N] = std::array::from_fn(|_| Vec::new());
        for k in 0..rank {
            let d = out_shape[k];
            if d == 1 {
                continue;
            }
            let mergeable = !dims.is_empty()
                && (0..N).all(|j| {
                    let prev = *strides[j].last().expect("same length as dims");
                    let cur = full[j][k];
                    (prev == 0 && cur == 0) || (cur != 0 && prev == cur * d)
                });
            if mergeable {
                *dims.last_mut().expect("not empty") *= d;
                for j in 0..N {
                    *strides[j].last_mut().expect("not empty") = full[j][k];
                }
            } else {
                dims.push(d);
                for j in 0..N {
                    strides[j].push(full[j][k]);
                }
            }
        }
        Ok(Broadcast {
            out_shape,
            dims,
            strides,
        })
    }

    pub fn out_shape(&self) -> &[usize] {
        &self.out_shape
    }

    pub fn out_len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Calls `row(out_start, starts, steps, len)` for the runs of output positions in `range`
    /// (in order) that stay within one row: input `j` is read at `starts[j] + i * steps[j]`
    /// for `i` in `0..len`, with `steps[j]` 0 or 1.
    #[inline]
    pub fn rows(
        &self,
        range: std::ops::Range<usize>,
        mut row: impl FnMut(usize, [usize; N], [usize; N], usize),
    ) {
        if range.is_empty() {
            return;
        }
        let Some((&inner, outer)) = self.dims.split_last() else {
            // Every dim is 1: one position, every input at 0.
            row(range.start, [0; N], [0; N], range.len().min(1));
            return;
        };
        let steps: [usize; N] =
            std::array::from_fn(|j| *self.strides[j].last().expect("same length as dims"));
        // Coordinates of the first position, innermost last.
        let mut coords = vec![0usize; outer.len()];
        let mut rest = range.start / inner;
        for k in (0..outer.len()).rev() {
            coords[k] = rest % outer[k];
            rest /= outer[k];
        }
        let mut pos = range.start;
        let mut col = range.start % inner;
        while pos < range.end {
            let len = (inner - col).min(range.end - pos);
            let starts: [usize; N] = std::array::from_fn(|j| {
                let base: usize = coords
                    .iter()
                    .zip(&self.strides[j])
                    .map(|(&c, &s)| c * s)
                    .sum();
                base + col * steps[j]
            });
            row(pos, starts, steps, len);
            pos += len;
            col = 0;
            for k in (0..outer.len()).rev() {
                coords[k] += 1;
                if coords[k] < outer[k] {
                    break;
                }
                coords[k] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps(s: &str) -> PartialShape {
        PartialShape::parse(s).unwrap()
    }

    #[test]
    fn partial_shapes_broadcast_as_openvino_does() {
        let b = |a: &str, c: &str| broadcast_shapes(&[&ps(a), &ps(c)]).map(|s| s.to_string());
        assert_eq!(b("2,3", "3").unwrap(), ps("2,3").to_string());
        assert_eq!(b("2,1,4", "3,1").unwrap(), ps("2,3,4").to_string());
        assert_eq!(b("1", "0").unwrap(), ps("0").to_string());
        assert_eq!(b("", "").unwrap(), ps("").to_string());
        assert_eq!(b("?,3", "4,1").unwrap(), ps("4,3").to_string());
        assert_eq!(b("2..5", "3").unwrap(), ps("3").to_string());
        assert_eq!(b("2..5", "3..8").unwrap(), ps("3..5").to_string());
        assert_eq!(b("...", "3").unwrap(), ps("...").to_string());
        assert_eq!(b("2,3", "4"), Err(1));
        assert_eq!(b("4..6", "3"), Err(1));
        let three = broadcast_shapes(&[&ps("2,3"), &ps("3"), &ps("")]).unwrap();
        assert_eq!(three.to_string(), ps("2,3").to_string());
    }

    /// Every output position's input offsets, by brute force against the row walk.
    #[test]
    fn rows_visit_every_position_with_numpy_offsets() {
        let cases: [(&[usize], &[usize]); 6] = [
            (&[2, 3, 4], &[4]),
            (&[2, 1, 4], &[3, 1]),
            (&[5], &[5]),
            (&[], &[3]),
            (&[2, 3], &[2, 1]),
            (&[1, 1], &[1]),
        ];
        for (a, b) in cases {
            let bc = Broadcast::<2>::new([a, b]).unwrap();
            let out = bc.out_shape().to_vec();
            let n: usize = out.iter().product();
            let offset = |shape: &[usize], flat: usize| {
                let mut coords = vec![0; out.len()];
                let mut r = flat;
                for k in (0..out.len()).rev() {
                    coords[k] = r % out[k];
                    r /= out[k];
                }
                let lead = out.len() - shape.len();
                let mut off = 0;
                for (k, &d) in shape.iter().enumerate() {
                    off = off * d + if d == 1 { 0 } else { coords[lead + k] };
                }
                off
            };
            for split in [0, 1, n / 2, n] {
                let mut seen = Vec::new();
                for r in [0..split.min(n), split.min(n)..n] {
                    bc.rows(r, |pos, starts, steps, len| {
                        for i in 0..len {
                            seen.push((
                                pos + i,
                                starts[0] + i * steps[0],
                                starts[1] + i * steps[1],
                            ));
                        }
                    });
                }
                let want: Vec<_> = (0..n).map(|p| (p, offset(a, p), offset(b, p))).collect();
                assert_eq!(seen, want, "{a:?} {b:?} split {split}");
            }
        }
        assert!(Broadcast::<2>::new([&[2, 3], &[4]]).is_err());
    }
}
