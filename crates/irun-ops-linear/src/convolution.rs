//! Convolution-1: cross-correlation of `data [N, Cin, *sp]` (1 to 3 spatial dims) with
//! `filters [Cout, Cin, *k]`, zero padding, no bias. `strides`, `pads_begin`, `pads_end` and
//! `dilations` per spatial dim (dilations omitted: 1s); `auto_pad` explicit, valid, same_upper
//! or same_lower (see `spatial.rs`). Float types, f16/bf16 computed in f32; integer types
//! (ONNX ConvInteger converts to i32) sum in their own type with wrapping, as OpenVINO's
//! reference does, which is exact whenever the true sum fits the type.

use irun_tensor::{with_int, Dim, ElementType, PartialShape};

use crate::attrs::AttrReader;
use crate::conv::{grouped, grouped_view};
use crate::conv_prepared::PreparedConv;
use crate::fact::Fact;
use crate::op::{
    codes, expect_inputs, same_element_type, take_inputs, Op, OpError, Prepared, Value,
};
use crate::spatial::Spatial;

#[derive(Debug)]
pub struct Convolution {
    pub spatial: Spatial,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(Convolution {
        spatial: Spatial::read(a, false, false, true)?,
    }))
}

/// The inference of Convolution (`groups_dims` 0: filters `[Cout, Cin, *k]`) and
/// GroupConvolution (1: `[G, Cout/G, Cin/G, *k]`): same types, the filters' rank, and
/// [`conv_shape`] with `(in_channels, out_channels)` from the filter dims.
pub fn infer_conv(
    name: &str,
    sp: &Spatial,
    inputs: &[Fact],
    groups_dims: usize,
    channels: impl Fn(&[Dim]) -> (Dim, Dim),
) -> Result<Vec<Fact>, OpError> {
    expect_inputs(inputs, 2, name)?;
    let ty = same_element_type(inputs, &[0, 1], name)?;
    let rank = sp.rank() + 2 + groups_dims;
    let shape = match inputs[1].shape.dims() {
        Some(f) if f.len() != rank => {
            return Err(OpError::input(
                1,
                codes::RANK,
                format!("{name}: filters {} must have rank {rank}", inputs[1].shape),
            ))
        }
        Some(f) => {
            let (cin, cout) = channels(f);
            conv_shape(name, sp, &inputs[0], cin, cout, &f[2 + groups_dims..])?
        }
        None => PartialShape::dynamic_rank(),
    };
    Ok(vec![Fact::new(ty, shape)])
}

/// The output shape of a (grouped) convolution: batch, `out_channels`, spatial dims; checks
/// ranks and that `in_channels` matches the data's channel dim.
pub fn conv_shape(
    name: &str,
    sp: &Spatial,
    data: &Fact,
    in_channels: Dim,
    out_channels: Dim,
    kernel: &[Dim],
) -> Result<PartialShape, OpError> {
    let numeric = data.ty.is_real() || with_int!(data.ty, T => true, else false);
    if !numeric && data.ty != ElementType::Dynamic {
        return Err(OpError::input(
            0,
            codes::ELEMENT_TYPE,
            format!(
                "{name}: data must be a floating-point or integer type, got {}",
                data.ty
            ),
        ));
    }
    let Some(d) = data.shape.dims() else {
        return Ok(PartialShape::dynamic_rank());
    };
    if d.len() != sp.rank() + 2 {
        return Err(OpError::input(
            0,
            codes::RANK,
            format!(
                "{name}: data {} must have rank {} for {} spatial dim(s) (strides)",
                data.shape,
                sp.rank() + 2,
                sp.rank()
            ),
        ));
    }
    if !d[1].compatible(in_channels) {
        return Err(OpError::input(
            1,
            codes::SHAPE,
            format!(
                "{name}: data {} has {} input channels, the filters expect {in_channels}",
                data.shape, d[1]
            ),
        ));
    }
    let mut out = vec![d[0], out_channels];
    for (i, &k) in kernel.iter().enumerate() {
        out.push(match k.get_static() {
            Some(k) => sp
                .out_dim(i, d[2 + i], k as usize)
                .map_err(|e| OpError::input(0, codes::SHAPE, format!("{name}: {}", e.message)))?,
            None => Dim::DYNAMIC,
        });
    }
    Ok(PartialShape::new(out))
}

