//! RDFT-9: the unnormalised forward DFT of real data over `axes` (input 1), numpy's
//! `rfftn(x, s, axes)`: each listed axis is trimmed or zero-padded at the end to its
//! `signal_size` (input 2, optional; -1 = the whole dim); the axis listed last is halved to
//! `n // 2 + 1` (whichever dim it is); the output gains a trailing dim of 2 (re, im).
//! f32, f16 or bf16 data; computed in f64.

use std::sync::Arc;

use irun_tensor::{Dim, ElementType, PartialShape, Tensor};
use realfft::RealFftPlanner;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::lines::{axes_and_sizes, data_input, fft_axis, per_block, resize, C};
use crate::op::{codes, Op, OpError, Value};
use crate::util::{ints, known_ints};

#[derive(Debug)]
pub struct Rdft;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Rdft))
}

const NAME: &str = "RDFT-9";

/// Data as f64 values, from any of the float types the DFT ops accept.
pub fn real_values(t: &Tensor, name: &str) -> Result<Vec<f64>, OpError> {
    if let Some(v) = t.values::<f32>() {
        return Ok(v.iter().map(|&x| x as f64).collect());
    }
    if let Some(v) = t.values::<half::f16>() {
        return Ok(v.iter().map(|x| x.to_f64()).collect());
    }
    if let Some(v) = t.values::<half::bf16>() {
        return Ok(v.iter().map(|x| x.to_f64()).collect());
    }
    Err(OpError::new(
        codes::UNSUPPORTED_TYPE,
        format!("{name} on {} (f32, f16, bf16)", t.element_type()),
    ))
}

