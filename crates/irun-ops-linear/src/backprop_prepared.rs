//! ConvolutionBackpropData and GroupConvolutionBackpropData prepared for constant f32
//! filters: in 2-D `w^T` packed for the GEMM once (`backprop_rows.rs` packed it on every
//! run, a twelfth of a 128 -> 64-channel layer's time), and a bias and activation after the
//! op taken over as an epilogue.

use irun_opkit::epilogue::Epilogue;
use irun_tensor::ElementType;

use crate::backprop_rows::PackedFilters;
use crate::conv_backprop::{vals, ConvBackprop};
use crate::op::{OpError, Prepared, Value};

impl ConvBackprop {
    /// [`crate::op::Op::prepare`]: constant f32 filters (input 1) give a [`PreparedBackprop`].
    pub(crate) fn prepared(&self, constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        let w = constants.get(1)?.as_ref()?;
        if w.element_type() != ElementType::F32 {
            return None;
        }
        // Packed for the 2-D kernel by rows; other ranks are prepared for the epilogue.
        let packed = match self.strides.len() {
            2 => Some(self.pack_filters(w.shape(), vals(w).ok()?)?),
            _ => None,
        };
        let channels = match (self.grouped, w.shape()) {
            (true, [g, _, cout, ..]) => g * cout,
            (false, [_, cout, ..]) => *cout,
            _ => return None,
        };
        Some(Box::new(PreparedBackprop {
            op: self.clone(),
            packed,
            channels,
            epilogue: None,
        }))
    }
}

/// The op with its filters packed (2-D only) and the epilogue it took over, if any.
#[derive(Debug)]
struct PreparedBackprop {
    op: ConvBackprop,
    packed: Option<PackedFilters>,
    /// Output channels (all groups').
    channels: usize,
    /// The bias and activation after it, applied to each output row as it is finished.
    epilogue: Option<Epilogue>,
}

impl Prepared for PreparedBackprop {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.op
            .eval_with(inputs, self.packed.as_ref(), self.epilogue.as_ref())
    }

    fn byte_size(&self) -> usize {
        self.packed.as_ref().map_or(0, |p| p.bytes)
    }

    fn set_epilogue(&mut self, e: &Epilogue) -> bool {
        e.keep_if_fits(&mut self.epilogue, self.channels, self.op.strides.len())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use irun_opkit::epilogue::Activation;

    use super::*;
    use crate::conv_backprop::tests::op;
    use crate::op::Op;
    use crate::spatial::AutoPad;
    use crate::testing::eval1;
    use crate::testing::prelude::*;

    /// With constant f32 filters the op prepares them packed; the prepared kernel gives the
    /// op's own bits, and filters of another shape than prepared are packed on the run.
    #[test]
    fn prepared_filters_give_the_same_bits() {
        let c = op(false, 2, 1, 0, AutoPad::Explicit);
        let value = |j: usize| ((j * 7919) % 2003) as f32 / 1001.0 - 1.0;
        let x = f32s(&[1, 6, 5, 7], &(0..210).map(value).collect::<Vec<_>>());
        let w = f32s(
            &[6, 4, 4, 4],
            &(0..384).map(|j| value(j + 5)).collect::<Vec<_>>(),
        );
        let facts = [fact(F32, "1,6,5,7"), fact(F32, "6,4,4,4")];
        let prepared = c
            .prepare(&facts, &[None, Some(Arc::new(w.clone()))])
            .unwrap();
        let want = eval1(&c, vec![x.clone(), w.clone()]).unwrap();
        let got = prepared
            .eval(vec![Arc::new(x.clone()), Arc::new(w)])
            .unwrap();
        crate::testing::assert_same_bits(
            got[0].values::<f32>().unwrap(),
            want.values::<f32>().unwrap(),
            "prepared",
        );
        assert!(c
            .prepare(
                &facts,
                &[
                    None,
                    Some(Arc::new(f16s(
                        &[6, 4, 4, 4],
                        &[half::f16::from_f32(0.5); 384]
                    )))
                ]
            )
            .is_none());
        let other = c.pack_filters(&[6, 2, 4, 4], &[0.5; 192]).unwrap();
        let g = c.geometry(&[1, 6, 5, 7], &[6, 4, 4, 4], None).unwrap();
        let w: Vec<f32> = (0..384).map(|j| value(j + 5)).collect();
        let got = c
            .run_by_rows(&g, x.values::<f32>().unwrap(), &w, Some(&other), None, None)
            .unwrap();
        crate::testing::assert_same_bits(&got, want.values::<f32>().unwrap(), "mismatched pack");
    }

    /// A bias and ReLU taken over by the prepared kernel give the bits of the op followed by
    /// the Add and the ReLU, in 2-D (applied row by row) and in 1-D (after the product); a
    /// bias of another length than the output channels is refused.
    #[test]
    fn prepared_epilogue_is_the_add_and_relu_after() {
        let value = |j: usize| ((j * 7919) % 2003) as f32 / 1001.0 - 1.0;
        let cases: [(ConvBackprop, Vec<usize>, Vec<usize>); 2] = [
            (
                op(false, 2, 1, 0, AutoPad::Explicit),
                vec![2, 6, 5, 7],
                vec![6, 4, 4, 4],
            ),
            (
                ConvBackprop {
                    grouped: true,
                    strides: vec![2],
                    dilations: vec![1],
                    pads_begin: vec![1],
                    pads_end: vec![1],
                    output_padding: vec![0],
                    auto_pad: AutoPad::Explicit,
                },
                vec![1, 4, 9],
                vec![2, 2, 3, 3],
            ),
        ];
        for (c, xs, ws) in cases {
            let xn: usize = xs.iter().product();
            let wn: usize = ws.iter().product();
            let x = Arc::new(f32s(&xs, &(0..xn).map(value).collect::<Vec<_>>()));
            let w = Arc::new(f32s(
                &ws,
                &(0..wn).map(|j| value(j + 5)).collect::<Vec<_>>(),
            ));
            let facts = [fact(F32, "?"), fact(F32, "?")];
            let mut prepared = c.prepare(&facts, &[None, Some(w.clone())]).unwrap();
            let plain = eval1(&c, vec![(*x).clone(), (*w).clone()]).unwrap();
            let channels = plain.shape()[1];
            let plane: usize = plain.shape()[2..].iter().product();
            let bias: Vec<f32> = (0..channels).map(|j| value(j + 11) * 0.5).collect();
            let refused = Epilogue {
                bias: Some(vec![0.0; channels + 1]),
                bias_axis_from_end: xs.len() - 2,
                activation: Activation::None,
            };
            assert!(!prepared.set_epilogue(&refused));
            let e = Epilogue {
                bias: Some(bias.clone()),
                bias_axis_from_end: xs.len() - 2,
                activation: Activation::Relu,
            };
            assert!(prepared.set_epilogue(&e));
            let got = prepared.eval(vec![x, w]).unwrap();
            let want: Vec<f32> = plain
                .values::<f32>()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let v = v + bias[(i / plane) % channels];
                    if v > 0.0 {
                        v
                    } else {
                        0.0
                    }
                })
                .collect();
            crate::testing::assert_same_bits(
                got[0].values::<f32>().unwrap(),
                &want,
                format!("{xs:?}"),
            );
        }
    }
}
