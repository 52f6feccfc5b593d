//! Roll-7 (`torch.roll`, `tf.roll`): the data shifted cyclically along some axes. Inputs
//! `data`, `shift` and `axes` (integers, each a scalar or 1-D); one shift per axis, or one
//! scalar shift for every listed axis. An axis listed twice moves by the sum of its shifts;
//! negative shifts move towards the start and negative axes count from the end. Output `[i]`
//! along a rolled axis of size `d` reads input `[(i - shift) mod d]`: one [`AxisMap`] copy,
//! whose rows are two slice copies when the last axis rolls.

use crate::attrs::AttrReader;
use crate::axis_map::AxisMap;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::util::{known_ints, norm_axis};

#[derive(Debug)]
pub struct Roll;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Roll))
}

const NAME: &str = "Roll-7";

/// The shift of each axis of `dims`, in `0..dim`, from the inputs' values.
fn shifts(dims: &[usize], shift: &[i64], axes: &[i64]) -> Result<Vec<usize>, OpError> {
    if shift.len() != 1 && shift.len() != axes.len() {
        return Err(OpError::input(
            1,
            codes::SHAPE,
            format!(
                "{NAME}: {} shifts for {} axes (give one shift, or one per axis)",
                shift.len(),
                axes.len()
            ),
        ));
    }
    let mut total = vec![0i128; dims.len()];
    for (i, &a) in axes.iter().enumerate() {
        let a = norm_axis(a, dims.len(), Some(2), NAME)?;
        total[a] += shift[if shift.len() == 1 { 0 } else { i }] as i128;
    }
    Ok(total
        .iter()
        .zip(dims)
        .map(|(&s, &d)| {
            if d == 0 {
                0
            } else {
                s.rem_euclid(d as i128) as usize
            }
        })
        .collect())
}

impl Op for Roll {
    fn name(&self) -> &'static str {
        NAME
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, NAME)?;
        for slot in [1, 2] {
            let f = &inputs[slot];
            if f.ty != irun_tensor::ElementType::Dynamic && !f.ty.is_integral_number() {
                return Err(OpError::input(
                    slot,
                    codes::ELEMENT_TYPE,
                    format!("{NAME}: input {slot} must be integers, got {}", f.ty),
                ));
            }
            if f.rank().is_some_and(|r| r > 1) {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!("{NAME}: input {slot} {} must be a scalar or 1-D", f.shape),
                ));
            }
        }
        let scalar_shift = inputs[1].rank() == Some(0);
        if !scalar_shift && !inputs[1].shape.compatible(&inputs[2].shape) {
            return Err(OpError::input(
                1,
                codes::SHAPE,
                format!(
                    "{NAME}: shift {} and axes {} differ (a 1-D shift has one value per axis)",
                    inputs[1].shape, inputs[2].shape
                ),
            ));
        }
        let data = &inputs[0];
        if data.rank() == Some(0) {
            return Err(OpError::input(
                0,
                codes::RANK,
                format!("{NAME}: the data must have at least one dim"),
            ));
        }
        if let (Some(rank), Some(axes)) = (data.rank(), known_ints(&inputs[2])) {
            for &a in &axes {
                norm_axis(a, rank, Some(2), NAME)?;
            }
        }
        Ok(vec![Fact::new(data.ty, data.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, shift, axes] = take_inputs::<3>(inputs, NAME)?;
        let ints = |t: &Value, slot: usize| {
            t.to_i64_vec().ok_or_else(|| {
                OpError::input(
                    slot,
                    codes::BAD_VALUE,
                    format!("{NAME}: input {slot} must be integers"),
                )
            })
        };
        let dims = data.shape().to_vec();
        let by = shifts(&dims, &ints(&shift, 1)?, &ints(&axes, 2)?)?;
        if by.iter().all(|&s| s == 0) {
            return Ok(vec![data]);
        }
        let tables = dims
            .iter()
            .zip(&by)
            .map(|(&d, &s)| (0..d).map(|o| Some((o + d - s) % d)).collect())
            .collect();
        let map = AxisMap::new(tables, &dims, NAME)?;
        Ok(vec![map.apply(&data, None, NAME)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn roll(data: Tensor, shift: &[i64], axes: &[i64]) -> Result<Tensor, OpError> {
        let vec = |v: &[i64]| i64s(&[v.len()], v);
        run(&Roll, vec![data, vec(shift), vec(axes)]).map(|mut v| v.remove(0))
    }

    #[test]
    fn the_specification_example_rolls_rows_and_columns() {
        // 3 x 4 of 1..12 rolled by (2, 1) along (0, 1).
        let x = i32s(&[3, 4], &(1..=12).collect::<Vec<_>>());
        let out = roll(x, &[2, 1], &[0, 1]).unwrap();
        assert_eq!(out, i32s(&[3, 4], &[8, 5, 6, 7, 12, 9, 10, 11, 4, 1, 2, 3]));
    }

    #[test]
    fn a_scalar_shift_applies_to_every_axis_and_repeats_add_up() {
        let x = f32s(&[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let scalar = i64s(&[], &[-1]);
        let out = run(&Roll, vec![x.clone(), scalar, i64s(&[2], &[0, -1])]).unwrap();
        // Rows by -1 (of 2: swap), columns by -1: [1, 2, 0].
        assert_eq!(out[0], f32s(&[2, 3], &[4.0, 5.0, 3.0, 1.0, 2.0, 0.0]));
        // Axis 1 twice: 2 + 2 = 4 = 1 (mod 3); a shift of a whole dim is no move.
        assert_eq!(
            roll(x.clone(), &[2, 2, 6], &[1, 1, 0]).unwrap(),
            f32s(&[2, 3], &[2.0, 0.0, 1.0, 5.0, 3.0, 4.0])
        );
        assert_eq!(roll(x.clone(), &[3], &[1]).unwrap(), x);
    }

    #[test]
    fn shapes_and_axes_are_checked() {
        let e = roll(f32s(&[2, 3], &[0.0; 6]), &[1, 2], &[0]).unwrap_err();
        assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(1)));
        let e = roll(f32s(&[2, 3], &[0.0; 6]), &[1], &[2]).unwrap_err();
        assert!(e.message.contains("out of the range"), "{}", e.message);
        let e = Roll
            .infer(&[fact(F32, "2,3"), fact(I64, "2"), fact(I64, "3")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let e = Roll
            .infer(&[fact(F32, "2,3"), fact(F32, "1"), fact(I64, "1")])
            .unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        assert_eq!(
            infer1(&Roll, &[fact(F32, "?,3"), fact(I64, ""), fact(I64, "2")])
                .unwrap()
                .shape
                .to_string(),
            "[?,3]"
        );
    }
}
