//! Every element type an OpenVINO IR file can name, with the three spellings the format uses.

use std::fmt;

/// An element type of OpenVINO IR (`ov::element::Type_t`).
///
/// Three spellings exist in IR files (docs/semantics.md, section 2):
/// * the enum name (`f32`, `boolean`, `u1`), written in Parameter `element_type` and Const `element_type`;
/// * the legacy precision (`FP32`, `BOOL`, `BIN`), written in port `precision`;
/// * both are accepted by the Const/port parser ([`ElementType::from_type_string`]), only the
///   first (case-insensitively) by the Parameter parser ([`ElementType::from_enum_name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    Dynamic,
    Boolean,
    Bf16,
    F16,
    F32,
    F64,
    I4,
    I8,
    I16,
    I32,
    I64,
    U1,
    U2,
    U3,
    U4,
    U6,
    U8,
    U16,
    U32,
    U64,
    Nf4,
    F8e4m3,
    F8e5m2,
    F8e8m0,
    F4e2m1,
    String,
}

use ElementType::*;

/// (type, enum name, legacy precision name)
const NAMES: &[(ElementType, &str, &str)] = &[
    (Dynamic, "dynamic", "UNSPECIFIED"),
    (Boolean, "boolean", "BOOL"),
    (Bf16, "bf16", "BF16"),
    (F16, "f16", "FP16"),
    (F32, "f32", "FP32"),
    (F64, "f64", "FP64"),
    (I4, "i4", "I4"),
    (I8, "i8", "I8"),
    (I16, "i16", "I16"),
    (I32, "i32", "I32"),
    (I64, "i64", "I64"),
    (U1, "u1", "BIN"),
    (U2, "u2", "U2"),
    (U3, "u3", "U3"),
    (U4, "u4", "U4"),
    (U6, "u6", "U6"),
    (U8, "u8", "U8"),
    (U16, "u16", "U16"),
    (U32, "u32", "U32"),
    (U64, "u64", "U64"),
    (Nf4, "nf4", "NF4"),
    (F8e4m3, "f8e4m3", "F8E4M3"),
    (F8e5m2, "f8e5m2", "F8E5M2"),
    (F8e8m0, "f8e8m0", "F8E8M0"),
    (F4e2m1, "f4e2m1", "F4E2M1"),
    (String, "string", "STRING"),
];

impl ElementType {
    /// All element types, in declaration order.
    pub const ALL: [ElementType; 26] = [
        Dynamic, Boolean, Bf16, F16, F32, F64, I4, I8, I16, I32, I64, U1, U2, U3, U4, U6, U8, U16,
        U32, U64, Nf4, F8e4m3, F8e5m2, F8e8m0, F4e2m1, String,
    ];

