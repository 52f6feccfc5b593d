//! Add-1: `a + b`, numpy broadcasting. Integers wrap, as the reference does (OpenVINO CPU
//! saturates 8/16-bit types); f16/bf16 round once per element.

use crate::attrs::AttrReader;
use crate::binary::{Arith, ArithKind, Binary};
use crate::num::Number;
use crate::op::{Op, OpError};

#[derive(Debug, Default)]
pub struct Add;

impl Arith for Add {
    const NAME: &'static str = "Add-1";

    fn read(_: &AttrReader) -> Result<Self, OpError> {
        Ok(Self)
    }

    #[inline(always)]
    fn apply<T: Number>(&self, a: T, b: T) -> T {
        a.add(b)
    }
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Binary::<ArithKind<Add>>::build(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn broadcasts_and_wraps() {
        let op = arith(Add);
        let out = run(
            &op,
            vec![
                f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]),
                f32s(&[3], &[10., 20., 30.]),
            ],
        );
        assert_eq!(out.unwrap(), f32s(&[2, 3], &[11., 22., 33., 14., 25., 36.]));
        let out = run(&op, vec![u8s(&[2], &[250, 1]), u8s(&[], &[10])]).unwrap();
        assert_eq!(out, u8s(&[2], &[4, 11]));
        let big = 1i64 << 40;
        let out = run(&op, vec![i64s(&[1], &[big]), i64s(&[1], &[3])]).unwrap();
        assert_eq!(out, i64s(&[1], &[big + 3]), "i64 is exact");
    }

    /// With the only reference to its first input, the op writes into that buffer; with a
    /// shared one, it leaves it alone.
    #[test]
    fn writes_into_the_first_input_when_it_may() {
        let op = arith(Add);
        let a = f32s(&[2, 2], &[1., 2., 3., 4.]);
        let before = a.values::<f32>().unwrap().as_ptr();
        let out = op.eval(vec![
            std::sync::Arc::new(a),
            std::sync::Arc::new(f32s(&[2], &[1., 1.])),
        ]);
        let out = out.unwrap().remove(0);
        assert_eq!(out.values::<f32>().unwrap().as_ptr(), before);
        assert_eq!(*out, f32s(&[2, 2], &[2., 3., 4., 5.]));
        let kept = std::sync::Arc::new(f32s(&[2], &[1., 2.]));
        let out = op
            .eval(vec![kept.clone(), std::sync::Arc::new(f32s(&[], &[1.]))])
            .unwrap();
        assert_eq!(*kept, f32s(&[2], &[1., 2.]));
        assert_eq!(*out[0], f32s(&[2], &[2., 3.]));
    }

    #[test]
    fn rejects_boolean_and_mixed_types() {
        let op = arith(Add);
        let e = infer_err(&op, &[fact(Boolean, "2"), fact(Boolean, "2")]);
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        let e = infer_err(&op, &[fact(F32, "2"), fact(I32, "2")]);
        assert_eq!(
            e.message,
            "Add-1: arguments do not have the same element type (f32 and i32)"
        );
        assert_eq!(e.port, Some((irun_ir::PortDirection::Input, 1)));
    }
}
