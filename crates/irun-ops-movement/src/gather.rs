//! Gather-1, -7 and -8: slices of `data` along `axis` (input 2, rank 0 or one element) picked by
//! `indices` (any integer rank, scalar included). Output shape `data[:axis] + indices[b:] +
//! data[axis+1:]`, where `batch_dims` b (v7/v8; negative counts from the indices' rank; v1 has
//! none) pairs the first b dims of data and indices.
//!
//! Indices: a negative one has the axis dim added. v8: one still outside `[-d, d-1]` gives a
//! zero slice (the spec; reference and CPU agree). v1/v7: the spec allows `[0, d-1]`; the
//! reference behaves as v8, which irun follows (OpenVINO CPU zeroes every negative index).
//! Copy-like: dispatched on element width.

use irun_tensor::{with_words, Dim, PartialShape, Word, WordVec};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::{count_from_end, IndexValues};
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::util::{expect_int_type, ints, known_ints, no_strings, norm_axis, output};

#[derive(Debug)]
pub struct Gather {
    pub version: u32,
    pub batch_dims: i64,
}

fn build(a: &AttrReader, version: u32) -> Result<Box<dyn Op>, OpError> {
    let batch_dims = if version == 1 {
        0
    } else {
        a.i64_or("batch_dims", Some(0))?
    };
    Ok(Box::new(Gather {
        version,
        batch_dims,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 1)
}

pub fn build_v7(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 7)
}

pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 8)
}

impl Gather {
    fn label(&self) -> &'static str {
        match self.version {
            1 => "Gather-1",
            7 => "Gather-7",
            _ => "Gather-8",
        }
    }

    /// `(axis, batch_dims)` normalised for these ranks.
    fn axes(
        &self,
        axis: i64,
        data_rank: usize,
        indices_rank: usize,
    ) -> Result<(usize, usize), OpError> {
        let name = self.label();
        let axis = norm_axis(axis, data_rank, Some(2), name)?;
        let b = if self.batch_dims < 0 {
            self.batch_dims + indices_rank as i64
        } else {
            self.batch_dims
        };
        if b < 0 || b as usize > axis || b as usize > indices_rank {
            return Err(OpError::attribute("batch_dims", format!(
                "{name}: batch_dims {} must be in [0, axis {axis}] and at most the indices' rank {indices_rank}", self.batch_dims)));
        }
        Ok((axis, b as usize))
    }
}

impl Op for Gather {
    fn name(&self) -> &'static str {
        self.label()
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.label())?;
        expect_int_type(inputs, 1, self.label())?;
        expect_int_type(inputs, 2, self.label())?;
        let (data, indices) = (&inputs[0], &inputs[1]);
        let axis = known_ints(&inputs[2]).and_then(|v| v.first().copied());
        let shape = match (data.shape.dims(), indices.shape.dims(), axis) {
            (Some(d), Some(i), Some(a)) => {
                let (axis, b) = self.axes(a, d.len(), i.len())?;
                let mut out: Vec<Dim> = Vec::new();
                for k in 0..b {
                    out.push(d[k].intersect(i[k]).ok_or_else(|| {
                        OpError::input(
                            1,
                            codes::SHAPE,
                            format!(
                                "{}: batch dim {k} of data {} and indices {} differ",
                                self.label(),
                                data.shape,
                                indices.shape
                            ),
                        )
                    })?);
                }
                out.extend_from_slice(&d[b..axis]);
                out.extend_from_slice(&i[b..]);
                out.extend_from_slice(&d[axis + 1..]);
                PartialShape::new(out)
            }
            (Some(d), Some(i), None) if self.batch_dims == 0 => {
                PartialShape::dynamic_of_rank(d.len() + i.len() - 1)
            }
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, indices, axis] = take_inputs::<3>(inputs, self.label())?;
        let a = *ints(&axis, 2)?
            .first()
            .ok_or_else(|| OpError::input(2, codes::RUN_SHAPE, "empty axis"))?;
        let (ds, is) = (data.shape(), indices.shape());
        let (axis, b) = self.axes(a, ds.len(), is.len())?;
        if ds[..b] != is[..b] {
            return Err(OpError::input(
                1,
                codes::RUN_SHAPE,
                format!("{}: batch dims of data and indices differ", self.label()),
            ));
        }
        let idx = IndexValues::of(&indices)
            .ok_or_else(|| OpError::input(1, codes::ELEMENT_TYPE, "indices must be integers"))?;
        let geo = Geometry {
            batch: ds[..b].iter().product(),
            outer: ds[b..axis].iter().product(),
            along: ds[axis],
            per_batch: is[b..].iter().product(),
            inner: ds[axis + 1..].iter().product(),
        };
        let indices = idx.to_vec();
        if is[b..] == [geo.along] && is_identity(&indices, geo.along) {
            // Every slice in its own place (a decoder's KV cache reordered by `beam_idx`
            // [0] at every step): the output is the data, shared rather than copied.
            return Ok(vec![data]);
        }
        let mut shape = ds[..axis].to_vec();
        shape.extend_from_slice(&is[b..]);
        shape.extend_from_slice(&ds[axis + 1..]);
        let words = data.words().ok_or_else(|| no_strings(self.label()))?;
        let out = with_words!(words, w => gather(w, &indices, &geo)?);
        Ok(vec![output(data.element_type(), shape, out)?])
    }
}