    fn entry(self) -> &'static (ElementType, &'static str, &'static str) {
        NAMES
            .iter()
            .find(|e| e.0 == self)
            .expect("NAMES lists every variant")
    }

    /// The enum name (`f32`, `boolean`, `u1`), as Parameter and Const `element_type` write it.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The legacy port precision (`FP32`, `BOOL`, `BIN`), as `<port precision>` writes it.
    pub fn precision_name(self) -> &'static str {
        self.entry().2
    }

    /// Parses a Parameter `element_type`: the enum names, case-insensitively (`f32`, `F32`),
    /// plus `undefined` for dynamic. Legacy names such as `FP32` are rejected, as OpenVINO does.
    pub fn from_enum_name(s: &str) -> Option<ElementType> {
        let lower = s.to_ascii_lowercase();
        if lower == "undefined" {
            return Some(Dynamic);
        }
        NAMES.iter().find(|e| e.1 == lower).map(|e| e.0)
    }

    /// Parses a Const `element_type` or a port `precision`: the enum names and the legacy
    /// upper-case names, exact match (OpenVINO's `element::Type(std::string)`).
    pub fn from_type_string(s: &str) -> Option<ElementType> {
        match s {
            "undefined" | "UNDEFINED" => return Some(Dynamic),
            "U1" | "bin" => return Some(U1),
            _ => {}
        }
        NAMES.iter().find(|e| e.1 == s || e.2 == s).map(|e| e.0)
    }

    /// Bits one element occupies in a `.bin` blob (0 for dynamic; 8*32 is not meaningful for
    /// string, whose blobs have their own layout).
    pub fn bit_width(self) -> u64 {
        match self {
            Dynamic | String => 0,
            U1 => 1,
            U2 => 2,
            U3 => 3,
            I4 | U4 | Nf4 | F4e2m1 => 4,
            U6 => 6,
            Boolean | I8 | U8 | F8e4m3 | F8e5m2 | F8e8m0 => 8,
            Bf16 | F16 | I16 | U16 => 16,
            F32 | I32 | U32 => 32,
            F64 | I64 | U64 => 64,
        }
    }

    /// Bytes needed for `n` elements of this type in a `.bin` blob, with OpenVINO's packing
    /// (u3 and u6 pack in 3-byte groups of 8 and 4 elements; the writer pads the last group but
    /// the reader only requires `ceil(n * bits / 8)`). `None` on overflow or for string/dynamic.
    pub fn packed_size(self, n: u64) -> Option<u64> {
        match self {
            Dynamic | String => None,
            _ => n
                .checked_mul(self.bit_width())?
                .checked_add(7)
                .map(|b| b / 8),
        }
    }

    /// OpenVINO's `is_real`: a floating-point type (f8/f4 included).
    pub fn is_real(self) -> bool {
        matches!(
            self,
            Bf16 | F16 | F32 | F64 | F8e4m3 | F8e5m2 | F8e8m0 | F4e2m1
        )
    }

    /// OpenVINO's `is_integral`: "not real", so boolean, string, nf4 and dynamic count too.
    pub fn is_integral(self) -> bool {
        !self.is_real()
    }

    /// OpenVINO's `is_integral_number`: integral and not boolean (nf4/string/dynamic included).
    pub fn is_integral_number(self) -> bool {
        self.is_integral() && self != Boolean
    }

    /// OpenVINO's element type merge: dynamic unifies with anything, otherwise equal types only.
    pub fn merge(self, other: ElementType) -> Option<ElementType> {
        match (self, other) {
            (Dynamic, t) | (t, Dynamic) => Some(t),
            (a, b) if a == b => Some(a),
            _ => None,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_parse() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::from_type_string(t.name()), Some(t), "{t}");
            assert_eq!(
                ElementType::from_type_string(t.precision_name()),
                Some(t),
                "{t}"
            );
            assert_eq!(ElementType::from_enum_name(t.name()), Some(t));
        }
        assert_eq!(ElementType::from_type_string("BIN"), Some(U1));
        assert_eq!(ElementType::from_type_string("U1"), Some(U1));
        assert_eq!(ElementType::from_type_string("BOOL"), Some(Boolean));
        assert_eq!(ElementType::from_type_string("fp32"), None);
    }

    #[test]
    fn parameter_element_type_is_case_insensitive_enum_name_only() {
        assert_eq!(ElementType::from_enum_name("F32"), Some(F32));
        assert_eq!(ElementType::from_enum_name("FP32"), None);
        assert_eq!(ElementType::from_enum_name("BOOL"), None);
        assert_eq!(ElementType::from_enum_name("Boolean"), Some(Boolean));
    }

    #[test]
    fn integral_classes_follow_openvino() {
        assert!(Boolean.is_integral() && !Boolean.is_integral_number());
        assert!(Nf4.is_integral_number() && String.is_integral());
        assert!(!F8e4m3.is_integral() && F16.is_real());
        assert!(U64.is_integral_number());
    }

    #[test]
    fn packed_sizes() {
        assert_eq!(U1.packed_size(17), Some(3));
        assert_eq!(U3.packed_size(9), Some(4));
        assert_eq!(U6.packed_size(5), Some(4));
        assert_eq!(I4.packed_size(5), Some(3));
        assert_eq!(F32.packed_size(u64::MAX), None);
        assert_eq!(String.packed_size(1), None);
    }
}
