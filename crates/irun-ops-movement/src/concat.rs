//! Concat-1: the inputs joined along `axis` (required by the spec; omitted, 0, as the IR loader
//! reads it; negative counts from the end). One or more inputs of one element type and rank,
//! equal dims off the axis; scalars are rejected. Zero-size inputs are fine.

use irun_tensor::{with_words, Dim, PartialShape, Word};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, Op, OpError, Value};
use crate::par;
use crate::util::{no_strings, norm_axis, output};

#[derive(Debug)]
pub struct Concat {
    pub axis: i64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let axis = a.i64_or("axis", Some(0))?;
    Ok(Box::new(Concat { axis }))
}

impl Op for Concat {
    fn name(&self) -> &'static str {
        "Concat-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        if inputs.is_empty() {
            return Err(OpError::new(
                codes::ARITY,
                "Concat-1 takes at least one input",
            ));
        }
        let slots: Vec<usize> = (0..inputs.len()).collect();
        let ty = crate::op::same_element_type(inputs, &slots, self.name())?;
        let Some(rank) = inputs.iter().find_map(Fact::rank) else {
            return Ok(vec![Fact::new(ty, PartialShape::dynamic_rank())]);
        };
        if rank == 0 {
            return Err(OpError::input(
                0,
                codes::RANK,
                "Concat-1: scalars cannot be concatenated",
            ));
        }
        let axis = norm_axis(self.axis, rank, None, self.name())?;
        let mut out: Vec<Dim> = vec![Dim::DYNAMIC; rank];
        let (mut lo, mut hi) = (0u64, Some(0u64));
        for (j, f) in inputs.iter().enumerate() {
            let Some(dims) = f.shape.dims() else {
                hi = None;
                continue;
            };
            if dims.len() != rank {
                return Err(OpError::input(
                    j,
                    codes::RANK,
                    format!(
                        "Concat-1: input {j} has shape {}, rank {} where input 0 has rank {rank}",
                        f.shape,
                        dims.len()
                    ),
                ));
            }
            for (k, &d) in dims.iter().enumerate() {
                if k == axis {
                    lo += d.min();
                    hi = hi.zip(d.max()).map(|(a, b)| a + b);
                } else {
                    out[k] = out[k].intersect(d).ok_or_else(|| {
                        OpError::input(
                            j,
                            codes::SHAPE,
                            format!("Concat-1: input {j} has shape {}, which differs from the others off axis {axis} (dim {k})", f.shape),
                        )
                    })?;
                }
            }
        }
        out[axis] = Dim::interval(lo, hi).unwrap_or(Dim::DYNAMIC);
        Ok(vec![Fact::new(ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let first = inputs
            .first()
            .ok_or_else(|| OpError::new(codes::ARITY, "Concat-1 takes at least one input"))?;
        let (ty, rank) = (first.element_type(), first.shape().len());
        let axis = norm_axis(self.axis, rank, None, self.name())?;
        let mut shape = first.shape().to_vec();
        shape[axis] = 0;
        for (j, t) in inputs.iter().enumerate() {
            let same_off_axis = t.shape().len() == rank
                && (0..rank).all(|k| k == axis || t.shape()[k] == first.shape()[k]);
            if !same_off_axis || t.element_type() != ty {
                return Err(OpError::input(
                    j,
                    codes::RUN_SHAPE,
                    format!("Concat-1: input {j} does not fit input 0"),
                ));
            }
            shape[axis] += t.shape()[axis];
        }
        let outer: usize = shape[..axis].iter().product();
        let inner: usize = shape[axis + 1..].iter().product();
        let rows: Vec<usize> = inputs.iter().map(|t| t.shape()[axis] * inner).collect();
        let words = first.words().ok_or_else(|| no_strings(self.name()))?;
        let out = with_words!(words, w => join(w, &inputs, &rows, outer)?);
        Ok(vec![output(ty, shape, out)?])
    }
}

/// Each output row is the inputs' rows `rows[j]` long, in order.
/// (`_first` is input 0's words; it fixes the width `W` the others share.) The output is
/// written in pieces of whole output elements, in parallel, each piece copying the runs of
/// the rows it covers: a join of few long rows (channels of one image) is as parallel as
/// one of many short ones, and nothing is zero-filled first.
fn join<W: Word>(
    _first: &[W],
    inputs: &[Value],
    rows: &[usize],
    outer: usize,
) -> Result<irun_tensor::WordVec, OpError> {
    let srcs: Vec<&[W]> = inputs
        .iter()
        .map(|t| t.words().and_then(W::of))
        .collect::<Option<_>>()
        .ok_or_else(|| OpError::new(codes::RUN_SHAPE, "Concat-1: inputs of different widths"))?;
    let row: usize = rows.iter().sum();
    // An output too large to stay in the cache goes around it (no read for ownership).
    let stream = outer * row * std::mem::size_of::<W>() >= irun_opkit::stream::STREAM_MIN_BYTES;
    let out = par::build(
        outer * row,
        crate::kernel::PAR_MIN_ELEMENTS,
        &|start, fill| {
            let end = start + fill.remaining();
            let mut at = start;
            while at < end {
                let (o, mut within) = (at / row, at % row);
                // The input whose run holds `within`, and where in it.
                let (mut j, mut first) = (0, 0);
                while within >= first + rows[j] {
                    first += rows[j];
                    j += 1;
                }
                within -= first;
                let take = (rows[j] - within).min(end - at);
                let base = o * rows[j] + within;
                if stream {
                    fill.stream_from_slice(&srcs[j][base..base + take]);
                } else {
                    fill.extend_from_slice(&srcs[j][base..base + take]);
                }
                at += take;
            }
        },
    )?;
    Ok(W::into_word_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn joins_along_the_axis() {
        let op = Concat { axis: -1 };
        let out = run(
            &op,
            vec![
                f32s(&[2, 1], &[1., 2.]),
                f32s(&[2, 2], &[3., 4., 5., 6.]),
                f32s(&[2, 0], &[]),
            ],
        );
        assert_eq!(out.unwrap()[0], f32s(&[2, 3], &[1., 3., 4., 2., 5., 6.]));
        let op = Concat { axis: 0 };
        let out = run(&op, vec![bools(&[1], &[true]), bools(&[2], &[false, true])]).unwrap();
        assert_eq!(out[0], bools(&[3], &[true, false, true]));
    }

    /// Rows longer than a parallel piece, few of them (the channels of one image), and an
    /// empty input between: every element lands where a row-by-row join puts it.
    #[test]
    fn long_rows_are_joined_in_pieces() {
        let (a, b) = (70_001usize, 33_333usize);
        for outer in [1usize, 3] {
            let x: Vec<f32> = (0..outer * a).map(|i| i as f32).collect();
            let y: Vec<f32> = (0..outer * b).map(|i| -(i as f32)).collect();
            let mut want = Vec::new();
            for o in 0..outer {
                want.extend_from_slice(&x[o * a..(o + 1) * a]);
                want.extend_from_slice(&y[o * b..(o + 1) * b]);
            }
            let out = run(
                &Concat { axis: 1 },
                vec![
                    f32s(&[outer, a], &x),
                    f32s(&[outer, 0], &[]),
                    f32s(&[outer, b], &y),
                ],
            )
            .unwrap();
            assert_eq!(out[0], f32s(&[outer, a + b], &want), "outer {outer}");
        }
    }

    #[test]
    fn inference_checks_ranks_and_dims() {
        let op = Concat { axis: 1 };
        let f = infer1(
            &op,
            &[fact(F32, "2,3"), fact(F32, "?,4"), fact(F32, "2,1..5")],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[2,8..12]");
        let e = infer1(&op, &[fact(F32, "2,3"), fact(F32, "2,3,1")]).unwrap_err();
        assert_eq!(e.code, codes::RANK);
        let e = infer1(&op, &[fact(F32, "2,3"), fact(F32, "3,3")]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        assert_eq!(e.port, Some((irun_ir::PortDirection::Input, 1)));
        let e = infer1(&Concat { axis: 0 }, &[fact(F32, ""), fact(F32, "")]).unwrap_err();
        assert_eq!(e.code, codes::RANK);
    }
}
