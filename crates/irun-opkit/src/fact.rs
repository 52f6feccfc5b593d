//! What inference knows about a tensor before running: element type, partial shape, and for
//! the value inputs an op asks for, the value itself.

use std::fmt;
use std::sync::Arc;

use irun_tensor::{ElementType, PartialShape, Tensor};

#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    pub ty: ElementType,
    pub shape: PartialShape,
    /// The value, when known at inference time and asked for (see `Op::value_inputs`).
    pub value: Option<Arc<Tensor>>,
}

impl Fact {
    pub fn new(ty: ElementType, shape: PartialShape) -> Fact {
        Fact {
            ty,
            shape,
            value: None,
        }
    }

    /// Nothing known: dynamic type and rank.
    pub fn unknown() -> Fact {
        Fact::new(ElementType::Dynamic, PartialShape::dynamic_rank())
    }

    pub fn of_static(ty: ElementType, shape: &[usize]) -> Fact {
        Fact::new(ty, PartialShape::fixed(shape))
    }

    pub fn with_value(mut self, t: Tensor) -> Fact {
        self.value = Some(Arc::new(t));
        self
    }

    pub fn rank(&self) -> Option<usize> {
        self.shape.rank()
    }

    /// The fact of the same values `[n, c, *spatial]` held channel-last, `[n, *spatial, c]`
    /// ([`crate::op::Prepared::set_channels_last_output`]); unchanged below rank 3 or at a
    /// dynamic rank. A known value is not carried over.
    pub fn channels_last(&self) -> Fact {
        let shape = match self.shape.dims() {
            Some(d) if d.len() >= 3 => {
                let mut dims = vec![d[0]];
                dims.extend_from_slice(&d[2..]);
                dims.push(d[1]);
                PartialShape::new(dims)
            }
            _ => self.shape.clone(),
        };
        Fact::new(self.ty, shape)
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.ty, self.shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_tensor::Dim;

    /// The channel dim (1) moves last, dynamic and interval dims with it; below rank 3 and
    /// at a dynamic rank nothing moves; a known value is dropped (its layout is the old one).
    #[test]
    fn channels_last_moves_dim_one_to_the_end() {
        let shape = PartialShape::new(vec![
            Dim::fixed(2),
            Dim::DYNAMIC,
            Dim::fixed(5),
            Dim::fixed(7),
        ]);
        let moved = Fact::new(ElementType::F32, shape).channels_last();
        let want = PartialShape::new(vec![
            Dim::fixed(2),
            Dim::fixed(5),
            Dim::fixed(7),
            Dim::DYNAMIC,
        ]);
        assert_eq!(moved, Fact::new(ElementType::F32, want));
        let rank2 = Fact::of_static(ElementType::F32, &[3, 4]);
        assert_eq!(rank2.channels_last(), rank2);
        assert_eq!(Fact::unknown().channels_last(), Fact::unknown());
        let valued = Fact::of_static(ElementType::F32, &[1, 2, 1])
            .with_value(Tensor::from_f32(vec![1, 2, 1], vec![1.0, 2.0]).unwrap());
        assert_eq!(
            valued.channels_last(),
            Fact::of_static(ElementType::F32, &[1, 1, 2])
        );
    }
}
