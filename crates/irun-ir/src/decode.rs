//! Decoding `.bin` blobs into tensors, bit-exact with OpenVINO's layouts (docs/semantics.md, section 2).
//!
//! Which Rust type each packed or narrow type decodes to (see `irun_tensor::storage_kind`):
//! u1, u2, u3, u4, u6 -> `u8` (one value per element); i4 -> `i8` (sign-extended);
//! nf4, f4e2m1, f8e4m3, f8e5m2, f8e8m0 -> `f32` holding the exact value; boolean -> `bool`
//! (any non-zero byte is true); string -> `String`.

use irun_tensor::{f16, ElementType, Storage, Tensor};

/// The NF4 code book (OpenVINO `ov::ConvertNF4`, the bitsandbytes quantiles); code 7 is 0.0.
pub const NF4_TABLE: [f32; 16] = [
    -1.0,
    -0.696_192_8,
    -0.525_073_05,
    -0.394_917_5,
    -0.284_441_38,
    -0.184_773_43,
    -0.091_050_036,
    0.0,
    0.079_580_3,
    0.160_930_2,
    0.246_112_3,
    0.337_915_24,
    0.440_709_83,
    0.562_617,
    0.722_956_84,
    1.0,
];

/// Decodes `n` elements of `ty` from `bytes` (which the caller has checked is long enough).
pub fn decode(ty: ElementType, shape: Vec<usize>, bytes: &[u8]) -> Result<Tensor, String> {
    let n: usize = shape.iter().product();
    use ElementType as E;
    let width = (ty.bit_width() / 8) as usize;
    // The byte-aligned numeric types and boolean share irun-tensor's decoder (also used by .npy);
    // the packed and narrow-float types below are specific to .bin blobs.
    if let Some(storage) = Storage::from_bytes(ty, &bytes[..n * width], false) {
        return Tensor::new(ty, shape, storage).map_err(|e| e.to_string());
    }
    let storage = match ty {
        E::U1 => Storage::U8((0..n).map(|i| (bytes[i / 8] >> (7 - i % 8)) & 1).collect()),
        E::U2 => Storage::U8(
            (0..n)
                .map(|i| (bytes[i / 4] >> (2 * (i % 4))) & 3)
                .collect(),
        ),
        E::U4 => Storage::U8((0..n).map(|i| nibble(bytes, i)).collect()),
        E::I4 => Storage::I8(
            (0..n)
                .map(|i| ((nibble(bytes, i) << 4) as i8) >> 4)
                .collect(),
        ),
        E::U3 => Storage::U8((0..n).map(|i| u3(bytes, i)).collect()),
        E::U6 => Storage::U8((0..n).map(|i| u6(bytes, i)).collect()),
        E::Nf4 => Storage::F32(
            (0..n)
                .map(|i| NF4_TABLE[nibble(bytes, i) as usize])
                .collect(),
        ),
        E::F4e2m1 => Storage::F32((0..n).map(|i| f4e2m1(nibble(bytes, i))).collect()),
        E::F8e4m3 => Storage::F32(bytes[..n].iter().map(|&b| f8e4m3(b)).collect()),
        E::F8e5m2 => Storage::F32(
            bytes[..n]
                .iter()
                .map(|&b| f16::from_bits((b as u16) << 8).to_f32())
                .collect(),
        ),
        E::F8e8m0 => Storage::F32(bytes[..n].iter().map(|&b| f8e8m0(b)).collect()),
        E::String => Storage::String(decode_strings(bytes, n)?.into()),
        E::Dynamic => return Err("a constant cannot have the dynamic element type".into()),
        _ => {
            unreachable!("Storage::from_bytes decodes every byte-aligned numeric type and boolean")
        }
    };
    Tensor::new(ty, shape, storage).map_err(|e| e.to_string())
}

