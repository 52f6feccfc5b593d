//! Reverse-1: the data with the order of some axes reversed. Input 1 names them as `mode`
//! (required) says: `index`, a 1-D integer list of axes (negative allowed, empty: no axis);
//! `mask`, a 1-D boolean of the data's rank. One strided copy reading the reversed axes
//! backwards.

use irun_tensor::ElementType;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::strided::{row_major_strides, Strided};
use crate::util::{known_ints, norm_axis, output};

#[derive(Debug)]
pub struct Reverse {
    pub by_mask: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    a.required("mode")?;
    let mode = a.enum_or("mode", &["index", "mask"], "index")?;
    Ok(Box::new(Reverse {
        by_mask: mode == "mask",
    }))
}

impl Reverse {
    /// Which axes of a rank-`rank` tensor `axes` (the input's values, booleans as 0/1)
    /// reverses.
    fn reversed(&self, rank: usize, axes: &[i64]) -> Result<Vec<bool>, OpError> {
        if self.by_mask {
            if axes.len() != rank {
                return Err(OpError::input(
                    1,
                    codes::SHAPE,
                    format!(
                        "Reverse-1: a mask of {} for data of rank {rank}",
                        axes.len()
                    ),
                ));
            }
            return Ok(axes.iter().map(|&v| v != 0).collect());
        }
        let mut out = vec![false; rank];
        for &a in axes {
            let a = norm_axis(a, rank, Some(1), "Reverse-1")?;
            if out[a] {
                return Err(OpError::input(
                    1,
                    codes::BAD_VALUE,
                    format!("Reverse-1: axis {a} is listed twice"),
                ));
            }
            out[a] = true;
        }
        Ok(out)
    }

    fn check_axes_type(&self, ty: ElementType) -> Result<(), OpError> {
        let ok = ty == ElementType::Dynamic
            || if self.by_mask {
                ty == ElementType::Boolean
            } else {
                ty.is_integral_number()
            };
        if ok {
            return Ok(());
        }
        let want = if self.by_mask {
            "boolean"
        } else {
            "an integer type"
        };
        Err(OpError::input(
            1,
            codes::ELEMENT_TYPE,
            format!(
                "Reverse-1: in mode {} the axes must be {want}, got {ty}",
                self.mode()
            ),
        ))
    }

    fn mode(&self) -> &'static str {
        if self.by_mask {
            "mask"
        } else {
            "index"
        }
    }
}

impl Op for Reverse {
    fn name(&self) -> &'static str {
        "Reverse-1"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        self.check_axes_type(inputs[1].ty)?;
        if inputs[1].rank().is_some_and(|r| r != 1) {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("Reverse-1: the axes {} must be 1-D", inputs[1].shape),
            ));
        }
        let data = &inputs[0];
        // Boolean masks read as 0/1 here too.
        if let (Some(rank), Some(v)) = (data.rank(), known_ints(&inputs[1])) {
            self.reversed(rank, &v)?;
        }
        Ok(vec![Fact::new(data.ty, data.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, axes] = take_inputs::<2>(inputs, self.name())?;
        self.check_axes_type(axes.element_type())?;
        let dims = data.shape();
        let values = axes.to_i64_vec().ok_or_else(|| {
            OpError::input(1, codes::BAD_VALUE, "Reverse-1: an axis is beyond i64")
        })?;
        let flip = self.reversed(dims.len(), &values)?;
        if !flip.iter().zip(dims).any(|(&f, &d)| f && d > 1) {
            return Ok(vec![data]);
        }
        let strides = row_major_strides(dims);
        let mut layout = Strided {
            out_shape: dims.to_vec(),
            base: 0,
            strides: strides.clone(),
        };
        for (i, &f) in flip.iter().enumerate() {
            if f && dims[i] > 0 {
                layout.base += (dims[i] as isize - 1) * strides[i];
                layout.strides[i] = -strides[i];
            }
        }
        let words = layout.apply(&data, self.name())?;
        Ok(vec![output(data.element_type(), dims.to_vec(), words)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn reverses_by_index_and_by_mask() {
        let x = i32s(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let by_index = Reverse { by_mask: false };
        let out = run(&by_index, vec![x.clone(), i64s(&[1], &[-1])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 3], &[3, 2, 1, 6, 5, 4]));
        let out = run(&by_index, vec![x.clone(), i64s(&[2], &[0, 1])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 3], &[6, 5, 4, 3, 2, 1]));
        let out = run(&by_index, vec![x.clone(), i64s(&[0], &[])]).unwrap();
        assert_eq!(out[0], x);
        let by_mask = Reverse { by_mask: true };
        let out = run(&by_mask, vec![x.clone(), bools(&[2], &[true, false])]).unwrap();
        assert_eq!(out[0], i32s(&[2, 3], &[4, 5, 6, 1, 2, 3]));
    }

    #[test]
    fn checks_the_axes() {
        let r = Reverse { by_mask: false };
        let e = r.infer(&[fact(F32, "2,3"), i64_value(&[2])]).unwrap_err();
        assert_eq!(e.code, codes::AXIS);
        let e = r
            .infer(&[fact(F32, "2,3"), i64_value(&[1, -1])])
            .unwrap_err();
        assert!(e.message.contains("listed twice"), "{}", e.message);
        let e = r
            .infer(&[fact(F32, "2,3"), fact(Boolean, "2")])
            .unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        let m = Reverse { by_mask: true };
        let e = m
            .infer(&[
                fact(F32, "2,3"),
                Fact::of_static(Boolean, &[1]).with_value(bools(&[1], &[true])),
            ])
            .unwrap_err();
        assert!(
            e.message.contains("a mask of 1 for data of rank 2"),
            "{}",
            e.message
        );
    }
}
