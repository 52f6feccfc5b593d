//! Const-1 (OpenVINO's Constant): a value stored in the `.bin`. The reader has already checked
//! the weight reference; the value itself is decoded only when a consumer needs it.

use irun_ir::ConstInfo;

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError};

#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    pub info: ConstInfo,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    for name in ["element_type", "shape", "offset", "size"] {
        a.get(name);
    }
    let info = a.layer.constant.clone().ok_or_else(|| {
        OpError::new(
            codes::BAD_WEIGHTS,
            "the Const has no valid weight reference",
        )
    })?;
    Ok(Box::new(Constant { info }))
}

impl Op for Constant {
    fn name(&self) -> &'static str {
        "Constant-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 0, self.name())?;
        Ok(vec![Fact::of_static(
            self.info.element_type,
            &self.info.shape,
        )])
    }
}
