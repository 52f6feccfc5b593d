//! DFT-7 and IDFT-7: the complex transform over some axes of `data [..., 2]` (re, im). Axes
//! count over the complex rank (negative: from its end) and never name the trailing 2;
//! optional `signal_size` per axis trims or zero-pads that axis at its end first (-1: as
//! is). DFT is unnormalised (numpy's `fftn`), IDFT is `1 / prod(sizes)` times the inverse
//! (`ifftn`). f32, f16 or bf16; computed in f64.

use std::sync::Arc;

use irun_tensor::{Dim, PartialShape};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::lines::{axes_and_sizes, complex_input, data_input, fft_axis, resize, ComplexInput};
use crate::op::{codes, Op, OpError, Value};
use crate::rdft::float_tensor;
use crate::util::known_ints;

#[derive(Debug)]
pub struct Dft {
    pub inverse: bool,
}

pub fn build_dft(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Dft { inverse: false }))
}

pub fn build_idft(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Dft { inverse: true }))
}

impl Op for Dft {
    fn name(&self) -> &'static str {
        if self.inverse {
            "IDFT-7"
        } else {
            "DFT-7"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1, 2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let z = data_input(inputs, self.name())?;
        let Some(d) = z.shape.dims() else {
            return Ok(vec![Fact::new(z.ty, PartialShape::dynamic_rank())]);
        };
        if d.len() < 2 || !d[d.len() - 1].contains(2) {
            return Err(OpError::input(
                0,
                codes::SHAPE,
                format!(
                    "{}: data {} must end in a dim of 2 (re, im)",
                    self.name(),
                    z.shape
                ),
            ));
        }
        let rank = d.len() - 1;
        let sizes = inputs.get(2).map(known_ints);
        let shape = match (known_ints(&inputs[1]), sizes) {
            (Some(axes), None) => {
                axes_and_sizes(&axes, None, rank, self.name())?;
                z.shape.clone()
            }
            (Some(axes), Some(Some(s))) => {
                let (axes, sizes) = axes_and_sizes(&axes, Some(&s), rank, self.name())?;
                let mut out = d.to_vec();
                for (a, s) in axes.iter().zip(sizes) {
                    if let Some(s) = s {
                        out[*a] = Dim::fixed(s as u64);
                    }
                }
                PartialShape::new(out)
            }
            _ => PartialShape::dynamic_of_rank(d.len()),
        };
        Ok(vec![Fact::new(z.ty, shape)])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let ComplexInput {
            mut data,
            mut dims,
            axes,
            sizes,
        } = complex_input(&inputs, self.name())?;
        for (&a, s) in axes.iter().zip(&sizes) {
            if let Some(s) = *s {
                (data, dims) = resize(&data, &dims, a, s);
            }
        }
        for &a in &axes {
            fft_axis(&mut data, &dims, a, self.inverse);
        }
        let scale = if self.inverse {
            1.0 / axes
                .iter()
                .map(|&a| dims[a] as f64)
                .product::<f64>()
                .max(1.0)
        } else {
            1.0
        };
        let out: Vec<f64> = data
            .iter()
            .flat_map(|c| [c.re * scale, c.im * scale])
            .collect();
        let mut shape = dims;
        shape.push(2);
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
    use irun_opkit::testing::eval1;
    use irun_opkit::testing::prelude::*;

    /// [1, 2, 3, 4] (real): DFT is [10, -2+2i, -2, -2-2i]; IDFT brings it back; a signal
    /// size of 2 keeps [1, 2], whose DFT is [3, -1].
    #[test]
    fn transforms_and_inverts() {
        let x = f32s(&[4, 2], &[1., 0., 2., 0., 3., 0., 4., 0.]);
        let y = eval1(&Dft { inverse: false }, vec![x.clone(), i64s(&[1], &[0])]).unwrap();
        let want = [10., 0., -2., 2., -2., 0., -2., -2.];
        let got = y.values::<f32>().unwrap();
        assert!(
            got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-5),
            "{got:?}"
        );
        let back = eval1(&Dft { inverse: true }, vec![y, i64s(&[1], &[-1])]).unwrap();
        let got = back.values::<f32>().unwrap();
        assert!(
            got.iter()
                .zip(x.values::<f32>().unwrap())
                .all(|(g, w)| (g - w).abs() < 1e-5),
            "{got:?}"
        );
        let y = eval1(
            &Dft { inverse: false },
            vec![x, i64s(&[1], &[0]), i64s(&[1], &[2])],
        )
        .unwrap();
        assert_eq!(y, f32s(&[2, 2], &[3., 0., -1., 0.]));
        let e = Dft { inverse: false }
            .infer(&[fact(F32, "4,2"), i64_value(&[1])])
            .unwrap_err();
        assert_eq!(e.code, codes::AXIS);
    }
}
