//! Pad-1 and Pad-12: data grown (or, with negative pads, cropped) by `pads_begin[i]` and
//! `pads_end[i]` along each dim i (inputs 1 and 2, 1-D integers of the data's rank). Output
//! index `o` of a dim of size `d` reads input `i = o - begin`; outside `[0, d)` the mode
//! decides: `constant` takes `pad_value` (input 3, a scalar of the data's type, default 0;
//! the ONNX converter passes it in every mode, where it is unused),
//! `edge` the nearest border, `reflect` mirrors without repeating the border (needs pads
//! `<= d - 1`), `symmetric` mirrors repeating it (needs pads `<= d`). Both versions crop on
//! negative pads as OpenVINO CPU does (Pad-1's spec says pads are non-negative); an output
//! dim below 0 is an error. One [`AxisMap`] copy.

use irun_tensor::{Dim, ElementType, PartialShape};

use crate::attrs::AttrReader;
use crate::axis_map::AxisMap;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::util::{expect_int_type, ints, known_ints};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    Constant,
    Edge,
    Reflect,
    Symmetric,
}

#[derive(Debug)]
pub struct Pad {
    pub mode: Mode,
    pub name: &'static str,
}

fn read(a: &AttrReader, name: &'static str) -> Result<Box<dyn Op>, OpError> {
    let mode = match a.enum_or(
        "pad_mode",
        &["constant", "edge", "reflect", "symmetric"],
        "constant",
    )? {
        "edge" => Mode::Edge,
        "reflect" => Mode::Reflect,
        "symmetric" => Mode::Symmetric,
        _ => Mode::Constant,
    };
    Ok(Box::new(Pad { mode, name }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, "Pad-1")
}

pub fn build_v12(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, "Pad-12")
}

impl Pad {
    /// The checked pads of one dim of size `d` (when known): the output size.
    fn out_dim(&self, axis: usize, d: Option<u64>, b: i64, e: i64) -> Result<Option<u64>, OpError> {
        let Some(d) = d else { return Ok(None) };
        let limit = match self.mode {
            Mode::Reflect => Some(d as i64 - 1),
            Mode::Symmetric => Some(d as i64),
            _ => None,
        };
        let bad = |m: String| OpError::input(1, codes::BAD_VALUE, format!("{}: {m}", self.name));
        if let Some(l) = limit {
            if b > l || e > l {
                return Err(bad(format!(
                    "{:?} padding of dim {axis} (size {d}) by {b} and {e}: the pads may be at most {l}",
                    self.mode
                )));
            }
        }
        let n = d as i128 + b as i128 + e as i128;
        if n < 0 {
            return Err(bad(format!(
                "dim {axis} of size {d} padded by {b} and {e} would have size {n}"
            )));
        }
        if n > 0 && d == 0 && self.mode != Mode::Constant {
            return Err(bad(format!(
                "{:?} padding of the empty dim {axis} has no values to repeat",
                self.mode
            )));
        }
        u64::try_from(n)
            .map(Some)
            .map_err(|_| bad(format!("dim {axis} overflows")))
    }

    /// Where output index `o` of a dim of size `d` padded by `b` in front reads.
    fn source(&self, o: usize, d: usize, b: i64) -> Option<usize> {
        let (i, d) = (o as i64 - b, d as i64);
        if (0..d).contains(&i) {
            return Some(i as usize);
        }
        let i = match self.mode {
            Mode::Constant => return None,
            Mode::Edge => i.clamp(0, d - 1),
            Mode::Reflect if i < 0 => -i,
            Mode::Reflect => 2 * (d - 1) - i,
            Mode::Symmetric if i < 0 => -i - 1,
            Mode::Symmetric => 2 * d - 1 - i,
        };
        Some(i as usize)
    }

    fn check_pads(&self, rank: usize, begin: &[i64], end: &[i64]) -> Result<(), OpError> {
        for (slot, p) in [(1, begin), (2, end)] {
            if p.len() != rank {
                return Err(OpError::input(
                    slot,
                    codes::SHAPE,
                    format!("{}: {} pads for data of rank {rank}", self.name, p.len()),
                ));
            }
        }
        Ok(())
    }
}

