//! Broadcast-1 and Broadcast-3: the data replicated to `target_shape` (input 1).
//! * `numpy` (default): one way; data right-aligned, each data dim 1 or equal to the target's;
//!   the output is exactly the target.
//! * `bidirectional` (v3): the numpy broadcast of data and target (may exceed the target).
//! * `explicit` (v1 also spells it `none`): `axes_mapping` (input 2, sorted) names the output
//!   axis of each data dim; data is replicated along every other axis.
//!
//! Outside explicit mode a third input (OpenVINO's builders always add one) is ignored. `pdpd`
//! is read but not run. The copy is a strided view with stride 0 on replicated axes.

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, Op, OpError, Value};
use crate::strided::{row_major_strides, Strided};
use crate::util::{expect_int_type, ints, known_ints, output};
use irun_opkit::broadcast::broadcast_or_error;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Numpy,
    Bidirectional,
    Explicit,
}

#[derive(Debug)]
pub struct Broadcast {
    pub mode: Mode,
    pub version: u32,
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let mode = match a.enum_or("mode", &["numpy", "explicit", "none", "pdpd"], "numpy")? {
        "numpy" => Mode::Numpy,
        "explicit" | "none" => Mode::Explicit,
        _ => {
            return Err(OpError::attribute(
                "mode",
                "Broadcast `mode=\"pdpd\"` is not supported by irun",
            ))
        }
    };
    Ok(Box::new(Broadcast { mode, version: 1 }))
}

pub fn build_v3(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let mode = match a.enum_or(
        "mode",
        &["numpy", "explicit", "bidirectional", "pdpd"],
        "numpy",
    )? {
        "numpy" => Mode::Numpy,
        "explicit" => Mode::Explicit,
        "bidirectional" => Mode::Bidirectional,
        _ => {
            return Err(OpError::attribute(
                "mode",
                "Broadcast `mode=\"pdpd\"` is not supported by irun",
            ))
        }
    };
    Ok(Box::new(Broadcast { mode, version: 3 }))
}

impl Broadcast {
    fn label(&self) -> &'static str {
        if self.version == 1 {
            "Broadcast-1"
        } else {
            "Broadcast-3"
        }
    }

    /// The output dims and, for each data dim, the output axis it maps to.
    fn resolve(
        &self,
        data: &[Dim],
        target: &[i64],
        mapping: Option<&[i64]>,
    ) -> Result<(Vec<Dim>, Vec<usize>), OpError> {
        let name = self.label();
        if let Some(v) = target.iter().find(|&&v| v < 0) {
            return Err(OpError::input(
                1,
                codes::BAD_VALUE,
                format!("{name}: target shape holds {v}"),
            ));
        }
        let target: Vec<Dim> = target.iter().map(|&v| Dim::fixed(v as u64)).collect();
        match self.mode {
            Mode::Numpy | Mode::Bidirectional => {
                if self.mode == Mode::Numpy && data.len() > target.len() {
                    return Err(OpError::input(
                        1,
                        codes::SHAPE,
                        format!(
                            "{name}: data of rank {} cannot broadcast to a target of rank {}",
                            data.len(),
                            target.len()
                        ),
                    ));
                }
                let out = if self.mode == Mode::Numpy {
                    let lead = target.len() - data.len();
                    for (i, &d) in data.iter().enumerate() {
                        let t = target[lead + i];
                        if d != Dim::fixed(1) && !d.compatible(t) {
                            return Err(OpError::input(
                                0,
                                codes::SHAPE,
                                format!(
                                    "{name}: data shape {} does not broadcast to target {}",
                                    PartialShape::new(data.to_vec()),
                                    PartialShape::new(target.clone())
                                ),
                            ));
                        }
                    }
                    target
                } else {
                    let (a, b) = (PartialShape::new(data.to_vec()), PartialShape::new(target));
                    broadcast_or_error(&[&a, &b])?
                        .dims()
                        .expect("static ranks")
                        .to_vec()
                };
                let lead = out.len() - data.len();
                Ok((out, (0..data.len()).map(|i| lead + i).collect()))
            }
            Mode::Explicit => {
                let m = mapping.ok_or_else(|| {
                    OpError::new(
                        codes::ARITY,
                        format!("{name}: explicit mode needs axes_mapping"),
                    )
                })?;
                let ok = m.len() == data.len()
                    && m.windows(2).all(|w| w[0] < w[1])
                    && m.iter().all(|&a| a >= 0 && (a as usize) < target.len());
                if !ok {
                    return Err(OpError::input(2, codes::BAD_VALUE, format!(
                        "{name}: axes_mapping {m:?} must be {} sorted axes of the rank-{} target", data.len(), target.len())));
                }
                let axes: Vec<usize> = m.iter().map(|&a| a as usize).collect();
                for (i, &a) in axes.iter().enumerate() {
                    if data[i] != Dim::fixed(1) && !data[i].compatible(target[a]) {
                        return Err(OpError::input(
                            0,
                            codes::SHAPE,
                            format!(
                                "{name}: data dim {i} ({}) does not match target dim {a} ({})",
                                data[i], target[a]
                            ),
                        ));
                    }
                }
                Ok((target, axes))
            }
        }
    }
}

