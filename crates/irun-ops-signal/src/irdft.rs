//! IRDFT-9: the inverse of RDFT, numpy's `irfftn(z, s, axes)`. Input `[..., 2]` (re, im);
//! `axes` count over the complex rank and never name the trailing 2; the last listed axis
//! becomes `signal_size` or `2 * (M - 1)`, the others keep M or take their `signal_size`
//! (trimmed or zero-padded at the end first). Values: the Hermitian-extended inverse times
//! `1 / prod(S)`, real part only; imaginary parts of the DC and Nyquist bins are ignored, as
//! numpy ignores them. f32, f16 or bf16; computed in f64.

use std::sync::Arc;

use irun_tensor::{Dim, PartialShape};
use realfft::RealFftPlanner;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::lines::{
    axes_and_sizes, complex_input, data_input, fft_axis, per_block, resize, ComplexInput, C,
};
use crate::op::{codes, Op, OpError, Value};
use crate::rdft::float_tensor;
use crate::util::known_ints;

#[derive(Debug)]
pub struct Irdft;

pub fn build(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Irdft))
}

const NAME: &str = "IRDFT-9";

/// The output dims for complex dims `dims` (without the trailing 2).
fn out_dims(dims: &[Dim], axes: &[usize], sizes: &[Option<usize>]) -> Vec<Dim> {
    let mut out = dims.to_vec();
    for (i, &a) in axes.iter().enumerate() {
        out[a] = match (sizes[i], i + 1 == axes.len()) {
            (Some(s), _) => Dim::fixed(s as u64),
            (None, true) => dims[a]
                .get_static()
                .map_or(Dim::DYNAMIC, |m| Dim::fixed(2 * m.saturating_sub(1))),
            (None, false) => dims[a],
        };
    }
    out
}

impl Op for Irdft {
    fn name(&self) -> &'static str {
        NAME
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let z = data_input(inputs, NAME)?;
        let Some(d) = z.shape.dims() else {
            return Ok(vec![Fact::new(z.ty, PartialShape::dynamic_rank())]);
        };
        if d.len() < 2 || !d[d.len() - 1].contains(2) {
            return Err(OpError::input(
                0,
                codes::SHAPE,
                format!("{NAME}: data {} must end in a dim of 2 (re, im)", z.shape),
            ));
        }
        let complex = &d[..d.len() - 1];
        let shape = match (known_ints(&inputs[1]), inputs.get(2).map(known_ints)) {
            (Some(axes), None) => {
                let (axes, sizes) = axes_and_sizes(&axes, None, complex.len(), NAME)?;
                PartialShape::new(out_dims(complex, &axes, &sizes))
            }
            (Some(axes), Some(Some(s))) => {
                let (axes, sizes) = axes_and_sizes(&axes, Some(&s), complex.len(), NAME)?;
                PartialShape::new(out_dims(complex, &axes, &sizes))
            }
            _ => PartialShape::dynamic_of_rank(complex.len()),
        };
        Ok(vec![Fact::new(z.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let ComplexInput {
            mut data,
            mut dims,
            axes,
            sizes,
        } = complex_input(&inputs, NAME)?;
        let last = *axes.last().expect("axes are not empty");
        // The last axis' output length, and the bins its inverse real transform reads.
        let n = sizes[axes.len() - 1].unwrap_or(2 * dims[last].saturating_sub(1));
        for (i, &a) in axes.iter().enumerate() {
            let target = if a == last {
                n / 2 + 1
            } else {
                sizes[i].unwrap_or(dims[a])
            };
            (data, dims) = resize(&data, &dims, a, target);
        }
        for &a in &axes[..axes.len() - 1] {
            fft_axis(&mut data, &dims, a, true);
        }
        let half = dims[last];
        let (outer, inner): (usize, usize) = (
            dims[..last].iter().product(),
            dims[last + 1..].iter().product(),
        );
        let mut out = vec![0f64; outer * n * inner];
        if n > 0 {
            let c2r = RealFftPlanner::<f64>::new().plan_fft_inverse(n);
            per_block((&data, half * inner), (&mut out, n * inner), &|src, dst| {
                let (mut line, mut real) = (vec![C::default(); half], vec![0f64; n]);
                let mut scratch = vec![C::default(); c2r.get_scratch_len()];
                for i in 0..inner {
                    for (j, v) in line.iter_mut().enumerate() {
                        *v = src[j * inner + i];
                    }
                    // numpy ignores the imaginary parts the real inverse cannot use.
                    line[0].im = 0.0;
                    if n % 2 == 0 {
                        line[half - 1].im = 0.0;
                    }
                    c2r.process_with_scratch(&mut line, &mut real, &mut scratch)
                        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
                    for (j, v) in real.iter().enumerate() {
                        dst[j * inner + i] = *v;
                    }
                }
                Ok(())
            })?;
        }
        let scale: f64 = axes
            .iter()
            .map(|&a| if a == last { n } else { dims[a] })
            .product::<usize>()
            .max(1) as f64;
        out.iter_mut().for_each(|v| *v /= scale);
        let mut shape = dims;
        shape[last] = n;
        Ok(vec![Arc::new(float_tensor(
            inputs[0].element_type(),
            shape,
            out,
        )?)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_tensor::Tensor;

    #[test]
    fn inverts_rdft() {
        // irfft of [10, -2+2i, -2] is [1, 2, 3, 4].
        let z = Tensor::from_f32(vec![3, 2], vec![10., 0., -2., 2., -2., 0.]).unwrap();
        let axes = Tensor::from_i64(vec![1], vec![0]).unwrap();
        let out = Irdft.eval(vec![Arc::new(z), Arc::new(axes)]).unwrap();
        assert_eq!(out[0].values::<f32>().unwrap(), &[1., 2., 3., 4.]);
        // Odd output length from signal_size.
        let z = Tensor::from_f32(vec![3, 2], vec![10., 0., -2., 2., -2., 0.]).unwrap();
        let out = Irdft
            .eval(vec![
                Arc::new(z),
                Arc::new(Tensor::from_i64(vec![1], vec![0]).unwrap()),
                Arc::new(Tensor::from_i64(vec![1], vec![5]).unwrap()),
            ])
            .unwrap();
        assert_eq!(out[0].shape(), &[5]);
    }
}