/// f64 values as a tensor of `ty` (f32, f16 or bf16).
pub fn float_tensor(ty: ElementType, shape: Vec<usize>, v: Vec<f64>) -> Result<Tensor, OpError> {
    let r = match ty {
        ElementType::F16 => {
            Tensor::from_f16(shape, v.into_iter().map(half::f16::from_f64).collect())
        }
        ElementType::Bf16 => {
            Tensor::from_bf16(shape, v.into_iter().map(half::bf16::from_f64).collect())
        }
        _ => Tensor::from_f32(shape, v.into_iter().map(|x| x as f32).collect()),
    };
    r.map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// The output dims for data dims `dims`.
fn out_dims(dims: &[Dim], axes: &[usize], sizes: &[Option<usize>]) -> Vec<Dim> {
    let mut out = dims.to_vec();
    for (i, &a) in axes.iter().enumerate() {
        let n = match sizes[i] {
            Some(s) => Dim::fixed(s as u64),
            None => dims[a],
        };
        out[a] = if i + 1 == axes.len() {
            n.get_static()
                .map_or(Dim::DYNAMIC, |n| Dim::fixed(n / 2 + 1))
        } else {
            n
        };
    }
    out.push(Dim::fixed(2));
    out
}

impl Op for Rdft {
    fn name(&self) -> &'static str {
        NAME
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let x = data_input(inputs, NAME)?;
        let shape = match (x.shape.dims(), known_ints(&inputs[1])) {
            (Some(d), Some(axes)) => {
                let sizes = inputs.get(2).map(known_ints);
                match sizes {
                    Some(None) => PartialShape::dynamic_of_rank(d.len() + 1),
                    Some(Some(s)) => {
                        let (axes, sizes) = axes_and_sizes(&axes, Some(&s), d.len(), NAME)?;
                        PartialShape::new(out_dims(d, &axes, &sizes))
                    }
                    None => {
                        let (axes, sizes) = axes_and_sizes(&axes, None, d.len(), NAME)?;
                        PartialShape::new(out_dims(d, &axes, &sizes))
                    }
                }
            }
            (Some(d), None) => PartialShape::dynamic_of_rank(d.len() + 1),
            _ => PartialShape::dynamic_rank(),
        };
        Ok(vec![Fact::new(x.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let x = &inputs[0];
        let axes = ints(
            inputs
                .get(1)
                .ok_or_else(|| OpError::new(codes::ARITY, "RDFT-9 needs axes"))?,
            1,
        )?;
        let sizes = inputs.get(2).map(|s| ints(s, 2)).transpose()?;
        let (axes, sizes) = axes_and_sizes(&axes, sizes.as_deref(), x.shape().len(), NAME)?;
        let (mut data, mut dims) = (real_values(x, NAME)?, x.shape().to_vec());
        for (i, &a) in axes.iter().enumerate() {
            if let Some(n) = sizes[i] {
                (data, dims) = resize(&data, &dims, a, n);
            }
        }
        // The real transform along the last listed axis, then complex ones along the others.
        let last = *axes.last().expect("axes are not empty");
        let len = dims[last];
        let half = len / 2 + 1;
        let (outer, inner): (usize, usize) = (
            dims[..last].iter().product(),
            dims[last + 1..].iter().product(),
        );
        let mut spectrum = vec![C::default(); outer * half * inner];
        if len > 0 {
            let r2c = RealFftPlanner::<f64>::new().plan_fft_forward(len);
            per_block(
                (&data, len * inner),
                (&mut spectrum, half * inner),
                &|src, dst| {
                    let (mut line, mut out) = (vec![0f64; len], vec![C::default(); half]);
                    let mut scratch = vec![C::default(); r2c.get_scratch_len()];
                    for i in 0..inner {
                        for (j, v) in line.iter_mut().enumerate() {
                            *v = src[j * inner + i];
                        }
                        r2c.process_with_scratch(&mut line, &mut out, &mut scratch)
                            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
                        for (j, v) in out.iter().enumerate() {
                            dst[j * inner + i] = *v;
                        }
                    }
                    Ok(())
                },
            )?;
        }
        let mut cdims = dims.clone();
        cdims[last] = if len > 0 { half } else { 0 };
        for &a in &axes[..axes.len() - 1] {
            fft_axis(&mut spectrum, &cdims, a, false);
        }
        let flat: Vec<f64> = spectrum.iter().flat_map(|c| [c.re, c.im]).collect();
        let mut shape = cdims;
        shape.push(2);
        Ok(vec![Arc::new(float_tensor(x.element_type(), shape, flat)?)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_direct_dft() {
        // rfft of [1, 2, 3, 4]: [10, -2+2i, -2].
        let x = Tensor::from_f32(vec![4], vec![1., 2., 3., 4.]).unwrap();
        let axes = Tensor::from_i64(vec![1], vec![0]).unwrap();
        let out = Rdft.eval(vec![Arc::new(x), Arc::new(axes)]).unwrap();
        assert_eq!(out[0].shape(), &[3, 2]);
        let v = out[0].values::<f32>().unwrap();
        assert_eq!(v, &[10., 0., -2., 2., -2., 0.]);
    }

    #[test]
    fn halves_the_last_listed_axis() {
        let f = Rdft
            .infer(&[
                Fact::of_static(ElementType::F32, &[3, 5]),
                Fact::of_static(ElementType::I64, &[2])
                    .with_value(Tensor::from_i64(vec![2], vec![1, 0]).unwrap()),
            ])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[2,5,2]");
    }

    /// Both transforms check their inputs alike ([`data_input`]): 2 or 3 of them, real
    /// data of a float type (IRDFT's complex pairs too).
    #[test]
    fn both_transforms_reject_a_wrong_arity_or_data_type() {
        let axes = Fact::of_static(ElementType::I64, &[1])
            .with_value(Tensor::from_i64(vec![1], vec![0]).unwrap());
        let ops: [&dyn Op; 2] = [&Rdft, &crate::irdft::Irdft];
        for op in ops {
            let data = Fact::of_static(ElementType::F32, &[4, 2]);
            let e = op.infer(std::slice::from_ref(&data)).unwrap_err();
            assert_eq!(e.code, codes::ARITY, "{}", op.name());
            let four = [data.clone(), axes.clone(), axes.clone(), axes.clone()];
            assert_eq!(op.infer(&four).unwrap_err().code, codes::ARITY);
            let ints = Fact::of_static(ElementType::I32, &[4, 2]);
            let e = op.infer(&[ints, axes.clone()]).unwrap_err();
            assert_eq!(e.code, codes::ELEMENT_TYPE, "{}", op.name());
            assert!(e.message.contains("must be f32, f16 or bf16"), "{e:?}");
            assert!(op.infer(&[data, axes.clone()]).is_ok(), "{}", op.name());
        }
    }
}
