//! Convert-1: element type conversion, `<data destination_type="f32"/>`. Also how compressed
//! weights are stored (f16 Const + Convert to f32).

use std::sync::Arc;

use crate::par;
use irun_tensor::{bf16, f16, ElementType, Scalar, Storage, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, Op, OpError, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Convert {
    pub destination_type: ElementType,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let destination_type = a.element_type("destination_type")?;
    if destination_type == ElementType::Dynamic {
        return Err(OpError::attribute(
            "destination_type",
            "Convert cannot convert to the dynamic element type",
        ));
    }
    Ok(Box::new(Convert { destination_type }))
}

impl Op for Convert {
    fn name(&self) -> &'static str {
        "Convert-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        if inputs[0].ty == ElementType::String || self.destination_type == ElementType::String {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                "Convert does not convert to or from string",
            ));
        }
        Ok(vec![Fact::new(
            self.destination_type,
            inputs[0].shape.clone(),
        )])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let input = inputs
            .first()
            .ok_or_else(|| OpError::new(codes::ARITY, "Convert takes 1 input"))?;
        Ok(vec![convert_value(input, self.destination_type)?])
    }
}

/// `v` converted to `to`: the same value, no copy, when it already has that type.
pub fn convert_value(v: &Value, to: ElementType) -> Result<Value, OpError> {
    if v.element_type() == to {
        return Ok(v.clone());
    }
    Ok(Arc::new(convert(v, to)?))
}

/// A value on its way between two element types: integers exactly (i128 holds every integer
/// type), floats as f64 (holds every float type exactly).
#[derive(Clone, Copy)]
enum Wide {
    Int(i128),
    Float(f64),
}

/// Conversion through [`Wide`]: float -> integer truncates toward zero and saturates (NaN -> 0),
/// integer -> integer wraps, anything -> boolean is `!= 0`, as OpenVINO's Convert does with
/// C++ casts on this platform.
trait Convertible: Scalar {
    fn to_wide(self) -> Wide;
    fn from_wide(w: Wide) -> Self;
}

macro_rules! int_convertible {
    ($($t:ty),*) => {$(
        impl Convertible for $t {
            fn to_wide(self) -> Wide { Wide::Int(self as i128) }
            fn from_wide(w: Wide) -> Self {
                match w { Wide::Int(i) => i as $t, Wide::Float(f) => f as $t }
            }
        }
    )*};
}
int_convertible!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_convertible {
    ($($t:ty),*) => {$(
        impl Convertible for $t {
            fn to_wide(self) -> Wide { Wide::Float(self as f64) }
            fn from_wide(w: Wide) -> Self {
                match w { Wide::Int(i) => i as $t, Wide::Float(f) => f as $t }
            }
        }
    )*};
}
float_convertible!(f32, f64);

macro_rules! half_convertible {
    ($($t:ty),*) => {$(
        impl Convertible for $t {
            fn to_wide(self) -> Wide { Wide::Float(self.to_f64()) }
            fn from_wide(w: Wide) -> Self {
                match w { Wide::Int(i) => <$t>::from_f64(i as f64), Wide::Float(f) => <$t>::from_f64(f) }
            }
        }
    )*};
}
half_convertible!(f16, bf16);

impl Convertible for bool {
    fn to_wide(self) -> Wide {
        Wide::Int(self as i128)
    }
    fn from_wide(w: Wide) -> Self {
        match w {
            Wide::Int(i) => i != 0,
            Wide::Float(f) => f != 0.0,
        }
    }
}

/// `t` converted to `to`. Packed and narrow destination types are not implemented (their
/// rounding and saturation rules differ per type); sources of any numeric type are.
pub fn convert(t: &Tensor, to: ElementType) -> Result<Tensor, OpError> {
    fn to_vec<S: Convertible, D: Convertible>(src: &[S]) -> Vec<D> {
        par::map(src, |x| D::from_wide(x.to_wide()))
    }
    fn from<S: Convertible>(src: &[S], to: ElementType) -> Option<Storage> {
        use ElementType as E;
        Some(match to {
            E::Boolean => Storage::Bool(to_vec(src).into()),
            E::F16 => Storage::F16(to_vec(src).into()),
            E::Bf16 => Storage::Bf16(to_vec(src).into()),
            E::F32 => Storage::F32(to_vec(src).into()),
            E::F64 => Storage::F64(to_vec(src).into()),
            E::I8 => Storage::I8(to_vec(src).into()),
            E::I16 => Storage::I16(to_vec(src).into()),
            E::I32 => Storage::I32(to_vec(src).into()),
            E::I64 => Storage::I64(to_vec(src).into()),
            E::U8 => Storage::U8(to_vec(src).into()),
            E::U16 => Storage::U16(to_vec(src).into()),
            E::U32 => Storage::U32(to_vec(src).into()),
            E::U64 => Storage::U64(to_vec(src).into()),
            _ => return None,
        })
    }
    if let (Storage::F16(v), ElementType::F32) = (t.storage(), to) {
        // Weights that OpenVINO compressed to f16 (every Convolution and MatMul of a model
        // saved with its defaults): exact either way, and half's slice conversion uses the
        // F16C instructions where the CPU has them, 10x the per-value path.
        let wide = irun_opkit::halves::widen(v)?;
        return Tensor::new(to, t.shape().to_vec(), Storage::F32(wide.into()))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()));
    }
    let storage = match t.storage() {
        Storage::Bool(v) => from(v, to),
        Storage::F16(v) => from(v, to),
        Storage::Bf16(v) => from(v, to),
        Storage::F32(v) => from(v, to),
        Storage::F64(v) => from(v, to),
        Storage::I8(v) => from(v, to),
        Storage::I16(v) => from(v, to),
        Storage::I32(v) => from(v, to),
        Storage::I64(v) => from(v, to),
        Storage::U8(v) => from(v, to),
        Storage::U16(v) => from(v, to),
        Storage::U32(v) => from(v, to),
        Storage::U64(v) => from(v, to),
        Storage::String(_) => None,
    }
    .ok_or_else(|| {
        OpError::new(
            codes::UNSUPPORTED_TYPE,
            format!(
                "Convert from {} to {to} is not implemented",
                t.element_type()
            ),
        )
    })?;
    Tensor::new(to, t.shape().to_vec(), storage)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_weights_decompress_exactly() {
        let t = Tensor::from_f16(
            vec![3],
            vec![f16::from_f32(0.5), f16::MAX, f16::NEG_INFINITY],
        )
        .unwrap();
        let out = convert(&t, ElementType::F32).unwrap();
        assert_eq!(
            out.values::<f32>().unwrap(),
            &[0.5, 65504.0, f32::NEG_INFINITY]
        );
    }

    #[test]
    fn casts_follow_cpp_semantics() {
        let t = Tensor::from_f32(vec![4], vec![-1.7, 300.9, f32::NAN, 2.5]).unwrap();
        let out = convert(&t, ElementType::I32).unwrap();
        assert_eq!(out.values::<i32>().unwrap(), &[-1, 300, 0, 2]);
        let t = Tensor::from_i64(vec![2], vec![(1 << 53) + 1, -1]).unwrap();
        assert_eq!(
            convert(&t, ElementType::U8)
                .unwrap()
                .values::<u8>()
                .unwrap(),
            &[1, 255]
        );
        assert_eq!(
            convert(&t, ElementType::Boolean)
                .unwrap()
                .values::<bool>()
                .unwrap(),
            &[true, true]
        );
        assert!(convert(&t, ElementType::U4).is_err());
    }
}
