//! Element-type dispatch, written once: each macro matches an [`ElementType`] and runs its body
//! with `$T` a local alias for the Rust scalar type that stores it, so a kernel generic over
//! `T` is instantiated for exactly the types a kind of op supports:
//!
//! * [`with_float!`](crate::with_float): f16, bf16, f32, f64;
//! * [`with_int!`](crate::with_int): i8..i64, u8..u64;
//! * [`with_number!`](crate::with_number): both of the above;
//! * [`with_any_scalar!`](crate::with_any_scalar): numbers and boolean.
//!
//! Packed and narrow types (u1, i4, nf4, f8 ...) are decoded to wider storage but are not the
//! storage type, so none of these match them: an op that supports them says so explicitly.
//! Copy-like kernels dispatch on byte width instead ([`crate::Words`]).
//!
//! [`ElementType`]: crate::ElementType

/// The shared match behind the public macros: `$ty` against the listed `Variant => type`
/// pairs, `$fallback` for any other type.
#[doc(hidden)]
#[macro_export]
macro_rules! __dispatch_type {
    ($ty:expr, $T:ident => $body:expr, else $fallback:expr; $($variant:ident => $rust:ty),*) => {{
        match $ty {
            $($crate::ElementType::$variant => {
                #[allow(dead_code)]
                type $T = $rust;
                $body
            })*
            #[allow(unreachable_patterns)]
            _ => $fallback,
        }
    }};
}

/// Runs `$body` with `$T` the scalar type of a float element type (f16, bf16, f32, f64).
#[macro_export]
macro_rules! with_float {
    ($ty:expr, $T:ident => $body:expr, else $fallback:expr) => {
        $crate::__dispatch_type!($ty, $T => $body, else $fallback;
            F16 => $crate::f16, Bf16 => $crate::bf16, F32 => f32, F64 => f64)
    };
}

/// Runs `$body` with `$T` the scalar type of an integer element type (i8..i64, u8..u64).
#[macro_export]
macro_rules! with_int {
    ($ty:expr, $T:ident => $body:expr, else $fallback:expr) => {
        $crate::__dispatch_type!($ty, $T => $body, else $fallback;
            I8 => i8, I16 => i16, I32 => i32, I64 => i64,
            U8 => u8, U16 => u16, U32 => u32, U64 => u64)
    };
}

/// Runs `$body` with `$T` the scalar type of any float or integer element type.
#[macro_export]
macro_rules! with_number {
    ($ty:expr, $T:ident => $body:expr, else $fallback:expr) => {
        $crate::__dispatch_type!($ty, $T => $body, else $fallback;
            F16 => $crate::f16, Bf16 => $crate::bf16, F32 => f32, F64 => f64,
            I8 => i8, I16 => i16, I32 => i32, I64 => i64,
            U8 => u8, U16 => u16, U32 => u32, U64 => u64)
    };
}

/// Runs `$body` with `$T` the scalar type of any number or boolean element type.
#[macro_export]
macro_rules! with_any_scalar {
    ($ty:expr, $T:ident => $body:expr, else $fallback:expr) => {
        $crate::__dispatch_type!($ty, $T => $body, else $fallback;
            Boolean => bool,
            F16 => $crate::f16, Bf16 => $crate::bf16, F32 => f32, F64 => f64,
            I8 => i8, I16 => i16, I32 => i32, I64 => i64,
            U8 => u8, U16 => u16, U32 => u32, U64 => u64)
    };
}

#[cfg(test)]
mod tests {
    use crate::ElementType;

    fn size(ty: ElementType) -> Option<usize> {
        crate::with_number!(ty, T => Some(std::mem::size_of::<T>()), else None)
    }

    #[test]
    fn each_macro_matches_exactly_its_types() {
        assert_eq!(size(ElementType::Bf16), Some(2));
        assert_eq!(size(ElementType::U64), Some(8));
        assert_eq!(size(ElementType::Boolean), None);
        assert_eq!(
            size(ElementType::U4),
            None,
            "packed types are not their storage type"
        );
        let float = |ty| crate::with_float!(ty, T => std::any::type_name::<T>(), else "-");
        assert_eq!(float(ElementType::F64), "f64");
        assert_eq!(float(ElementType::I32), "-");
        let int = |ty| crate::with_int!(ty, T => Some(T::MAX.to_string()), else None);
        assert_eq!(int(ElementType::I16), Some("32767".to_string()));
        let any = |ty| crate::with_any_scalar!(ty, T => std::mem::size_of::<T>(), else 0);
        assert_eq!(any(ElementType::Boolean), 1);
        assert_eq!(any(ElementType::String), 0);
    }
}