impl Op for Broadcast {
    fn name(&self) -> &'static str {
        self.label()
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        // OpenVINO's builders give every Broadcast an axes_mapping input; outside explicit
        // mode it is ignored.
        let arity_ok = inputs.len() == 3 || (self.mode != Mode::Explicit && inputs.len() == 2);
        if !arity_ok {
            return Err(OpError::new(
                codes::ARITY,
                format!(
                    "{} takes 2 or 3 inputs (3 in explicit mode), got {}",
                    self.label(),
                    inputs.len()
                ),
            ));
        }
        for slot in 1..inputs.len() {
            expect_int_type(inputs, slot, self.label())?;
        }
        let data = &inputs[0];
        let target = known_ints(&inputs[1]);
        let mapping = inputs
            .get(2)
            .filter(|_| self.mode == Mode::Explicit)
            .and_then(known_ints);
        let shape = match (data.shape.dims(), target) {
            (Some(dims), Some(t)) if self.mode != Mode::Explicit || mapping.is_some() => {
                PartialShape::new(self.resolve(dims, &t, mapping.as_deref())?.0)
            }
            (_, Some(t)) if self.mode != Mode::Bidirectional => {
                PartialShape::dynamic_of_rank(t.len())
            }
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(data.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let data = &inputs[0];
        let target = ints(
            inputs
                .get(1)
                .ok_or_else(|| OpError::new(codes::ARITY, "no target shape"))?,
            1,
        )?;
        let mapping = inputs
            .get(2)
            .filter(|_| self.mode == Mode::Explicit)
            .map(|m| ints(m, 2))
            .transpose()?;
        let dims: Vec<Dim> = data.shape().iter().map(|&d| Dim::fixed(d as u64)).collect();
        let (out, axes) = self.resolve(&dims, &target, mapping.as_deref())?;
        let out: Vec<usize> = out.iter().map(|d| d.min() as usize).collect();
        let src = row_major_strides(data.shape());
        let mut strides = vec![0isize; out.len()];
        for (i, &a) in axes.iter().enumerate() {
            if data.shape()[i] != 1 {
                strides[a] = src[i];
            }
        }
        let layout = Strided {
            out_shape: out,
            base: 0,
            strides,
        };
        let words = layout.apply(data, self.label())?;
        Ok(vec![output(data.element_type(), layout.out_shape, words)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(mode: Mode) -> Broadcast {
        Broadcast { mode, version: 3 }
    }

    #[test]
    fn numpy_bidirectional_explicit() {
        let x = f32s(&[3, 1], &[1., 2., 3.]);
        let out = run(&op(Mode::Numpy), vec![x.clone(), i64s(&[3], &[2, 3, 2])]).unwrap();
        assert_eq!(
            out[0],
            f32s(
                &[2, 3, 2],
                &[1., 1., 2., 2., 3., 3., 1., 1., 2., 2., 3., 3.]
            )
        );
        let out = run(
            &op(Mode::Bidirectional),
            vec![x.clone(), i64s(&[3], &[2, 1, 1])],
        )
        .unwrap();
        assert_eq!(out[0].shape(), &[2, 3, 1]);
        let y = f32s(&[2], &[1., 2.]);
        let out = run(
            &op(Mode::Explicit),
            vec![y, i64s(&[2], &[2, 3]), i64s(&[1], &[0])],
        )
        .unwrap();
        assert_eq!(out[0], f32s(&[2, 3], &[1., 1., 1., 2., 2., 2.]));
    }

    #[test]
    fn invalid_targets() {
        let e = infer1(&op(Mode::Numpy), &[fact(F32, "3"), i64_value(&[1])]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE, "target 1 against data 3");
        let e = infer1(
            &op(Mode::Explicit),
            &[fact(F32, "2,3"), i64_value(&[2, 3, 4]), i64_value(&[2, 0])],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE, "unsorted mapping");
        let f = infer1(
            &op(Mode::Bidirectional),
            &[fact(F32, "2,3"), i64_value(&[3])],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[2,3]");
        let f = infer1(&op(Mode::Numpy), &[fact(F32, "3"), i64_value(&[0, 3])]).unwrap();
        assert_eq!(f.shape.to_string(), "[0,3]");
    }
}
