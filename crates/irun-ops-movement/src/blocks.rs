//! What DepthToSpace-1 and SpaceToDepth-1 share: `block_size` (>= 1, omitted 1) and `mode`
//! (`blocks_first` or `depth_first`, required), the shape rule, and the move itself, a
//! reshape to `2K + 2` dims, a transpose through the kit's strided copy and a reshape, for
//! data `[N, C, D1 .. DK]`.

use irun_tensor::{Dim, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, OpError, Value};
use crate::strided::Strided;
use crate::util::output;

/// The attributes.
#[derive(Debug, Clone, Copy)]
pub struct Blocks {
    pub size: usize,
    pub blocks_first: bool,
}

impl Blocks {
    pub fn read(a: &AttrReader) -> Result<Blocks, OpError> {
        let size = a.i64_or("block_size", Some(1))?;
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s >= 1)
            .ok_or_else(|| {
                OpError::attribute(
                    "block_size",
                    format!("block_size must be at least 1, got {size}"),
                )
            })?;
        let mode = a.enum_or("mode", &["blocks_first", "depth_first"], "blocks_first")?;
        Ok(Blocks {
            size,
            blocks_first: mode == "blocks_first",
        })
    }

    /// `size^k`, `None` on overflow.
    fn volume(&self, k: usize) -> Option<usize> {
        u32::try_from(k).ok().and_then(|k| self.size.checked_pow(k))
    }

    /// The output fact: the channel dim by `channel`, each spatial dim by `spatial` (`None`:
    /// not divisible, an error); dynamic where the input's dim is not static.
    pub fn infer(
        &self,
        inputs: &[Fact],
        name: &str,
        channel: impl Fn(usize, usize) -> Option<usize>,
        spatial: impl Fn(usize) -> Option<usize>,
    ) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, name)?;
        let x = &inputs[0];
        let Some(dims) = x.shape.dims() else {
            return Ok(vec![Fact::new(x.ty, PartialShape::dynamic_rank())]);
        };
        if dims.len() < 3 {
            return Err(OpError::input(
                0,
                codes::RANK,
                format!("{name}: data {} must have rank 3 or more", x.shape),
            ));
        }
        let k = dims.len() - 2;
        let volume = self.volume(k).ok_or_else(|| {
            OpError::attribute("block_size", format!("{name}: block_size^{k} overflows"))
        })?;
        let map = |d: Dim, f: &dyn Fn(usize) -> Option<usize>| -> Result<Dim, OpError> {
            match d.get_static() {
                None => Ok(Dim::DYNAMIC),
                Some(v) => f(v as usize).map(|v| Dim::fixed(v as u64)).ok_or_else(|| {
                    OpError::input(
                        0,
                        codes::SHAPE,
                        format!(
                            "{name}: data {} does not divide into blocks of {} (block_size {})",
                            x.shape, self.size, self.size
                        ),
                    )
                }),
            }
        };
        let mut out = vec![dims[0], map(dims[1], &|c| channel(c, volume))?];
        for &d in &dims[2..] {
            out.push(map(d, &spatial)?);
        }
        Ok(vec![Fact::new(x.ty, PartialShape::new(out))])
    }

    /// `x` viewed as `split` (row-major, same values), permuted by `perm`, as `shape`.
    pub fn rearrange(
        x: &Tensor,
        split: &[usize],
        perm: &[usize],
        shape: Vec<usize>,
        name: &str,
    ) -> Result<Value, OpError> {
        if split.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) != Some(x.len()) {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "{name}: data {:?} does not divide into the blocks",
                    x.shape()
                ),
            ));
        }
        let words = Strided::permuted(split, perm).apply(x, name)?;
        output(x.element_type(), shape, words)
    }
}
