//! GroupNormalization-12: `data [N, C, ...]` normalised over each group of `C / num_groups`
//! channels (and all spatial positions), then scaled and shifted per channel: `y = (x -
//! mean) / sqrt(var + epsilon) * scale[c] + bias[c]`, the variance the population one.
//! `num_groups` (dividing C) and `epsilon` are required. Computed in f64, rounded once.

use irun_tensor::ElementType;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::floats::{like, values};
use crate::op::{
    codes, expect_inputs, same_element_type, take_inputs, Op, OpError, Prepared, Value,
};
use irun_opkit::epilogue::{Channels, Epilogue};

/// Values normalised at a time before the epilogue reads them back: 8 KiB.
const PIECE: usize = 2048;

#[derive(Debug, Clone)]
pub struct GroupNormalization {
    pub groups: usize,
    pub epsilon: f64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let g = a.i64_or("num_groups", None)?;
    let groups = usize::try_from(g).ok().filter(|&g| g > 0).ok_or_else(|| {
        OpError::attribute(
            "num_groups",
            format!("num_groups must be positive, got {g}"),
        )
    })?;
    a.required("epsilon")?;
    Ok(Box::new(GroupNormalization {
        groups,
        epsilon: a.f64_or("epsilon", 0.0)?,
    }))
}

impl Op for GroupNormalization {
    fn name(&self) -> &'static str {
        "GroupNormalization-12"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 3, self.name())?;
        let ty = same_element_type(inputs, &[0, 1, 2], self.name())?;
        if ty != ElementType::Dynamic && !ty.is_real() {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("{}: inputs must be floating-point, got {ty}", self.name()),
            ));
        }
        let data = &inputs[0];
        if let Some(c) = data
            .shape
            .dims()
            .and_then(|d| d.get(1))
            .and_then(|c| c.get_static())
        {
            if c % self.groups as u64 != 0 {
                return Err(OpError::input(
                    0,
                    codes::SHAPE,
                    format!(
                        "{}: {c} channels do not split into {} groups",
                        self.name(),
                        self.groups
                    ),
                ));
            }
        }
        crate::floats::expect_channel_params(inputs, 0, &[1, 2], self.name())?;
        Ok(vec![Fact::new(ty, data.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.eval_with(inputs, None)
    }

    fn prepare(&self, inputs: &[Fact], _: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        let data = inputs.first()?;
        if data.ty != ElementType::F32 {
            return None;
        }
        let dims = data.shape.dims()?;
        Some(Box::new(PreparedGroupNorm {
            op: self.clone(),
            channels: dims.get(1)?.get_static()? as usize,
            spatial_rank: dims.len().checked_sub(2)?,
            epilogue: None,
        }))
    }
}

/// GroupNormalization on f32 data that takes over a per-channel Add and a ReLU or HSwish
/// after it ([`Epilogue`]), applied to each channel's row as it is written: a U-Net's
/// GroupNorm -> ReLU read and wrote its 1.6M values again (0.65 ms).
#[derive(Debug)]
struct PreparedGroupNorm {
    op: GroupNormalization,
    channels: usize,
    spatial_rank: usize,
    epilogue: Option<Epilogue>,
}

impl Prepared for PreparedGroupNorm {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.op.eval_with(inputs, self.epilogue.as_ref())
    }

    fn byte_size(&self) -> usize {
        0
    }

    fn set_epilogue(&mut self, e: &Epilogue) -> bool {
        e.keep_if_fits(&mut self.epilogue, self.channels, self.spatial_rank)
    }
}