impl Op for Convolution {
    fn name(&self) -> &'static str {
        "Convolution-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        infer_conv(self.name(), &self.spatial, inputs, 0, |f| (f[1], f[0]))
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [data, filters] = take_inputs::<2>(inputs, self.name())?;
        let as_groups = grouped_view(&filters, false)?;
        Ok(vec![grouped(
            &data,
            &as_groups,
            1,
            &self.spatial,
            self.name(),
        )?])
    }

    fn prepare(&self, _: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        PreparedConv::kernel(constants, &self.spatial, false, "Convolution-1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spatial::{AutoPad, Rounding};
    use crate::testing::{eval1, fact, infer1};
    use irun_tensor::ElementType::*;
    use irun_tensor::Tensor;

    fn conv(s: usize, p: usize, d: usize, auto_pad: AutoPad) -> Convolution {
        Convolution {
            spatial: Spatial {
                strides: vec![s, s],
                pads_begin: vec![p, p],
                pads_end: vec![p, p],
                dilations: vec![d, d],
                auto_pad,
                rounding: Rounding::Floor,
            },
        }
    }

    /// Direct 2-D cross-correlation, f64, for comparison.
    fn naive(
        x: &[f64],
        (c, h, w): (usize, usize, usize),
        f: &[f64],
        (o, k): (usize, usize),
        s: usize,
        p: usize,
    ) -> Vec<f64> {
        let (oh, ow) = ((h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1);
        let mut out = vec![0.0; o * oh * ow];
        for oc in 0..o {
            for y in 0..oh {
                for xx in 0..ow {
                    let mut acc = 0.0;
                    for ic in 0..c {
                        for a in 0..k {
                            for b in 0..k {
                                let (iy, ix) = (
                                    (y * s + a) as isize - p as isize,
                                    (xx * s + b) as isize - p as isize,
                                );
                                if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                                    acc += x[(ic * h + iy as usize) * w + ix as usize]
                                        * f[((oc * c + ic) * k + a) * k + b];
                                }
                            }
                        }
                    }
                    out[(oc * oh + y) * ow + xx] = acc;
                }
            }
        }
        out
    }

    type Dims = (usize, usize, usize, usize, usize);

    /// `(c, h, w, o, k)`, data `[1, c, h, w]` and filters `[o, c, k, k]` of small integers
    /// (exact in any numeric type).
    fn small_integers() -> (Dims, Vec<f64>, Vec<f64>) {
        let (c, h, w, o, k) = (3, 9, 11, 4, 3);
        let x = (0..c * h * w).map(|i| ((i * 7) % 17) as f64 - 8.0);
        let f = (0..o * c * k * k).map(|i| ((i * 5) % 7) as f64 - 3.0);
        ((c, h, w, o, k), x.collect(), f.collect())
    }

    #[test]
    fn matches_a_direct_convolution() {
        let ((c, h, w, o, k), x, f) = small_integers();
        for (s, p) in [(1, 0), (2, 1), (1, 1)] {
            let out = eval1(
                &conv(s, p, 1, AutoPad::Explicit),
                vec![
                    Tensor::from_f64(vec![1, c, h, w], x.clone()).unwrap(),
                    Tensor::from_f64(vec![o, c, k, k], f.clone()).unwrap(),
                ],
            )
            .unwrap();
            assert_eq!(
                out.values::<f64>().unwrap(),
                naive(&x, (c, h, w), &f, (o, k), s, p).as_slice(),
                "s{s} p{p}"
            );
        }
    }

    /// Integer data (ONNX ConvInteger, converted to i32): exact sums, and sums past the type
    /// wrap as the reference's sums in the type do (i8: 4 * 100 * 1 = 400 wraps to -112).
    #[test]
    fn integer_types_sum_exactly_and_wrap() {
        let ((c, h, w, o, k), x, f) = small_integers();
        let want: Vec<i32> = naive(&x, (c, h, w), &f, (o, k), 2, 1)
            .iter()
            .map(|&v| v as i32)
            .collect();
        let ints = |shape: Vec<usize>, v: &[f64]| {
            Tensor::from_i32(shape, v.iter().map(|&v| v as i32).collect()).unwrap()
        };
        let op = conv(2, 1, 1, AutoPad::Explicit);
        let facts = [fact(I32, "1,3,9,11"), fact(I32, "4,3,3,3")];
        assert_eq!(infer1(&op, &facts).unwrap().ty, I32);
        let out = eval1(
            &op,
            vec![ints(vec![1, c, h, w], &x), ints(vec![o, c, k, k], &f)],
        )
        .unwrap();
        assert_eq!(out.values::<i32>().unwrap(), want.as_slice());

        let x = Tensor::from_i8(vec![1, 4, 1, 1], vec![100; 4]).unwrap();
        let f = Tensor::from_i8(vec![1, 4, 1, 1], vec![1; 4]).unwrap();
        let out = eval1(&conv(1, 0, 1, AutoPad::Explicit), vec![x, f]).unwrap();
        assert_eq!(out.values::<i8>().unwrap(), &[-112]);

        let bad = infer1(&op, &[fact(Boolean, "1,3,9,11"), fact(Boolean, "4,3,3,3")]);
        assert!(bad
            .unwrap_err()
            .message
            .contains("floating-point or integer type, got boolean"));
    }

    /// Filters packed at compile time (whose GEMM gathers the patches itself) give the
    /// run-time kernel's output (explicit patches) bit for bit, at 1 and 2 threads, on two
    /// batch items with strides, padding and dilation (each product above `SMALL_PRODUCT`,
    /// which would take other loops); f64 filters are not packed.
    #[test]
    fn packed_filters_match_the_run_time_kernel() {
        let (n, c, h, w, o, k) = (2, 5, 13, 12, 7, 3);
        let x: Vec<f32> = (0..n * c * h * w)
            .map(|i| ((i * 7) % 17) as f32 * 0.37 - 3.0)
            .collect();
        let f: Vec<f32> = (0..o * c * k * k)
            .map(|i| ((i * 5) % 11) as f32 * 0.21 - 1.0)
            .collect();
        let inputs = || {
            vec![
                Tensor::from_f32(vec![n, c, h, w], x.clone()).unwrap(),
                Tensor::from_f32(vec![o, c, k, k], f.clone()).unwrap(),
            ]
        };
        for (s, p, d) in [(2, 1, 1), (1, 2, 2), (3, 3, 1), (1, 4, 1)] {
            let op = conv(s, p, d, AutoPad::Explicit);
            let plain = eval1(&op, inputs()).unwrap();
            for threads in [1, 2] {
                let packed = crate::testing::eval_prepared(&op, inputs(), &[false, true], threads)
                    .expect("prepared")
                    .unwrap();
                assert_eq!(
                    format!("{packed:?}"),
                    format!("{plain:?}"),
                    "s{s} p{p} d{d}, {threads} threads"
                );
            }
        }
        // A 1x1 kernel at stride 1 (pointwise: `PointwiseFilters` on AVX-512, else the packed
        // GEMM), two batch items.
        let f1: Vec<f32> = f.iter().copied().take(o * c).collect();
        let pointwise = || {
            vec![
                Tensor::from_f32(vec![n, c, h, w], x.clone()).unwrap(),
                Tensor::from_f32(vec![o, c, 1, 1], f1.clone()).unwrap(),
            ]
        };
        let op = conv(1, 0, 1, AutoPad::Explicit);
        let plain = eval1(&op, pointwise()).unwrap();
        for threads in [1, 2] {
            let packed = crate::testing::eval_prepared(&op, pointwise(), &[false, true], threads)
                .expect("prepared")
                .unwrap();
            assert_eq!(
                format!("{packed:?}"),
                format!("{plain:?}"),
                "1x1, {threads} threads"
            );
        }
        // 3x3 filters of `c` channels into `o` on a `side` x `side` input, prepared (twice,
        // at 1 and 2 threads) and not: the same bits.
        let same_bits_prepared = |c: usize, o: usize, side: usize, stride: usize, what: &str| {
            let inputs = || {
                vec![
                    Tensor::from_f32(
                        vec![1, c, side, side],
                        (0..c * side * side)
                            .map(|i| ((i * 7) % 19) as f32 * 0.3 - 2.0)
                            .collect(),
                    )
                    .unwrap(),
                    Tensor::from_f32(
                        vec![o, c, 3, 3],
                        (0..o * c * 9)
                            .map(|i| ((i * 5) % 13) as f32 * 0.2 - 1.1)
                            .collect(),
                    )
                    .unwrap(),
                ]
            };
            let op = conv(stride, 1, 1, AutoPad::Explicit);
            let plain = eval1(&op, inputs()).unwrap();
            for threads in [1, 2] {
                for _ in 0..2 {
                    let packed =
                        crate::testing::eval_prepared(&op, inputs(), &[false, true], threads)
                            .expect("prepared")
                            .unwrap();
                    assert_eq!(
                        format!("{packed:?}"),
                        format!("{plain:?}"),
                        "{what}, {threads} threads"
                    );
                }
            }
        };
        // A small plane of many channels (32 x 9 multiply-adds per output on 8x8): the
        // channel tiles on AVX-512, on AVX2 the GEMM by position rows on filters packed on
        // first use rather than the position tiles ([`DirectFilters::runs`]); unprepared
        // filters take the same kernel.
        same_bits_prepared(32, 8, 8, 1, "32 channels on 8x8");
        // Filters packed transposed for the GEMM by position rows, on a plane too large for
        // it (33x33 at stride 2): the left-operand packing made on first use.
        same_bits_prepared(16, 8, 66, 2, "16 channels onto 33x33");
        let op = conv(2, 1, 1, AutoPad::Explicit);
        let f64s = vec![
            Tensor::from_f64(vec![1, 1, 3, 3], vec![0.0; 9]).unwrap(),
            Tensor::from_f64(vec![1, 1, 1, 1], vec![1.0]).unwrap(),
        ];
        assert!(crate::testing::eval_prepared(&op, f64s, &[false, true], 1).is_none());
    }

    /// Asked for a channel-last output, the prepared convolution gives the planar output
    /// moved to `[n, h, w, c]`, bit for bit, with a bias and ReLU taken over, on each of its
    /// paths (patch blocks of a stem, position rows, the direct tiles, 1x1 kernels, groups;
    /// which one a CPU takes varies), and the planar output again when asked to stop.
    #[test]
    fn prepared_output_channel_last_is_the_planar_one_moved() {
        use crate::testing::prelude::*;
        use irun_opkit::epilogue::Epilogue;
        use irun_opkit::testing::on_threads;
        use std::sync::Arc;
        let cases = [
            // n, ci, co, side, k, stride, groups
            (1, 3, 32, 40, 3, 2, 1),
            (2, 16, 8, 66, 3, 2, 1),
            (1, 32, 8, 8, 3, 1, 1),
            (2, 12, 20, 9, 1, 1, 1),
            (1, 6, 4, 10, 3, 1, 2),
        ];
        for (n, ci, co, side, k, stride, groups) in cases {
            let x: Vec<f32> = (0..n * ci * side * side)
                .map(|i| ((i * 7) % 19) as f32 * 0.3 - 2.0)
                .collect();
            let per = ci / groups;
            let f: Vec<f32> = (0..co * per * k * k)
                .map(|i| ((i * 5) % 13) as f32 * 0.2 - 1.1)
                .collect();
            let filters = if groups == 1 {
                f32s(&[co, ci, k, k], &f)
            } else {
                f32s(&[groups, co / groups, per, k, k], &f)
            };
            let inputs = vec![Arc::new(f32s(&[n, ci, side, side], &x)), Arc::new(filters)];
            let c = conv(stride, k / 2, 1, AutoPad::Explicit);
            let g = crate::group_convolution::GroupConvolution {
                spatial: c.spatial.clone(),
            };
            let op: &dyn Op = if groups == 1 { &c } else { &g };
            let at = format!("{ci} -> {co} on {side}x{side}, k{k} s{stride}, {groups} group(s)");
            let mut kernel =
                crate::testing::prepare(op, &inputs, &[false, true]).expect("prepared");
            let e = Epilogue {
                bias: Some((0..co).map(|c| c as f32 * 0.25 - 2.0).collect()),
                bias_axis_from_end: 2,
                activation: irun_opkit::epilogue::Activation::Relu,
            };
            assert!(kernel.set_epilogue(&e), "{at}");
            let planar = kernel.eval(inputs.clone()).unwrap().remove(0);
            assert!(kernel.set_channels_last_output(true), "{at}");
            let last = on_threads(2, || kernel.eval(inputs.clone()))
                .unwrap()
                .remove(0);
            let s = planar.shape();
            assert_eq!(last.shape(), [s[0], s[2], s[3], s[1]], "{at}");
            let values = planar.values::<f32>().unwrap();
            let want = irun_opkit::testing::moved_channels_last(values, s[1], s[2] * s[3]);
            irun_opkit::testing::assert_same_bits(last.values::<f32>().unwrap(), &want, &at);
            assert!(kernel.set_channels_last_output(false));
            let again = kernel.eval(inputs.clone()).unwrap().remove(0);
            assert_eq!(format!("{again:?}"), format!("{planar:?}"), "{at}");
        }
    }

    #[test]
    fn shapes_and_channel_check() {
        let s = |op: &Convolution, x: &str, f: &str| {
            infer1(op, &[fact(F32, x), fact(F32, f)]).map(|f| f.shape.to_string())
        };
        assert_eq!(
            s(&conv(2, 3, 1, AutoPad::Explicit), "1,3,224,224", "64,3,7,7").unwrap(),
            "[1,64,112,112]"
        );
        assert_eq!(
            s(&conv(2, 0, 1, AutoPad::SameUpper), "?,3,15,?", "8,3,3,3").unwrap(),
            "[?,8,8,?]"
        );
        assert_eq!(
            s(&conv(1, 0, 2, AutoPad::Valid), "1,3,9,9", "8,3,3,3").unwrap(),
            "[1,8,5,5]"
        );
        let e = infer1(
            &conv(1, 0, 1, AutoPad::Explicit),
            &[fact(F32, "1,4,8,8"), fact(F32, "8,3,3,3")],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let e = infer1(
            &conv(1, 0, 1, AutoPad::Explicit),
            &[fact(F32, "1,3,8"), fact(F32, "8,3,3,3")],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::RANK);
    }
}