/// Whether `indices` (per batch, `along` of them) pick slices `0..along` in order, each
/// written as itself or counted from the end.
fn is_identity(indices: &[i64], along: usize) -> bool {
    let along = along as i64;
    along > 0
        && indices.chunks_exact(along as usize).all(|batch| {
            (0..along)
                .zip(batch)
                .all(|(j, &i)| i == j || i == j - along)
        })
}

/// `data` as `[batch, outer, along, inner]`, indices as `[batch, per_batch]`.
struct Geometry {
    batch: usize,
    outer: usize,
    along: usize,
    per_batch: usize,
    inner: usize,
}

/// How many slices ahead [`gather`] fetches the source of rows of a cache line or more.
const GATHER_AHEAD: usize = 8;

fn gather<W: Word>(src: &[W], idx: &[i64], g: &Geometry) -> Result<WordVec, OpError> {
    let slices = g.batch * g.outer * g.per_batch;
    if g.inner == 0 {
        return Ok(W::into_word_vec(Vec::new()));
    }
    let d = g.along as i64;
    let grain = g
        .inner
        .max(crate::kernel::PAR_MIN_ELEMENTS / g.inner * g.inner);
    // Whole slices per chunk (the grain is a multiple of `inner`), written straight into
    // the output, never zero-filled first.
    // Where slice `s` of the output comes from; `None` for an index out of range.
    let source = |s: usize| {
        let (bo, p) = (s / g.per_batch, s % g.per_batch);
        let (bb, o) = (bo / g.outer, bo % g.outer);
        let v = count_from_end(idx[bb * g.per_batch + p], d);
        (0..d)
            .contains(&v)
            .then(|| ((bb * g.outer + o) * g.along + v as usize) * g.inner)
    };
    // Rows of a cache line or more (a GNN's neighbour features) are fetched ahead: each comes
    // from a random place in a table larger than the caches.
    let ahead = if std::mem::size_of::<W>().saturating_mul(g.inner) >= 64 {
        GATHER_AHEAD
    } else {
        0
    };
    let out = par::build(slices * g.inner, grain, &|start, out| {
        let slices = start / g.inner..start / g.inner + out.remaining() / g.inner;
        if ahead == 0 {
            return gather_runs(src, idx, g, slices, out);
        }
        for s in slices.clone() {
            if s + ahead < slices.end {
                if let Some(from) = source(s + ahead) {
                    irun_opkit::simd::prefetch_read(&src[from..from + g.inner]);
                }
            }
            match source(s) {
                Some(from) => out.extend_from_slice(&src[from..from + g.inner]),
                // Out of range: the slice is zero.
                None => out.repeat(W::default(), g.inner),
            }
        }
    })?;
    Ok(W::into_word_vec(out))
}