/// Element `i` of a low-nibble-first 4-bit packing.
fn nibble(bytes: &[u8], i: usize) -> u8 {
    (bytes[i / 2] >> (4 * (i % 2))) & 0xF
}

/// u3: groups of 8 elements in 3 bytes. Bytes 0 and 1 hold the low 2 bits of elements 0-3 and
/// 4-7, first element in the top bits; byte 2 holds bit 2 of elements 0-7, first at bit 7.
fn u3(bytes: &[u8], i: usize) -> u8 {
    let g = &bytes[(i / 8) * 3..];
    let k = i % 8;
    let low = (g[k / 4] >> (6 - 2 * (k % 4))) & 3;
    let high = (g.get(2).copied().unwrap_or(0) >> (7 - k)) & 1;
    (high << 2) | low
}

/// u6: groups of 4 elements in 3 bytes. Bytes 0 and 1 hold the low nibbles of elements 0,1 and
/// 2,3 (first in the high half); byte 2 holds the top 2 bits of elements 0-3, first at bits 7:6.
fn u6(bytes: &[u8], i: usize) -> u8 {
    let g = &bytes[(i / 4) * 3..];
    let k = i % 4;
    let low = (g[k / 2] >> (4 * (1 - k % 2))) & 0xF;
    let high = (g.get(2).copied().unwrap_or(0) >> (6 - 2 * k)) & 3;
    (high << 4) | low
}

/// f4e2m1: sign, 2 exponent bits (bias 1), 1 mantissa bit; no inf/NaN.
fn f4e2m1(code: u8) -> f32 {
    let sign = if code & 8 != 0 { -1.0 } else { 1.0 };
    let exp = (code >> 1) & 3;
    let man = (code & 1) as f32;
    let mag = if exp == 0 {
        man * 0.5
    } else {
        (1.0 + man * 0.5) * 2f32.powi(exp as i32 - 1)
    };
    sign * mag
}

/// f8e4m3 (OCP E4M3FN): bias 7, no infinities, `S.1111.111` is NaN, max 448.
fn f8e4m3(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = (b >> 3) & 0xF;
    let man = (b & 7) as f32;
    if exp == 0xF && b & 7 == 7 {
        return f32::NAN;
    }
    let mag = if exp == 0 {
        man / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + man / 8.0) * 2f32.powi(exp as i32 - 7)
    };
    sign * mag
}

/// f8e8m0: an exponent only, bias 127; 0xFF is NaN.
fn f8e8m0(b: u8) -> f32 {
    if b == 0xFF {
        f32::NAN
    } else {
        2f32.powi(b as i32 - 127)
    }
}

