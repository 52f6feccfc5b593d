//! SpaceToDepth-1: DepthToSpace's inverse, `[N, C, D1 .. DK]` -> `[N, C * bs^K, D1 / bs ..
//! DK / bs]`; each spatial dim must divide by `block_size`. `blocks_first` puts the block
//! offsets before the channel in the new channel index, `depth_first` after it.

use crate::attrs::AttrReader;
use crate::blocks::Blocks;
use crate::fact::Fact;
use crate::op::{take_inputs, Op, OpError, Value};

#[derive(Debug)]
pub struct SpaceToDepth(pub Blocks);

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(SpaceToDepth(Blocks::read(a)?)))
}

impl Op for SpaceToDepth {
    fn name(&self) -> &'static str {
        "SpaceToDepth-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let bs = self.0.size;
        self.0.infer(
            inputs,
            self.name(),
            |c, volume| c.checked_mul(volume),
            |d| (d % bs == 0).then(|| d / bs),
        )
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let facts = self.infer(&[Fact::of_static(x.element_type(), x.shape())])?;
        let out = facts[0].shape.to_static().expect("static input");
        let (s, k, bs) = (x.shape(), x.shape().len() - 2, self.0.size);
        // [N, C, D1/bs, b1, .., DK/bs, bK]
        let mut split = vec![s[0], s[1]];
        for &d in &s[2..] {
            split.extend([d / bs, bs]);
        }
        let blocks: Vec<usize> = (0..k).map(|i| 3 + 2 * i).collect();
        let spatial: Vec<usize> = (0..k).map(|i| 2 + 2 * i).collect();
        let mut perm = vec![0];
        if self.0.blocks_first {
            perm.extend(&blocks);
            perm.push(1);
        } else {
            perm.push(1);
            perm.extend(&blocks);
        }
        perm.extend(&spatial);
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
    use crate::depth_to_space::DepthToSpace;
    use crate::testing::*;

    /// ONNX's example (blocks_first) and, for both modes, the inverse of DepthToSpace.
    #[test]
    fn onnx_example_and_inverse() {
        let op = |blocks_first| {
            SpaceToDepth(Blocks {
                size: 2,
                blocks_first,
            })
        };
        let x = f32s(
            &[1, 2, 2, 4],
            &(0..16).map(|v| v as f32).collect::<Vec<_>>(),
        );
        let out = run(&op(true), vec![x.clone()]).unwrap();
        // Output channel (bh * 2 + bw) * 2 + c holds x[c, 2 oh + bh, 2 ow + bw].
        #[rustfmt::skip]
        let want = [0., 2., 8., 10., 1., 3., 9., 11., 4., 6., 12., 14., 5., 7., 13., 15.];
        assert_eq!(out[0], f32s(&[1, 8, 1, 2], &want));
        for blocks_first in [true, false] {
            let s2d = run(&op(blocks_first), vec![x.clone()]).unwrap();
            let back = run(
                &DepthToSpace(Blocks {
                    size: 2,
                    blocks_first,
                }),
                s2d,
            )
            .unwrap();
            assert_eq!(back[0], x, "blocks_first {blocks_first}");
        }
        let e = op(true).infer(&[fact(F32, "1,2,3,4")]).unwrap_err();
        assert!(e.message.contains("does not divide"), "{}", e.message);
    }
}
