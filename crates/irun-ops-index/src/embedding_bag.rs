//! The embedding bags: EmbeddingBagOffsetsSum-3 and EmbeddingBagOffsets-15 (bags given by
//! offsets into a 1-D indices list), EmbeddingBagPackedSum-3 and EmbeddingBagPacked-15 (bags
//! are the rows of a 2-D indices tensor). `out[b] = reduce(table[i] * w)` over the bag, with
//! optional `per_sample_weights` (sum only) and the v15 `reduction` (sum default, or mean).
//! An empty bag (offsets only) is `table[default_index]`, unweighted, when a non-negative
//! default index is given, else zeros. Offsets must be non-decreasing and below the number
//! of indices (what OpenVINO accepts); an index outside the table is a run-time error.
//! Floats; accumulated in f64 per output element in bag order.

use std::ops::Range;
use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::IndexValues;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};

#[derive(Debug)]
pub struct EmbeddingBag {
    pub packed: bool,
    pub mean: bool,
    pub name: &'static str,
}

fn build(
    a: &AttrReader,
    packed: bool,
    v15: bool,
    name: &'static str,
) -> Result<Box<dyn Op>, OpError> {
    let mean = v15 && a.enum_or("reduction", &["sum", "mean"], "sum")? == "mean";
    Ok(Box::new(EmbeddingBag { packed, mean, name }))
}

pub fn build_offsets_sum(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, false, false, "EmbeddingBagOffsetsSum-3")
}
pub fn build_offsets(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, false, true, "EmbeddingBagOffsets-15")
}
pub fn build_packed_sum(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, true, false, "EmbeddingBagPackedSum-3")
}
pub fn build_packed(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, true, true, "EmbeddingBagPacked-15")
}

/// The bags: all indices, each bag's range of positions in them (for weights and
/// messages), and the default index for empty bags.
struct Bags {
    indices: Vec<i64>,
    ranges: Vec<Range<usize>>,
    default: Option<i64>,
}

/// How many indices ahead of the row being summed the kernel prefetches.
const PREFETCH_AHEAD: usize = 8;

/// A hint to bring the first cache lines of `row` (up to 256 bytes) into the cache.
#[inline(always)]
fn prefetch<T>(row: &[T]) {
    let values = 256 / std::mem::size_of::<T>().max(1);
    irun_opkit::simd::prefetch_read(&row[..row.len().min(values)]);
}

impl EmbeddingBag {
    /// Input slots: table, indices, then (offsets) offsets, default_index, weights; (packed)
    /// weights.
    fn weights_slot(&self) -> usize {
        if self.packed {
            2
        } else {
            4
        }
    }

    fn bags(&self, inputs: &[Value]) -> Result<Bags, OpError> {
        let idx = IndexValues::of(&inputs[1])
            .ok_or_else(|| OpError::input(1, codes::ELEMENT_TYPE, "indices must be integers"))?
            .to_vec();
        if self.packed {
            let s = inputs[1].shape();
            if s.len() != 2 {
                return Err(OpError::input(
                    1,
                    codes::RUN_SHAPE,
                    format!("{}: indices must be 2-D", self.name),
                ));
            }
            let (b, k) = (s[0], s[1]);
            return Ok(Bags {
                indices: idx,
                ranges: (0..b).map(|r| r * k..(r + 1) * k).collect(),
                default: None,
            });
        }
        let offsets = IndexValues::of(
            inputs
                .get(2)
                .ok_or_else(|| OpError::new(codes::ARITY, "offsets missing"))?,
        )
        .ok_or_else(|| OpError::input(2, codes::ELEMENT_TYPE, "offsets must be integers"))?
        .to_vec();
        let n = idx.len() as i64;
        for (b, w) in offsets.windows(2).enumerate() {
            if w[1] < w[0] {
                return Err(OpError::input(
                    2,
                    codes::BAD_VALUE,
                    format!("{}: offsets decrease at bag {}", self.name, b + 1),
                ));
            }
        }
        if let Some(&o) = offsets.iter().find(|&&o| o < 0 || (o >= n && n > 0)) {
            return Err(OpError::input(
                2,
                codes::BAD_VALUE,
                format!("{}: offset {o} is outside the {n} indices", self.name),
            ));
        }
        let default = match inputs.get(3) {
            Some(d) => IndexValues::of(d).and_then(|v| v.to_vec().first().copied()),
            None => None,
        };
        let ranges = offsets
            .iter()
            .enumerate()
            .map(|(b, &start)| start as usize..offsets.get(b + 1).copied().unwrap_or(n) as usize)
            .collect();
        Ok(Bags {
            indices: idx,
            ranges,
            default,
        })
    }