/// String blob: `i32 N`, `N+1` i32 offsets (0, then each string's end), then the bytes.
fn decode_strings(bytes: &[u8], n: usize) -> Result<Vec<String>, String> {
    let word = |i: usize| -> Option<i64> {
        bytes
            .get(i * 4..i * 4 + 4)
            .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64)
    };
    let count = word(0).ok_or("string blob is shorter than its 4-byte header")?;
    if count < 0 || count as usize != n {
        return Err(format!(
            "string blob holds {count} strings but the shape has {n} elements"
        ));
    }
    let data_start = 4 + 4 * (n + 1);
    if bytes.len() < data_start {
        return Err(format!(
            "string blob of {} bytes is too short for {n} offsets",
            bytes.len()
        ));
    }
    let data = &bytes[data_start..];
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let (a, b) = (word(1 + k).unwrap_or(-1), word(2 + k).unwrap_or(-1));
        if a < 0 || b < a || b as usize > data.len() {
            return Err(format!(
                "string {k} has offsets {a}..{b} outside the {} data bytes",
                data.len()
            ));
        }
        let s = std::str::from_utf8(&data[a as usize..b as usize])
            .map_err(|_| format!("string {k} is not valid UTF-8"))?;
        out.push(s.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use irun_tensor::bf16;

    fn values(ty: ElementType, n: usize, bytes: &[u8]) -> Storage {
        decode(ty, vec![n], bytes).unwrap().into_storage()
    }

    /// Every example of the layouts in docs/semantics.md, section 2.
    #[test]
    fn reference_layout_examples() {
        assert_eq!(
            values(ElementType::I4, 5, &[0x2f, 0x78, 0x03]),
            Storage::I8(vec![-1, 2, -8, 7, 3].into())
        );
        assert_eq!(
            values(ElementType::U1, 17, &[0x81, 0xc0, 0x80]),
            Storage::U8(vec![1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1].into())
        );
        assert_eq!(
            values(ElementType::U2, 5, &[0x39, 0x01]),
            Storage::U8(vec![1, 2, 3, 0, 1].into())
        );
        assert_eq!(
            values(ElementType::U2, 2, &[0x0c]),
            Storage::U8(vec![0, 3].into())
        );
        assert_eq!(
            values(ElementType::U3, 9, &[0x6c, 0x6c, 0x1e, 0x40, 0, 0]),
            Storage::U8(vec![1, 2, 3, 4, 5, 6, 7, 0, 1].into())
        );
        assert_eq!(
            values(ElementType::U4, 5, &[0x21, 0x43, 0x05]),
            Storage::U8(vec![1, 2, 3, 4, 5].into())
        );
        assert_eq!(
            values(ElementType::U6, 5, &[0x12, 0xf4, 0x0c, 0x50, 0, 0]),
            Storage::U8(vec![1, 2, 63, 4, 5].into())
        );
        assert_eq!(
            values(ElementType::Nf4, 3, &[0xf0, 0x07]),
            Storage::F32(vec![-1.0, 1.0, 0.0].into())
        );
        assert_eq!(
            values(ElementType::F8e4m3, 2, &[0x38, 0xc0]),
            Storage::F32(vec![1.0, -2.0].into())
        );
        assert_eq!(
            values(ElementType::F8e5m2, 2, &[0x3c, 0xc0]),
            Storage::F32(vec![1.0, -2.0].into())
        );
        assert_eq!(
            values(ElementType::F8e8m0, 3, &[0x7f, 0x80, 0x7e]),
            Storage::F32(vec![1.0, 2.0, 0.5].into())
        );
        assert_eq!(
            values(ElementType::F4e2m1, 3, &[0xc2, 0x01]),
            Storage::F32(vec![1.0, -2.0, 0.5].into())
        );
        assert_eq!(
            values(ElementType::Bf16, 1, &[0x80, 0x3f]),
            Storage::Bf16(vec![bf16::ONE].into())
        );
        assert_eq!(
            values(ElementType::F16, 2, &[0x00, 0x3c, 0x00, 0xc0]),
            Storage::F16(vec![f16::ONE, f16::from_f32(-2.0)].into())
        );
    }

    #[test]
    fn strings_and_their_errors() {
        let blob = [
            4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 7, 0, 0, 0, b'a', b'b',
            b'x', b'y', b'z', 0xc3, 0x9f,
        ];
        assert_eq!(
            values(ElementType::String, 4, &blob),
            Storage::String(vec!["ab".into(), "".into(), "xyz".into(), "ß".into()].into())
        );
        assert!(decode(ElementType::String, vec![3], &blob)
            .unwrap_err()
            .contains("holds 4 strings"));
        let mut bad = blob;
        bad[20] = 99;
        assert!(decode(ElementType::String, vec![4], &bad)
            .unwrap_err()
            .contains("outside"));
        assert!(decode(ElementType::String, vec![4], &blob[..10]).is_err());
    }

    #[test]
    fn unaligned_multibyte_values() {
        let mut bytes = vec![0xAA];
        bytes.extend_from_slice(&(-5i64).to_le_bytes());
        assert_eq!(
            values(ElementType::I64, 1, &bytes[1..]),
            Storage::I64(vec![-5].into())
        );
    }
}
