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
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.ty, self.shape)
    }
}