    fn run<T: Scalar>(
        &self,
        inputs: &[Value],
        to: impl Fn(T) -> f64 + Copy,
        from: impl Fn(f64) -> T,
    ) -> Result<Tensor, OpError> {
        let table = &inputs[0];
        let tv = table
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let rows = table.shape().first().copied().unwrap_or(0);
        let width: usize = table.shape()[1..].iter().product();
        let weights: Option<&[T]> = match inputs.get(self.weights_slot()) {
            Some(w) => Some(w.values::<T>().ok_or_else(|| {
                OpError::input(
                    self.weights_slot(),
                    codes::ELEMENT_TYPE,
                    "weights must have the table's type",
                )
            })?),
            None => None,
        };
        let Bags {
            indices,
            ranges,
            default,
        } = self.bags(inputs)?;
        let row_of = |i: i64, p: usize| -> Result<usize, OpError> {
            usize::try_from(i).ok().filter(|&r| r < rows).ok_or_else(|| {
                OpError::input(1, codes::INDEX_OUT_OF_RANGE, format!("{}: index {i} at position {p} of input 1 (indices) is outside the table's {rows} rows", self.name))
            })
        };
        let weight = |p: usize| -> Result<f64, OpError> {
            match weights {
                None => Ok(1.0),
                Some(w) => w.get(p).map(|&w| to(w)).ok_or_else(|| {
                    OpError::input(
                        self.weights_slot(),
                        codes::RUN_SHAPE,
                        format!("{}: no weight for index position {p}", self.name),
                    )
                }),
            }
        };
        // One bag: the weighted sum (or mean) of its rows, in f64.
        let bag_into = |bag: &Range<usize>, dst: &mut [f64]| -> Result<(), OpError> {
            if bag.is_empty() {
                if let Some(d) = default.filter(|&d| d >= 0) {
                    let r = row_of(d, 0)?;
                    for (o, &t) in dst.iter_mut().zip(&tv[r * width..(r + 1) * width]) {
                        *o = to(t);
                    }
                }
                return Ok(());
            }
            for p in bag.clone() {
                // The rows are random reads of a table far larger than the caches: asking for
                // the row a few indices ahead overlaps those misses (DLRM's eight
                // EmbeddingBags: 0.33 to 0.26 ms).
                if let Some(&ahead) = indices.get(p + PREFETCH_AHEAD) {
                    if let Some(row) = usize::try_from(ahead).ok().filter(|&r| r < rows) {
                        prefetch(&tv[row * width..]);
                    }
                }
                let r = row_of(indices[p], p)?;
                let w = weight(p)?;
                for (o, &t) in dst.iter_mut().zip(&tv[r * width..(r + 1) * width]) {
                    *o += to(t) * w;
                }
            }
            if self.mean {
                for o in dst.iter_mut() {
                    *o /= bag.len() as f64;
                }
            }
            Ok(())
        };
        let mut out = vec![0f64; ranges.len() * width];
        if width > 0 {
            // On the calling thread: handing 4 tasks of 64 bags to the pool took 3x longer
            // than the whole op (measured on DLRM's 256 bags; the rows' cache misses dominate).
            for (bag, dst) in ranges.iter().zip(out.chunks_mut(width)) {
                bag_into(bag, dst)?;
            }
        }
        let mut shape = vec![ranges.len()];
        shape.extend_from_slice(&table.shape()[1..]);
        Tensor::new(
            table.element_type(),
            shape,
            T::wrap(out.into_iter().map(from).collect()),
        )
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }
}

