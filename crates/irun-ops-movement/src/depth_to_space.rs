//! DepthToSpace-1: moves blocks of `block_size^K` channels into `block_size x .. x
//! block_size` spatial blocks: `[N, C, D1 .. DK]` -> `[N, C / bs^K, D1 * bs .. DK * bs]`.
//! `blocks_first` (ONNX's DCR) reads the channels as `[bs, .., bs, C / bs^K]`, `depth_first`
//! (CRD) as `[C / bs^K, bs, .., bs]`.

use crate::attrs::AttrReader;
use crate::blocks::Blocks;
use crate::fact::Fact;
use crate::op::{take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct DepthToSpace(pub Blocks);

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(DepthToSpace(Blocks::read(a)?)))
}

impl Op for DepthToSpace {
    fn name(&self) -> &'static str {
        "DepthToSpace-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let bs = self.0.size;
        self.0.infer(
            inputs,
            self.name(),
            |c, volume| (c % volume == 0).then(|| c / volume),
            |d| d.checked_mul(bs),
        )
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let facts = self.infer(&[Fact::of_static(x.element_type(), x.shape())])?;
        let out = facts[0].shape.to_static().expect("static input");
        let (s, k, bs) = (x.shape(), x.shape().len() - 2, self.0.size);
        let c = out[1];
        // The channels split into blocks, then the spatial dims.
        let mut split = vec![s[0]];
        let mut perm = vec![0];
        if self.0.blocks_first {
            split.extend(std::iter::repeat_n(bs, k));
            split.push(c);
            // [N, b1 .. bK, C', D1 .. DK] -> [N, C', D1, b1, .., DK, bK]
            perm.push(k + 1);
            for i in 0..k {
                perm.extend([k + 2 + i, 1 + i]);
            }
        } else {
            split.push(c);
            split.extend(std::iter::repeat_n(bs, k));
            // [N, C', b1 .. bK, D1 .. DK] -> [N, C', D1, b1, .., DK, bK]
            perm.push(1);
            for i in 0..k {
                perm.extend([k + 2 + i, 2 + i]);
            }
        }
        split.extend_from_slice(&s[2..]);
        Ok(vec![Blocks::rearrange(
            &x,
            &split,
            &perm,
            out,
            self.name(),
        )?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn op(blocks_first: bool) -> DepthToSpace {
        DepthToSpace(Blocks {
            size: 2,
            blocks_first,
        })
    }

    /// ONNX's DepthToSpace examples: x [1, 8, 2, 3] of 0..48 with blocksize 2, DCR and CRD.
    #[test]
    fn onnx_examples() {
        let x = f32s(
            &[1, 8, 2, 3],
            &(0..48).map(|v| v as f32).collect::<Vec<_>>(),
        );
        let dcr = run(&op(true), vec![x.clone()]).unwrap();
        #[rustfmt::skip]
        let want = [
            0., 12., 1., 13., 2., 14., 24., 36., 25., 37., 26., 38.,
            3., 15., 4., 16., 5., 17., 27., 39., 28., 40., 29., 41.,
            6., 18., 7., 19., 8., 20., 30., 42., 31., 43., 32., 44.,
            9., 21., 10., 22., 11., 23., 33., 45., 34., 46., 35., 47.,
        ];
        assert_eq!(dcr[0], f32s(&[1, 2, 4, 6], &want));
        let crd = run(&op(false), vec![x]).unwrap();
        #[rustfmt::skip]
        let want = [
            0., 6., 1., 7., 2., 8., 12., 18., 13., 19., 14., 20.,
            3., 9., 4., 10., 5., 11., 15., 21., 16., 22., 17., 23.,
            24., 30., 25., 31., 26., 32., 36., 42., 37., 43., 38., 44.,
            27., 33., 28., 34., 29., 35., 39., 45., 40., 46., 41., 47.,
        ];
        assert_eq!(crd[0], f32s(&[1, 2, 4, 6], &want));
    }

    #[test]
    fn shapes_and_errors() {
        let f = op(true).infer(&[fact(F32, "?,8,3,?")]).unwrap();
        assert_eq!(f[0].shape.to_string(), "[?,2,6,?]");
        let e = op(true).infer(&[fact(F32, "1,6,3,3")]).unwrap_err();
        assert!(
            e.message.contains("does not divide into blocks of 2"),
            "{}",
            e.message
        );
        assert!(op(true).infer(&[fact(F32, "1,8")]).is_err());
    }
}
