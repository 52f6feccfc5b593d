//! ReverseSequence-1: for each batch b (along `batch_axis`, default 0), the first
//! `seq_lengths[b]` elements along `seq_axis` (default 1) in reverse order, the rest as they
//! are. Negative axes count from the end; the two axes differ. A length of 0 reverses
//! nothing (as 1 does, as OpenVINO CPU treats it); one past the axis is an error.

use irun_tensor::{with_words, Word};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::strided::row_major_strides;
use crate::util::{ints, no_strings, norm_axis, output};

#[derive(Debug)]
pub struct ReverseSequence {
    pub batch_axis: i64,
    pub seq_axis: i64,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ReverseSequence {
        batch_axis: a.i64_or("batch_axis", Some(0))?,
        seq_axis: a.i64_or("seq_axis", Some(1))?,
    }))
}

impl ReverseSequence {
    fn axes(&self, rank: usize) -> Result<(usize, usize), OpError> {
        let b = norm_axis(self.batch_axis, rank, None, self.name())?;
        let s = norm_axis(self.seq_axis, rank, None, self.name())?;
        if b == s {
            return Err(OpError::attribute(
                "seq_axis",
                format!("{}: batch_axis and seq_axis are both {b}", self.name()),
            ));
        }
        Ok((b, s))
    }
}

impl Op for ReverseSequence {
    fn name(&self) -> &'static str {
        "ReverseSequence-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        crate::util::expect_int_type(inputs, 1, self.name())?;
        let x = &inputs[0];
        if let Some(d) = x.shape.dims() {
            if d.len() < 2 {
                return Err(OpError::input(
                    0,
                    codes::RANK,
                    format!("{}: data {} must have rank 2 or more", self.name(), x.shape),
                ));
            }
            let (b, _) = self.axes(d.len())?;
            if let Some(l) = inputs[1].shape.dims() {
                if l.len() != 1 || !l[0].compatible(d[b]) {
                    return Err(OpError::input(
                        1,
                        codes::SHAPE,
                        format!(
                            "{}: seq_lengths {} for batch dim {}",
                            self.name(),
                            inputs[1].shape,
                            d[b]
                        ),
                    ));
                }
            }
        }
        Ok(vec![Fact::new(x.ty, x.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x, lengths] = take_inputs::<2>(inputs, self.name())?;
        let shape = x.shape();
        let (b, s) = self.axes(shape.len())?;
        let lens = ints(&lengths, 1)?;
        if lens.len() != shape[b] {
            return Err(OpError::input(
                1,
                codes::RUN_SHAPE,
                format!(
                    "{}: {} lengths for batch dim {}",
                    self.name(),
                    lens.len(),
                    shape[b]
                ),
            ));
        }
        if let Some((i, &l)) = lens
            .iter()
            .enumerate()
            .find(|(_, &l)| l < 0 || l as usize > shape[s])
        {
            return Err(OpError::input(
                1,
                codes::RUN_VALUE,
                format!(
                    "{}: length {l} of batch {i} is not in [0, {}]",
                    self.name(),
                    shape[s]
                ),
            ));
        }
        let strides = row_major_strides(shape);
        let (bs, ss) = (strides[b] as usize, strides[s] as usize);
        let words = x.words().ok_or_else(|| no_strings(self.name()))?;
        let out = with_words!(words, w => {
            let mut out = w.to_vec();
            for (p, o) in out.iter_mut().enumerate() {
                let (bi, t) = (p / bs % shape[b], p / ss % shape[s]);
                let len = lens[bi].max(1) as usize;
                if t < len {
                    *o = w[p - t * ss + (len - 1 - t) * ss];
                }
            }
            Word::into_word_vec(out)
        });
        Ok(vec![output(x.element_type(), shape.to_vec(), out)?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    /// ONNX's reversesequence_time example: seq axis 0, batch axis 1, lengths [4, 3, 2, 1].
    #[test]
    fn onnx_time_major() {
        let op = ReverseSequence {
            batch_axis: 1,
            seq_axis: 0,
        };
        let x = f32s(
            &[4, 4],
            &[
                0., 4., 8., 12., 1., 5., 9., 13., 2., 6., 10., 14., 3., 7., 11., 15.,
            ],
        );
        let out = run(&op, vec![x, i64s(&[4], &[4, 3, 2, 1])]).unwrap();
        #[rustfmt::skip]
        let want = [3., 6., 9., 12., 2., 5., 8., 13., 1., 4., 10., 14., 0., 7., 11., 15.];
        assert_eq!(out[0], f32s(&[4, 4], &want));
        let e = run(&op, vec![f32s(&[2, 2], &[0.; 4]), i64s(&[2], &[3, 1])]).unwrap_err();
        assert_eq!(e.code, codes::RUN_VALUE);
        let e = ReverseSequence {
            batch_axis: 1,
            seq_axis: -1,
        }
        .infer(&[fact(F32, "2,2"), fact(I64, "2")])
        .unwrap_err();
        assert!(e.message.contains("both 1"), "{}", e.message);
    }
}
