//! MaxPool-1, -8 and -14: the largest value of each window. Attributes `strides`, `pads_begin`,
//! `pads_end`, `kernel` (required), `rounding_type` (floor, ceil; v14 also ceil_torch),
//! `auto_pad`; v8/v14 add `dilations`, `index_element_type` (i64 default, or i32) and `axis`
//! (default 0) and a second output: the index of each maximum, its flat position in the
//! unpadded input counted from dim `axis`. Padding acts as -inf; NaN is skipped (reference and
//! CPU agree); ties go to the first in scan order; a window wholly in padding gives the lowest
//! finite value and index 0.

use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{ElementType, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::pool::{infer_pool, tensor, Window, Windows};
use crate::spatial::{list, Spatial};
use crate::util::norm_axis;

#[derive(Debug)]
pub struct MaxPool {
    pub version: u32,
    pub spatial: Spatial,
    pub kernel: Vec<usize>,
    pub index_type: ElementType,
    pub axis: i64,
}

fn build(a: &AttrReader, version: u32) -> Result<Box<dyn Op>, OpError> {
    let spatial = Spatial::read(a, true, version >= 14, version >= 8)?;
    let kernel = list(a, "kernel", None)?;
    let (index_type, axis) = if version >= 8 {
        let ty = match a.get("index_element_type") {
            None => ElementType::I64,
            Some(_) => a.element_type("index_element_type")?,
        };
        if !matches!(ty, ElementType::I32 | ElementType::I64) {
            return Err(OpError::attribute(
                "index_element_type",
                "index_element_type must be i32 or i64",
            ));
        }
        (ty, a.i64_or("axis", Some(0))?)
    } else {
        (ElementType::I64, 0)
    };
    Ok(Box::new(MaxPool {
        version,
        spatial,
        kernel,
        index_type,
        axis,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 1)
}
pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 8)
}
pub fn build_v14(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 14)
}

/// Values a window maximum compares: NaN reports itself so that it is skipped.
trait Ordered: Scalar {
    const LOWEST: Self;
    fn nan(self) -> bool;
    fn gt(self, o: Self) -> bool;
}

macro_rules! ordered_float {
    ($($t:ty => $lo:expr),*) => {$(
        impl Ordered for $t {
            const LOWEST: Self = $lo;
            fn nan(self) -> bool { self.is_nan() }
            fn gt(self, o: Self) -> bool { self > o }
        }
    )*};
}
ordered_float!(f32 => f32::MIN, f64 => f64::MIN, f16 => f16::MIN, bf16 => bf16::MIN);

macro_rules! ordered_int {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            const LOWEST: Self = <$t>::MIN;
            fn nan(self) -> bool { false }
            fn gt(self, o: Self) -> bool { self > o }
        }
    )*};
}
ordered_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl MaxPool {
    fn run<T: Ordered>(&self, x: &Tensor, w: &Windows) -> Result<(Tensor, Vec<i64>), OpError> {
        let v = x
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let best: Vec<(T, usize)> = w.map(v, &|plane: &[T], win: &Window| {
            // The first largest non-NaN tap; `usize::MAX` while there is none.
            let (mut value, mut at) = (T::LOWEST, usize::MAX);
            win.for_each(|t| {
                let v = plane[t];
                if !v.nan() && (at == usize::MAX || v.gt(value)) {
                    (value, at) = (v, t);
                }
            });
            (value, at)
        })?;
        let plane_in: usize = w.input.iter().product();
        let plane_out: usize = w.out.iter().product();
        let shape = x.shape();
        let axis = norm_axis(self.axis, shape.len(), None, self.name())?;
        let modulus: usize = shape[axis..].iter().product();
        let indices = best
            .iter()
            .enumerate()
            .map(|(o, &(_, t))| {
                if t == usize::MAX {
                    0
                } else {
                    (((o / plane_out.max(1)) * plane_in + t) % modulus.max(1)) as i64
                }
            })
            .collect();
        let values = tensor(
            x.element_type(),
            w.shape.clone(),
            best.into_iter().map(|(b, _)| b).collect(),
        )?;
        Ok((values, indices))
    }
}

impl Op for MaxPool {
    fn name(&self) -> &'static str {
        match self.version {
            1 => "MaxPool-1",
            8 => "MaxPool-8",
            _ => "MaxPool-14",
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let shape = infer_pool(self.name(), &self.spatial, &self.kernel, &inputs[0])?;
        if let Some(r) = inputs[0].rank() {
            norm_axis(self.axis, r, None, self.name())?;
        }
        let mut out = vec![Fact::new(inputs[0].ty, shape.clone())];
        if self.version >= 8 {
            out.push(Fact::new(self.index_type, shape));
        }
        Ok(out)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let w = Windows::new(x.shape(), &self.kernel, &self.spatial, self.name())?;
        let (values, idx) = match x.element_type() {
            ElementType::F32 => self.run::<f32>(&x, &w),
            ElementType::F64 => self.run::<f64>(&x, &w),
            ElementType::F16 => self.run::<f16>(&x, &w),
            ElementType::Bf16 => self.run::<bf16>(&x, &w),
            ty => irun_tensor::with_int!(ty, T => self.run::<T>(&x, &w),
                else Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("{} on {ty}", self.name())))),
        }?;
        let mut out = vec![Arc::new(values)];
        if self.version >= 8 {
            let idx = if self.index_type == ElementType::I32 {
                tensor(
                    ElementType::I32,
                    w.shape.clone(),
                    idx.iter().map(|&i| i as i32).collect(),
                )?
            } else {
                tensor(ElementType::I64, w.shape.clone(), idx)?
            };
            out.push(Arc::new(idx));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spatial::{AutoPad, Rounding};
    use crate::testing::{eval_all, fact, infer1};
    use irun_tensor::ElementType::*;

    fn op(k: usize, s: usize, p: usize, rounding: Rounding, version: u32) -> MaxPool {
        MaxPool {
            version,
            spatial: Spatial {
                strides: vec![s, s],
                pads_begin: vec![p, p],
                pads_end: vec![p, p],
                dilations: vec![1, 1],
                auto_pad: AutoPad::Explicit,
                rounding,
            },
            kernel: vec![k, k],
            index_type: I64,
            axis: 0,
        }
    }

    #[test]
    fn values_indices_nan_and_padding() {
        let x = Tensor::from_f32(
            vec![1, 1, 3, 3],
            vec![1., f32::NAN, 3., 4., 5., 6., 7., 8., 9.],
        )
        .unwrap();
        let out = eval_all(&op(2, 2, 1, Rounding::Ceil, 8), vec![x.clone()]).unwrap();
        assert_eq!(out[0].shape(), &[1, 1, 3, 3]);
        // Windows start at -1, 1, 3 on each axis: the last ones lie wholly in padding (the
        // explicit pad cell and a cell ceil rounding adds) and give the lowest value, index 0.
        let lo = f32::MIN;
        assert_eq!(
            out[0].values::<f32>().unwrap(),
            &[1., 3., lo, 7., 9., lo, lo, lo, lo]
        );
        assert_eq!(
            out[1].values::<i64>().unwrap(),
            &[0, 2, 0, 6, 8, 0, 0, 0, 0]
        );
        let out = eval_all(&op(2, 2, 1, Rounding::CeilTorch, 14), vec![x]).unwrap();
        assert_eq!(out[0].shape(), &[1, 1, 2, 2]);
        let f = infer1(
            &op(3, 2, 1, Rounding::Floor, 1),
            &[fact(F32, "1,64,112,112")],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[1,64,56,56]");
    }
}
