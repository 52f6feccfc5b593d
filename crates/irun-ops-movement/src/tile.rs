//! Tile-1: the data repeated `repeats[i]` times along each axis (input 1, 1-D). A shorter
//! `repeats` is left-padded with 1s, a longer one pads the data's shape with 1s; 0 gives an
//! empty output and a negative repeat counts as 0. Each output dim is seen as (repeat, data
//! index) with stride 0 on the repeat: one strided copy.

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{expect_inputs, take_inputs, Op, OpError, Value};
use crate::strided::{row_major_strides, Strided};
use crate::util::{expect_int_type, ints, known_ints, output};

#[derive(Debug)]
pub struct Tile;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Tile))
}

/// Data dims and repeats padded to one rank.
fn aligned<T: Copy>(dims: &[T], one: T, repeats: &[i64]) -> (Vec<T>, Vec<u64>) {
    let rank = dims.len().max(repeats.len());
    let mut d = vec![one; rank - dims.len()];
    d.extend_from_slice(dims);
    let mut r = vec![1u64; rank - repeats.len()];
    r.extend(repeats.iter().map(|&x| x.max(0) as u64));
    (d, r)
}

impl Op for Tile {
    fn name(&self) -> &'static str {
        "Tile-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        expect_int_type(inputs, 1, self.name())?;
        let data = &inputs[0];
        let shape = match (data.shape.dims(), known_ints(&inputs[1])) {
            (Some(dims), Some(rep)) => {
                let (d, r) = aligned(dims, Dim::fixed(1), &rep);
                PartialShape::new(
                    d.iter()
                        .zip(&r)
                        .map(|(&d, &r)| match d.get_static() {
                            Some(n) => Dim::fixed(n * r),
                            None => Dim::interval(d.min() * r, d.max().map(|m| m * r))
                                .unwrap_or(Dim::DYNAMIC),
                        })
                        .collect(),
                )
            }
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, repeats] = take_inputs::<2>(inputs, self.name())?;
        let (dims, reps) = aligned(data.shape(), 1usize, &ints(&repeats, 1)?);
        let src = row_major_strides(&dims);
        let mut layout = Strided {
            out_shape: Vec::new(),
            base: 0,
            strides: Vec::new(),
        };
        for ((&d, &r), &s) in dims.iter().zip(&reps).zip(&src) {
            layout.out_shape.extend([r as usize, d]);
            layout.strides.extend([0, s]);
        }
        let words = layout.apply(&data, self.name())?;
        let shape: Vec<usize> = dims
            .iter()
            .zip(&reps)
            .map(|(&d, &r)| d * r as usize)
            .collect();
        Ok(vec![output(data.element_type(), shape, words)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn repeats_blocks() {
        let x = i32s(&[2, 2], &[1, 2, 3, 4]);
        let out = run(&Tile, vec![x.clone(), i64s(&[2], &[2, 1])]).unwrap();
        assert_eq!(out[0], i32s(&[4, 2], &[1, 2, 3, 4, 1, 2, 3, 4]));
        let out = run(&Tile, vec![x.clone(), i64s(&[1], &[2])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 4], &[1, 2, 1, 2, 3, 4, 3, 4]));
        let out = run(&Tile, vec![x.clone(), i64s(&[3], &[2, 1, -1])]).unwrap();
        assert_eq!(out[0].shape(), &[2, 2, 0]);
        let out = run(&Tile, vec![x, i64s(&[0], &[])]).unwrap();
        assert_eq!(out[0].shape(), &[2, 2]);
        let f = infer1(&Tile, &[fact(F32, "?,3"), i64_value(&[1, 1, 2])]).unwrap();
        assert_eq!(f.shape.to_string(), "[1,?,6]");
    }
}