/// Output slices `slices` of narrow rows, written run by run: the indices of one (batch,
/// outer) position share their source block, and the position advances by counting, so no
/// index pays the two divisions that locate it (a 1-D Gather of 25,600 floats spent 12 ns
/// an element in them).
fn gather_runs<W: Word>(
    src: &[W],
    idx: &[i64],
    g: &Geometry,
    slices: std::ops::Range<usize>,
    out: &mut par::Filler<'_, W>,
) {
    if slices.is_empty() {
        return;
    }
    let d = g.along as i64;
    let (bo, mut p) = (slices.start / g.per_batch, slices.start % g.per_batch);
    let (mut bb, mut o) = (bo / g.outer, bo % g.outer);
    let mut left = slices.len();
    while left > 0 {
        let take = (g.per_batch - p).min(left);
        let ids = &idx[bb * g.per_batch + p..][..take];
        let block = &src[(bb * g.outer + o) * g.along * g.inner..][..g.along * g.inner];
        // A negative value still below zero after counting from the end wraps to a huge
        // `usize`: out of range, a zero slice.
        let row_of = |i: i64| Some(count_from_end(i, d) as usize).filter(|&v| v < g.along);
        if g.inner == 1 {
            for &i in ids {
                out.push(row_of(i).map_or(W::default(), |v| block[v]));
            }
        } else {
            for &i in ids {
                match row_of(i) {
                    Some(v) => out.extend_from_slice(&block[v * g.inner..][..g.inner]),
                    None => out.repeat(W::default(), g.inner),
                }
            }
        }
        left -= take;
        p = 0;
        o += 1;
        if o == g.outer {
            (o, bb) = (0, bb + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn v8(batch_dims: i64) -> Gather {
        Gather {
            version: 8,
            batch_dims,
        }
    }

    /// Indices that pick every slice in its place (per batch, some counted from the end)
    /// give the data itself, shared; any other order is gathered.
    #[test]
    fn every_slice_in_its_place_shares_the_data() {
        let x = std::sync::Arc::new(f32s(
            &[2, 3, 2],
            &[1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.],
        ));
        let shared = |op: &Gather, indices: Tensor, axis: i64| {
            let inputs = vec![
                x.clone(),
                std::sync::Arc::new(indices),
                std::sync::Arc::new(i64s(&[], &[axis])),
            ];
            let out = op.eval(inputs).unwrap();
            assert_eq!(*out[0], *x);
            std::sync::Arc::ptr_eq(&out[0], &x)
        };
        assert!(shared(&v8(0), i64s(&[2], &[0, -1]), 0));
        assert!(shared(&v8(0), i32s(&[3], &[0, 1, -1]), 1));
        assert!(shared(&v8(1), i64s(&[2, 3], &[0, 1, 2, -3, 1, 2]), 1));
        // A batch's indices out of order, too few, or repeated: gathered.
        let out = run(
            &v8(0),
            vec![(*x).clone(), i64s(&[2], &[1, 0]), i64s(&[], &[0])],
        )
        .unwrap();
        assert_eq!(
            &out[0].values::<f32>().unwrap()[..6],
            &[7., 8., 9., 10., 11., 12.]
        );
        let out = run(
            &v8(0),
            vec![(*x).clone(), i64s(&[1, 2], &[0, 1]), i64s(&[], &[0])],
        )
        .unwrap();
        assert_eq!(out[0].shape(), &[1, 2, 3, 2]);
        let out = run(
            &v8(0),
            vec![(*x).clone(), i64s(&[2], &[0, 0]), i64s(&[], &[0])],
        )
        .unwrap();
        assert_eq!(
            &out[0].values::<f32>().unwrap()[6..],
            &[1., 2., 3., 4., 5., 6.]
        );
    }

    #[test]
    fn negative_and_out_of_range_indices() {
        let x = i32s(&[5], &[1, 2, 3, 4, 5]);
        let out = run(
            &v8(0),
            vec![x, i64s(&[4], &[0, -1, -5, 7]), i64s(&[], &[0])],
        )
        .unwrap();
        assert_eq!(out[0], i32s(&[4], &[1, 5, 1, 0]));
    }

    /// Rows of a cache line or more take the path that fetches sources ahead: every row
    /// still comes from its index, negative ones from the end, out-of-range ones as zeros,
    /// up to the last row of the table and of the output.
    #[test]
    fn wide_rows_fetched_ahead() {
        let (rows, width) = (7usize, 20usize);
        let table: Vec<i32> = (0..(rows * width) as i32).collect();
        let idx: Vec<i64> = (0..40).map(|k| [6, -1, 0, 9, 3, -7, -8][k % 7]).collect();
        let out = run(
            &v8(0),
            vec![
                i32s(&[rows, width], &table),
                i64s(&[idx.len()], &idx),
                i64s(&[], &[0]),
            ],
        )
        .unwrap();
        let want: Vec<i32> = idx
            .iter()
            .flat_map(|&v| {
                let v = if v < 0 { v + rows as i64 } else { v };
                (0..width).map(move |c| {
                    if (0..rows as i64).contains(&v) {
                        (v as usize * width + c) as i32
                    } else {
                        0
                    }
                })
            })
            .collect();
        assert_eq!(out[0], i32s(&[idx.len(), width], &want));
    }

    #[test]
    fn axis_and_scalar_indices() {
        let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let out = run(&v8(0), vec![x.clone(), i32s(&[], &[2]), i64s(&[], &[1])]).unwrap();
        assert_eq!(out[0], f32s(&[2], &[3., 6.]));
        let out = run(
            &v8(0),
            vec![x, i32s(&[2, 2], &[1, 0, 1, 1]), i64s(&[1], &[0])],
        )
        .unwrap();
        assert_eq!(out[0].shape(), &[2, 2, 3]);
        assert_eq!(
            &out[0].values::<f32>().unwrap()[..6],
            &[4., 5., 6., 1., 2., 3.]
        );
    }

    #[test]
    fn batch_dims() {
        // data [2,3], indices [2,2], batch_dims 1, axis 1: out[b][k] = data[b][idx[b][k]].
        let x = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let out = run(
            &v8(-1),
            vec![x, i64s(&[2, 2], &[2, 0, 1, 1]), i64s(&[], &[1])],
        )
        .unwrap();
        assert_eq!(out[0], f32s(&[2, 2], &[3., 1., 5., 5.]));
        let f = infer1(
            &v8(1),
            &[fact(F32, "2,3,4"), fact(I64, "2,5"), i64_scalar(2)],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[2,3,5]");
        let e = infer1(
            &v8(2),
            &[fact(F32, "2,3,4"), fact(I64, "2,5"), i64_scalar(1)],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::BAD_ATTRIBUTE);
    }

    #[test]
    fn runs_of_indices_across_tasks_and_blocks() {
        // Batch 2, outer 37, 5 along the axis, rows of 1 and 3, 1000 indices per batch (some
        // negative, some out of range): chunks start inside runs and runs cross blocks.
        let (batch, outer, along, per) = (2usize, 37usize, 5usize, 1000usize);
        let idx: Vec<i64> = (0..batch * per).map(|k| (k * 7 % 15) as i64 - 7).collect();
        for inner in [1usize, 3] {
            let n = batch * outer * along * inner;
            let data: Vec<i32> = (0..n as i32).collect();
            let out = run(
                &v8(1),
                vec![
                    i32s(&[batch, outer, along, inner], &data),
                    i64s(&[batch, per], &idx),
                    i64s(&[], &[2]),
                ],
            )
            .unwrap();
            let mut want = Vec::new();
            for b in 0..batch {
                for o in 0..outer {
                    for p in 0..per {
                        let v = idx[b * per + p];
                        let v = if v < 0 { v + along as i64 } else { v };
                        for c in 0..inner {
                            want.push(if (0..along as i64).contains(&v) {
                                data[((b * outer + o) * along + v as usize) * inner + c]
                            } else {
                                0
                            });
                        }
                    }
                }
            }
            assert_eq!(
                out[0],
                i32s(&[batch, outer, per, inner], &want),
                "inner {inner}"
            );
        }
    }
}