impl Op for EmbeddingBag {
    fn name(&self) -> &'static str {
        self.name
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let (min, max) = if self.packed { (2, 3) } else { (3, 5) };
        expect_inputs_between(inputs, min, max, self.name)?;
        if self.mean && inputs.len() > self.weights_slot() {
            return Err(OpError::attribute(
                "reduction",
                format!(
                    "{}: per_sample_weights cannot be used with reduction=mean",
                    self.name
                ),
            ));
        }
        let table = &inputs[0];
        let bags = if self.packed {
            inputs[1]
                .shape
                .dims()
                .and_then(|d| d.first().copied())
                .unwrap_or(Dim::DYNAMIC)
        } else {
            inputs[2]
                .shape
                .dims()
                .and_then(|d| d.first().copied())
                .unwrap_or(Dim::DYNAMIC)
        };
        let shape = match table.shape.dims() {
            Some(d) if !d.is_empty() => {
                let mut out = vec![bags];
                out.extend_from_slice(&d[1..]);
                PartialShape::new(out)
            }
            Some(_) => {
                return Err(OpError::input(
                    0,
                    codes::RANK,
                    format!("{}: the table must have rank 1 or more", self.name),
                ))
            }
            None => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(table.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let ty = inputs
            .first()
            .ok_or_else(|| OpError::new(codes::ARITY, "no table"))?
            .element_type();
        let out = match ty {
            ElementType::F32 => self.run::<f32>(&inputs, |v| v as f64, |v| v as f32),
            ElementType::F64 => self.run::<f64>(&inputs, |v| v, |v| v),
            ElementType::F16 => self.run::<f16>(&inputs, f16::to_f64, f16::from_f64),
            ElementType::Bf16 => self.run::<bf16>(&inputs, bf16::to_f64, bf16::from_f64),
            ty => Err(OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!("{} on {ty}", self.name),
            )),
        }?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn table() -> Tensor {
        f32s(&[3, 2], &[1., 2., 10., 20., 100., 200.])
    }

    #[test]
    fn offsets_weights_default_and_mean() {
        let op = EmbeddingBag {
            packed: false,
            mean: false,
            name: "EmbeddingBagOffsetsSum-3",
        };
        let out = run(
            &op,
            vec![
                table(),
                i64s(&[3], &[0, 2, 1]),
                i64s(&[3], &[0, 2, 2]),
                i64s(&[], &[1]),
                f32s(&[3], &[1., 0.5, 2.]),
            ],
        )
        .unwrap();
        assert_eq!(
            out[0],
            f32s(&[3, 2], &[51., 102., 10., 20., 20., 40.]),
            "bag 1 is empty: the default row, unweighted"
        );
        let mean = EmbeddingBag {
            packed: false,
            mean: true,
            name: "EmbeddingBagOffsets-15",
        };
        let out = run(
            &mean,
            vec![table(), i32s(&[3], &[0, 2, 1]), i32s(&[2], &[0, 2])],
        )
        .unwrap();
        assert_eq!(out[0], f32s(&[2, 2], &[50.5, 101., 10., 20.]));
        let e = run(&op, vec![table(), i64s(&[1], &[3]), i64s(&[1], &[0])]).unwrap_err();
        assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE);
    }

    #[test]
    fn too_few_weights_are_an_error_not_a_panic() {
        let op = EmbeddingBag {
            packed: false,
            mean: false,
            name: "EmbeddingBagOffsetsSum-3",
        };
        let e = run(
            &op,
            vec![
                table(),
                i64s(&[3], &[0, 2, 1]),
                i64s(&[2], &[0, 1]),
                i64s(&[], &[-1]),
                f32s(&[2], &[1., 0.5]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::RUN_SHAPE);
        assert!(
            e.message.contains("no weight for index position 2"),
            "{}",
            e.message
        );
    }

    #[test]
    fn packed_rows() {
        let op = EmbeddingBag {
            packed: true,
            mean: false,
            name: "EmbeddingBagPackedSum-3",
        };
        let out = run(&op, vec![table(), i64s(&[2, 2], &[0, 1, 2, 2])]).unwrap();
        assert_eq!(out[0], f32s(&[2, 2], &[11., 22., 200., 400.]));
    }
}