impl GroupNormalization {
    /// [`Op::eval`], then `epilogue` (offered only for f32 data; on any other type it is
    /// an internal error).
    fn eval_with(
        &self,
        inputs: Vec<Value>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Vec<Value>, OpError> {
        let [x, scale, bias] = take_inputs::<3>(inputs, self.name())?;
        let s = x.shape();
        if s.len() < 2 || s[1] % self.groups != 0 || scale.len() != s[1] || bias.len() != s[1] {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "{}: data {s:?} with {} groups, {} scales, {} biases",
                    self.name(),
                    self.groups,
                    scale.len(),
                    bias.len()
                ),
            ));
        }
        let (c, spatial) = (s[1], s[2..].iter().product::<usize>());
        if epilogue.is_some_and(|e| !e.fits(c, s.len() - 2)) {
            return Err(OpError::new(
                codes::INTERNAL,
                format!("internal error: an epilogue prepared for other channels than {c}"),
            ));
        }
        if let (Some(xs), Some(sc), Some(bi)) = (
            x.values::<f32>(),
            scale.values::<f32>(),
            bias.values::<f32>(),
        ) {
            let y = self.normalise_f32(xs, (sc, bi), c, spatial, epilogue);
            return Ok(vec![std::sync::Arc::new(
                irun_tensor::Tensor::from_f32(s.to_vec(), y)
                    .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?,
            )]);
        }
        if epilogue.is_some() {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: an epilogue offered for GroupNormalization on non-f32 data",
            ));
        }
        let (v, sc, bi) = (
            values(&x, 0, self.name())?,
            values(&scale, 1, self.name())?,
            values(&bias, 2, self.name())?,
        );
        let block = c / self.groups * spatial;
        let mut y = vec![0.0; v.len()];
        if block > 0 {
            crate::par::for_each_split_mut(&mut y, block, &|at, chunk| {
                for (i, out) in chunk.chunks_mut(block).enumerate() {
                    let start = at + i * block;
                    let xs = &v[start..start + block];
                    let mean = xs.iter().sum::<f64>() / block as f64;
                    let var =
                        xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / block as f64;
                    let inv = 1.0 / (var + self.epsilon).sqrt();
                    for (j, (o, &x)) in out.iter_mut().zip(xs).enumerate() {
                        let ch = ((start + j) / spatial.max(1)) % c;
                        *o = (x - mean) * inv * sc[ch] + bi[ch];
                    }
                }
            });
        }
        like(&x, y)
    }
}