impl Op for Pad {
    fn name(&self) -> &'static str {
        self.name
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 3, 4, self.name)?;
        expect_int_type(inputs, 1, self.name)?;
        expect_int_type(inputs, 2, self.name)?;
        let data = &inputs[0];
        if let Some(v) = inputs.get(3) {
            if v.ty != data.ty && v.ty != ElementType::Dynamic && data.ty != ElementType::Dynamic {
                return Err(OpError::input(
                    3,
                    codes::ELEMENT_TYPE,
                    format!(
                        "{}: the pad value is {}, the data {}",
                        self.name, v.ty, data.ty
                    ),
                ));
            }
            if v.rank().is_some_and(|r| r != 0) {
                return Err(OpError::input(
                    3,
                    codes::RANK,
                    format!("{}: the pad value {} must be a scalar", self.name, v.shape),
                ));
            }
        }
        let Some(dims) = data.shape.dims() else {
            return Ok(vec![Fact::new(data.ty, PartialShape::dynamic_rank())]);
        };
        let (Some(begin), Some(end)) = (known_ints(&inputs[1]), known_ints(&inputs[2])) else {
            return Ok(vec![Fact::new(
                data.ty,
                PartialShape::dynamic_of_rank(dims.len()),
            )]);
        };
        self.check_pads(dims.len(), &begin, &end)?;
        let mut out = Vec::with_capacity(dims.len());
        for (axis, (&d, (&b, &e))) in dims.iter().zip(begin.iter().zip(&end)).enumerate() {
            out.push(match self.out_dim(axis, d.get_static(), b, e)? {
                Some(n) => Dim::fixed(n),
                None => Dim::DYNAMIC,
            });
        }
        Ok(vec![Fact::new(data.ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        if inputs.len() < 3 {
            return Err(OpError::new(
                codes::ARITY,
                format!("{} takes 3 or 4 inputs", self.name),
            ));
        }
        let data = &inputs[0];
        let (begin, end) = (ints(&inputs[1], 1)?, ints(&inputs[2], 2)?);
        let dims = data.shape();
        self.check_pads(dims.len(), &begin, &end)?;
        let mut tables = Vec::with_capacity(dims.len());
        for (axis, (&d, (&b, &e))) in dims.iter().zip(begin.iter().zip(&end)).enumerate() {
            let n = self.out_dim(axis, Some(d as u64), b, e)?.unwrap_or(0) as usize;
            tables.push((0..n).map(|o| self.source(o, d, b)).collect());
        }
        let map = AxisMap::new(tables, dims, self.name)?;
        let fill = inputs
            .get(3)
            .map(|v| &**v)
            .filter(|_| self.mode == Mode::Constant);
        if fill.is_some_and(|v| v.len() != 1 || v.element_type() != data.element_type()) {
            return Err(OpError::input(
                3,
                codes::RUN_VALUE,
                format!(
                    "{}: the pad value must be one value of the data's type",
                    self.name
                ),
            ));
        }
        Ok(vec![map.apply(data, fill, self.name)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn pad(mode: Mode) -> Pad {
        Pad {
            mode,
            name: "Pad-12",
        }
    }

    /// The spec's example: data [[1,2,3,4],[5,6,7,8],[9,10,11,12]], pads_begin [0, 1],
    /// pads_end [2, 3], in each mode.
    #[test]
    fn spec_examples() {
        let x = || {
            vec![
                f32s(&[3, 4], &(1..=12).map(|v| v as f32).collect::<Vec<_>>()),
                i64s(&[2], &[0, 1]),
                i64s(&[2], &[2, 3]),
            ]
        };
        let mut with_value = x();
        with_value.push(f32s(&[], &[2.]));
        #[rustfmt::skip]
        let cases: [(Mode, Vec<Tensor>, [f32; 40]); 4] = [
            (Mode::Constant, with_value, [
                2., 1., 2., 3., 4., 2., 2., 2.,
                2., 5., 6., 7., 8., 2., 2., 2.,
                2., 9., 10., 11., 12., 2., 2., 2.,
                2., 2., 2., 2., 2., 2., 2., 2.,
                2., 2., 2., 2., 2., 2., 2., 2.,
            ]),
            (Mode::Edge, x(), [
                1., 1., 2., 3., 4., 4., 4., 4.,
                5., 5., 6., 7., 8., 8., 8., 8.,
                9., 9., 10., 11., 12., 12., 12., 12.,
                9., 9., 10., 11., 12., 12., 12., 12.,
                9., 9., 10., 11., 12., 12., 12., 12.,
            ]),
            (Mode::Reflect, x(), [
                2., 1., 2., 3., 4., 3., 2., 1.,
                6., 5., 6., 7., 8., 7., 6., 5.,
                10., 9., 10., 11., 12., 11., 10., 9.,
                6., 5., 6., 7., 8., 7., 6., 5.,
                2., 1., 2., 3., 4., 3., 2., 1.,
            ]),
            (Mode::Symmetric, x(), [
                1., 1., 2., 3., 4., 4., 3., 2.,
                5., 5., 6., 7., 8., 8., 7., 6.,
                9., 9., 10., 11., 12., 12., 11., 10.,
                9., 9., 10., 11., 12., 12., 11., 10.,
                5., 5., 6., 7., 8., 8., 7., 6.,
            ]),
        ];
        for (mode, inputs, want) in cases {
            let out = run(&pad(mode), inputs).unwrap();
            assert_eq!(out[0], f32s(&[5, 8], &want), "{mode:?}");
        }
    }

    /// The spec's mixed example: pads_begin [2, -1], pads_end [-1, 3] crop and grow.
    #[test]
    fn negative_pads_crop() {
        let x = f32s(&[3, 4], &(1..=12).map(|v| v as f32).collect::<Vec<_>>());
        let out = run(
            &pad(Mode::Edge),
            vec![x, i64s(&[2], &[2, -1]), i64s(&[2], &[-1, 3])],
        )
        .unwrap();
        #[rustfmt::skip]
        let want = [
            2., 3., 4., 4., 4., 4.,
            2., 3., 4., 4., 4., 4.,
            2., 3., 4., 4., 4., 4.,
            6., 7., 8., 8., 8., 8.,
        ];
        assert_eq!(out[0], f32s(&[4, 6], &want));
    }

    #[test]
    fn shapes_and_errors() {
        let p = pad(Mode::Reflect);
        let f = p
            .infer(&[fact(F32, "?,4"), i64_value(&[1, 3]), i64_value(&[0, 0])])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[?,7]");
        let e = p
            .infer(&[fact(F32, "2,4"), i64_value(&[0, 4]), i64_value(&[0, 0])])
            .unwrap_err();
        assert_eq!(e.code, codes::BAD_VALUE);
        assert!(e.message.contains("at most 3"), "{}", e.message);
        let e = pad(Mode::Constant)
            .infer(&[fact(F32, "2,4"), i64_value(&[0, -3]), i64_value(&[0, -2])])
            .unwrap_err();
        assert!(e.message.contains("would have size -1"), "{}", e.message);
        let e = pad(Mode::Constant)
            .infer(&[fact(F32, "2,4"), i64_value(&[0]), i64_value(&[0, 0])])
            .unwrap_err();
        assert!(
            e.message.contains("1 pads for data of rank 2"),
            "{}",
            e.message
        );
        let e = pad(Mode::Constant)
            .infer(&[
                fact(F32, "2"),
                i64_value(&[0]),
                i64_value(&[0]),
                fact(I32, ""),
            ])
            .unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
    }

    #[test]
    fn every_width_and_the_default_value() {
        let out = run(
            &pad(Mode::Constant),
            vec![i64s(&[2], &[7, 8]), i64s(&[1], &[1]), i64s(&[1], &[1])],
        )
        .unwrap();
        assert_eq!(out[0], i64s(&[4], &[0, 7, 8, 0]));
        let out = run(
            &pad(Mode::Symmetric),
            vec![u8s(&[2], &[7, 8]), i64s(&[1], &[2]), i64s(&[1], &[0])],
        )
        .unwrap();
        assert_eq!(out[0], u8s(&[4], &[8, 7, 7, 8]));
    }
}
