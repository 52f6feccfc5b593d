//! AvgPool-1, -14 and -16: the mean of each window. Attributes as MaxPool's, with `dilations`
//! only from version 16 (each window samples every d-th cell and spans `(k - 1) * d + 1`;
//! the divisors count the sampled cells); `exclude-pad` (required by the spec; omitted, true, as the loader behaves): the divisor is
//! the window's cells inside the input, or with `false` those plus the explicit or same_*
//! padding cells, never the cells that only ceil rounding added. A window wholly in padding
//! gives 0/0 = NaN with exclude-pad (as OpenVINO CPU), 0 without. Floats only; computed in f64.

use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{ElementType, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::pool::{infer_pool, tensor, RowWindows, Windows};
use crate::spatial::{list, Spatial};

#[derive(Debug)]
pub struct AvgPool {
    pub version: u32,
    pub spatial: Spatial,
    pub kernel: Vec<usize>,
    pub exclude_pad: bool,
}

fn build(a: &AttrReader, version: u32) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(AvgPool {
        version,
        spatial: Spatial::read(a, true, version >= 14, version >= 16)?,
        kernel: list(a, "kernel", None)?,
        exclude_pad: a.bool_or("exclude-pad", true)?,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 1)
}
pub fn build_v14(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 14)
}
pub fn build_v16(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 16)
}

impl AvgPool {
    fn run<T: irun_tensor::Scalar>(
        &self,
        x: &Tensor,
        w: &Windows,
        to: fn(T) -> f64,
        from: fn(f64) -> T,
    ) -> Result<Tensor, OpError> {
        let v = x
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let exclude = self.exclude_pad;
        let out = w.map_rows(v, &|plane: &[T],
                                   row: &RowWindows,
                                   dst: &mut [T],
                                   sums: &mut Vec<f64>| {
            // Sums in f64, each output's taps in scan order.
            sums.clear();
            sums.resize(dst.len(), 0.0);
            row.for_each_input_row(|r| {
                let xr = &plane[r..r + row.input_width()];
                for kx in 0..row.kernel_width() {
                    for (ox, sum) in sums.iter_mut().enumerate() {
                        if let Some(&v) = xr.get(row.column(ox, kx)) {
                            *sum += to(v);
                        }
                    }
                }
            });
            for (ox, (d, &sum)) in dst.iter_mut().zip(sums.iter()).enumerate() {
                let n = row.inside(ox) + if exclude { 0 } else { row.padded(ox) };
                *d = from(if n == 0 && !exclude {
                    0.0
                } else {
                    sum / n as f64
                });
            }
        })?;
        tensor(x.element_type(), w.shape.clone(), out)
    }
}

impl Op for AvgPool {
    fn name(&self) -> &'static str {
        match self.version {
            1 => "AvgPool-1",
            14 => "AvgPool-14",
            _ => "AvgPool-16",
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let shape = infer_pool(self.name(), &self.spatial, &self.kernel, &inputs[0])?;
        Ok(vec![Fact::new(inputs[0].ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let w = Windows::new(x.shape(), &self.kernel, &self.spatial, self.name())?;
        let out = match x.element_type() {
            ElementType::F32 => self.run::<f32>(&x, &w, |v| v as f64, |v| v as f32),
            ElementType::F64 => self.run::<f64>(&x, &w, |v| v, |v| v),
            ElementType::F16 => self.run::<f16>(&x, &w, f16::to_f64, f16::from_f64),
            ElementType::Bf16 => self.run::<bf16>(&x, &w, bf16::to_f64, bf16::from_f64),
            ty => Err(OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!("{} on {ty}", self.name()),
            )),
        }?;
        Ok(vec![Arc::new(out)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spatial::{AutoPad, Rounding};
    use crate::testing::eval1;

    fn op(exclude_pad: bool, p: usize, rounding: Rounding) -> AvgPool {
        AvgPool {
            version: 14,
            spatial: Spatial {
                strides: vec![2, 2],
                pads_begin: vec![p, p],
                pads_end: vec![p, p],
                dilations: vec![1, 1],
                auto_pad: AutoPad::Explicit,
                rounding,
            },
            kernel: vec![2, 2],
            exclude_pad,
        }
    }

    /// AvgPool-16's dilations: windows sample every d-th cell and the divisor counts the
    /// sampled cells (ONNX's `test_averagepool_2d_dilations`, whose values OpenVINO CPU gives:
    /// a 4x4 input, k2 s1 d2 -> [[6, 7], [10, 11]]); padding cells counted only without
    /// exclude-pad, one per sampled tap.
    #[test]
    fn dilated_windows_sample_every_dth_cell() {
        let x = Tensor::from_f32(vec![1, 1, 4, 4], (1..=16).map(|v| v as f32).collect()).unwrap();
        let mut pool = op(true, 0, Rounding::Floor);
        pool.version = 16;
        pool.spatial.strides = vec![1, 1];
        pool.spatial.dilations = vec![2, 2];
        assert_eq!(pool.name(), "AvgPool-16");
        let out = eval1(&pool, vec![x.clone()]).unwrap();
        assert_eq!(out.shape(), &[1, 1, 2, 2]);
        assert_eq!(out.values::<f32>().unwrap(), &[6., 7., 10., 11.]);
        // Pads 1: window (0, 0) samples rows and columns -1 and 1: one input cell (6).
        pool.spatial.pads_begin = vec![1, 1];
        pool.spatial.pads_end = vec![1, 1];
        let out = eval1(&pool, vec![x.clone()]).unwrap();
        assert_eq!(out.shape(), &[1, 1, 4, 4]);
        assert_eq!(out.values::<f32>().unwrap()[0], 6.);
        pool.exclude_pad = false;
        let out = eval1(&pool, vec![x]).unwrap();
        assert_eq!(out.values::<f32>().unwrap()[0], 6. / 4.);
    }

    #[test]
    fn divisors() {
        let x = Tensor::from_f32(vec![1, 1, 3, 3], (1..=9).map(|v| v as f32).collect()).unwrap();
        // k2 s2 ceil, no pads: ceil cells never count, either way.
        for exclude in [true, false] {
            let out = eval1(&op(exclude, 0, Rounding::Ceil), vec![x.clone()]).unwrap();
            assert_eq!(out.values::<f32>().unwrap(), &[3., 4.5, 7.5, 9.]);
        }
        // pads 1, floor: the corner window has 1 input cell and 3 padding cells.
        let out = eval1(&op(true, 1, Rounding::Floor), vec![x.clone()]).unwrap();
        assert_eq!(out.values::<f32>().unwrap()[0], 1.);
        let out = eval1(&op(false, 1, Rounding::Floor), vec![x]).unwrap();
        assert_eq!(out.values::<f32>().unwrap()[0], 0.25);
    }
}