impl GroupNormalization {
    /// f32 data: each group's mean and variance in f64 (two passes, summed in lanes and in
    /// pieces, in parallel), then each channel's row mapped through `(x - mean) * a + b` in
    /// f64 with its `a = scale / sqrt(var + eps)`, rounded once.
    fn normalise_f32(
        &self,
        xs: &[f32],
        (sc, bi): (&[f32], &[f32]),
        c: usize,
        spatial: usize,
        epilogue: Option<&Epilogue>,
    ) -> Vec<f32> {
        let blocks = xs.len() / (c / self.groups * spatial).max(1);
        if xs.is_empty() || blocks == 0 {
            return vec![0.0; xs.len()];
        }
        let n = (xs.len() / blocks) as f64;
        let means: Vec<f64> = crate::floats::block_sums(xs, blocks, |_, x| x)
            .into_iter()
            .map(|s| s / n)
            .collect();
        let vars = crate::floats::block_sums(xs, blocks, |b, x| (x - means[b]) * (x - means[b]));
        let inv: Vec<f64> = vars
            .iter()
            .map(|v| 1.0 / (v / n + self.epsilon).sqrt())
            .collect();
        let per_group = c / self.groups;
        let spatial = spatial.max(1);
        let mut y = vec![0f32; xs.len()];
        crate::par::for_each_split_mut(&mut y, spatial, &|at, chunk| {
            for (i, dst) in chunk.chunks_mut(spatial).enumerate() {
                let row = at / spatial + i;
                let (ch, group) = (row % c, row / per_group);
                let (mean, a, b) = (means[group], inv[group] * sc[ch] as f64, bi[ch] as f64);
                let src = &xs[row * spatial..(row + 1) * spatial];
                let layout = Channels::Planes {
                    channels: c,
                    plane: spatial,
                };
                // In pieces, so that an epilogue reads each piece back from L1 (a 160x160
                // row is 100 KiB).
                for (k, (dst, src)) in dst.chunks_mut(PIECE).zip(src.chunks(PIECE)).enumerate() {
                    crate::simd::widest(
                        #[inline(always)]
                        || {
                            for (o, &x) in dst.iter_mut().zip(src) {
                                *o = ((x as f64 - mean) * a + b) as f32;
                            }
                        },
                    );
                    if let Some(e) = epilogue {
                        e.apply_at(dst, row * spatial + k * PIECE, layout);
                    }
                }
            }
        });
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// Two groups of two channels, one position each: each pair is normalised on its own.
    #[test]
    fn normalises_each_group() {
        let op = GroupNormalization {
            groups: 2,
            epsilon: 0.0,
        };
        let x = f32s(&[1, 4, 1], &[1., 3., 10., 30.]);
        let y = run(
            &op,
            vec![
                x,
                f32s(&[4], &[1., 1., 2., 2.]),
                f32s(&[4], &[0., 0., 0., 1.]),
            ],
        );
        assert_eq!(y, f32s(&[1, 4, 1], &[-1., 1., -2., 3.]));
        let e = op
            .infer(&[fact(F32, "1,3,2"), fact(F32, "3"), fact(F32, "3")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
    }

    /// The f32 kernel (statistics summed in pieces across threads) against a direct f64
    /// computation of the definition, on blocks longer than one piece and several batches.
    #[test]
    fn the_f32_kernel_matches_the_definition_at_any_thread_count() {
        let op = GroupNormalization {
            groups: 3,
            epsilon: 1e-5,
        };
        let (n, c, spatial) = (2, 6, 40_000);
        let x: Vec<f32> = (0..n * c * spatial)
            .map(|i| ((i * 7919 % 1000) as f32 - 400.0) * 0.01)
            .collect();
        let sc: Vec<f32> = (0..c).map(|i| 0.5 + i as f32).collect();
        let bi: Vec<f32> = (0..c).map(|i| i as f32 - 2.0).collect();
        let per = c / 3 * spatial;
        let mut want = vec![0f32; x.len()];
        for (b, block) in x.chunks(per).enumerate() {
            let m = block.iter().map(|&v| v as f64).sum::<f64>() / per as f64;
            let var = block.iter().map(|&v| (v as f64 - m).powi(2)).sum::<f64>() / per as f64;
            for (j, &v) in block.iter().enumerate() {
                let ch = (b * per + j) / spatial % c;
                let norm = (v as f64 - m) / (var + 1e-5).sqrt();
                want[b * per + j] = (norm * sc[ch] as f64 + bi[ch] as f64) as f32;
            }
        }
        let inputs = || vec![f32s(&[n, c, spatial], &x), f32s(&[c], &sc), f32s(&[c], &bi)];
        // `run` compares the results at 1 and 2 threads.
        let out = run(&op, inputs());
        let got = out.values::<f32>().unwrap();
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs() / w.abs().max(1.0))
            .fold(0f32, f32::max);
        assert!(worst <= 2.0 * f32::EPSILON, "worst relative error {worst}");
    }

    /// Prepared for f32 data of known channels, it takes over a per-channel Add and ReLU:
    /// the bits of the op, then the Add, then the ReLU; a bias of another length is
    /// refused, and nothing is prepared for f16 data.
    #[test]
    fn prepared_epilogue_is_the_add_and_relu_after() {
        use irun_opkit::epilogue::Activation;
        let op = GroupNormalization {
            groups: 2,
            epsilon: 1e-5,
        };
        let (c, spatial) = (4, 6);
        let x: Vec<f32> = (0..2 * c * spatial)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.3)
            .collect();
        let inputs = || {
            vec![
                std::sync::Arc::new(f32s(&[2, c, 2, 3], &x)),
                std::sync::Arc::new(f32s(&[c], &[1.5, -0.5, 2.0, 0.25])),
                std::sync::Arc::new(f32s(&[c], &[0.1, 0.2, -0.3, 0.4])),
            ]
        };
        let facts = [fact(F32, "2,4,2,3"), fact(F32, "4"), fact(F32, "4")];
        let mut prepared = op.prepare(&facts, &[None, None, None]).unwrap();
        let refused = Epilogue {
            bias: Some(vec![0.0; c + 1]),
            bias_axis_from_end: 2,
            activation: Activation::None,
        };
        assert!(!prepared.set_epilogue(&refused));
        let bias = [0.5f32, -1.0, 0.0, 2.0];
        let e = Epilogue {
            bias: Some(bias.to_vec()),
            bias_axis_from_end: 2,
            activation: Activation::Relu,
        };
        assert!(prepared.set_epilogue(&e));
        let plain = op.eval(inputs()).unwrap();
        let want: Vec<u32> = plain[0]
            .values::<f32>()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let v = v + bias[(i / spatial) % c];
                (if v > 0.0 { v } else { 0.0 }).to_bits()
            })
            .collect();
        let got = prepared.eval(inputs()).unwrap();
        let got: Vec<u32> = got[0]
            .values::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(got, want);
        let f16s = [fact(F16, "2,4,2,3"), fact(F16, "4"), fact(F16, "4")];
        assert!(op.prepare(&f16s, &[None, None, None]).is_none());
    }
}
