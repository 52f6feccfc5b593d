//! Reading and writing `.npy` (format versions 1-3) and `.npz` archives.
//!
//! dtypes: `|b1` boolean, `<f2` f16, `<f4`, `<f8`, `|i1`..`<i8`, `|u1`..`<u8`, and `<V2`/`|V2`
//! for bf16 (what numpy writes for `ml_dtypes.bfloat16`). Big-endian data is byte-swapped on
//! read; irun always writes little-endian, C order.

use std::io::{Read, Seek, Write};

use half::{bf16, f16};

use crate::element::ElementType;
use crate::shape::element_count;
use crate::tensor::{Storage, Tensor};
use crate::with_storage;
use crate::TensorError;

const MAGIC: &[u8] = b"\x93NUMPY";

fn bad(msg: impl Into<String>) -> TensorError {
    TensorError::Npy(msg.into())
}

/// The npy descriptor irun writes for an element type; packed and narrow types are written as
/// their storage type (u4 as `|u1`, nf4 as `<f4`).
fn descr_of(t: &Tensor) -> &'static str {
    match t.storage() {
        Storage::Bool(_) => "|b1",
        Storage::F16(_) => "<f2",
        Storage::Bf16(_) => "<V2",
        Storage::F32(_) => "<f4",
        Storage::F64(_) => "<f8",
        Storage::I8(_) => "|i1",
        Storage::I16(_) => "<i2",
        Storage::I32(_) => "<i4",
        Storage::I64(_) => "<i8",
        Storage::U8(_) => "|u1",
        Storage::U16(_) => "<u2",
        Storage::U32(_) => "<u4",
        Storage::U64(_) => "<u8",
        Storage::String(_) => "",
    }
}

/// (element type, item size, big-endian) for an npy descriptor.
fn parse_descr(descr: &str) -> Result<(ElementType, usize, bool), TensorError> {
    let (order, code) = descr.split_at(descr.len().min(1));
    let big = match order {
        "<" | "|" | "=" => false,
        ">" => true,
        _ => return Err(bad(format!("unsupported dtype descriptor '{descr}'"))),
    };
    let ty = match code {
        "b1" => ElementType::Boolean,
        "f2" => ElementType::F16,
        "f4" => ElementType::F32,
        "f8" => ElementType::F64,
        "i1" => ElementType::I8,
        "i2" => ElementType::I16,
        "i4" => ElementType::I32,
        "i8" => ElementType::I64,
        "u1" => ElementType::U8,
        "u2" => ElementType::U16,
        "u4" => ElementType::U32,
        "u8" => ElementType::U64,
        "V2" => ElementType::Bf16,
        _ => return Err(bad(format!("unsupported dtype descriptor '{descr}'"))),
    };
    let size = (ty.bit_width() / 8) as usize;
    Ok((ty, size, big && size > 1))
}

/// Finds the value text after `'key':` in a numpy header dict.
fn dict_value<'a>(header: &'a str, key: &str) -> Result<&'a str, TensorError> {
    let pat = format!("'{key}'");
    let start = header
        .find(&pat)
        .ok_or_else(|| bad(format!("header has no '{key}'")))?;
    let rest = header[start + pat.len()..].trim_start();
    rest.strip_prefix(':')
        .map(str::trim_start)
        .ok_or_else(|| bad(format!("malformed header near '{key}'")))
}

fn parse_header(header: &str) -> Result<(String, bool, Vec<usize>), TensorError> {
    let descr_v = dict_value(header, "descr")?;
    let quote = descr_v.chars().next().filter(|c| *c == '\'' || *c == '"');
    let quote = quote.ok_or_else(|| bad("structured dtypes are not supported"))?;
    let end = descr_v[1..]
        .find(quote)
        .ok_or_else(|| bad("unterminated descr"))?;
    let descr = descr_v[1..1 + end].to_string();
    let fortran = dict_value(header, "fortran_order")?.starts_with("True");
    let shape_v = dict_value(header, "shape")?;
    let inner = shape_v
        .strip_prefix('(')
        .and_then(|s| s.split_once(')'))
        .map(|(s, _)| s)
        .ok_or_else(|| bad("malformed shape"))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<usize>()
                .map_err(|_| bad(format!("bad dimension '{s}' in shape")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((descr, fortran, shape))
}

/// Reads one `.npy` document from a byte slice.
pub fn read_npy(bytes: &[u8]) -> Result<Tensor, TensorError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("not an .npy file (bad magic)"));
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(bad("truncated header"));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(bad(format!("unsupported .npy format version {v}"))),
    };
    let header_end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| bad("truncated header"))?;
    let header =
        std::str::from_utf8(&bytes[start..header_end]).map_err(|_| bad("header is not text"))?;
    let (descr, fortran, shape) = parse_header(header)?;
    let (ty, size, big) = parse_descr(&descr)?;
    let count = element_count(&shape).ok_or_else(|| bad("shape overflows"))?;
    let nbytes = count
        .checked_mul(size)
        .ok_or_else(|| bad("shape overflows"))?;
    let data = &bytes[header_end..];
    if data.len() < nbytes {
        return Err(bad(format!(
            "data is truncated: shape needs {nbytes} bytes, file has {}",
            data.len()
        )));
    }
    if fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(bad(
            "Fortran-order arrays are not supported; save with np.ascontiguousarray",
        ));
    }
    let storage = Storage::from_bytes(ty, &data[..nbytes], big)
        .expect("parse_descr yields byte-aligned types");
    Tensor::new(ty, shape, storage)
}

/// Writes one tensor as an `.npy` (format 1.0, or 2.0 for very long headers) document.
pub fn write_npy<W: Write>(t: &Tensor, mut w: W) -> Result<(), TensorError> {
    let descr = descr_of(t);
    if descr.is_empty() {
        return Err(bad("string tensors cannot be written to .npy"));
    }
    let shape = match t.shape() {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        s => format!(
            "({})",
            s.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let (version, prefix) = if header.len() + 11 < 65536 {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let total = (prefix + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - prefix - header.len() - 1));
    header.push('\n');
    w.write_all(MAGIC)?;
    w.write_all(&[version, 0])?;
    if version == 1 {
        w.write_all(&(header.len() as u16).to_le_bytes())?;
    } else {
        w.write_all(&(header.len() as u32).to_le_bytes())?;
    }
    w.write_all(header.as_bytes())?;
    let mut buf = Vec::with_capacity(t.len() * 8);
    with_storage!(t.storage(), v => encode_le(v, &mut buf));
    w.write_all(&buf)?;
    Ok(())
}

/// Scalars that have a little-endian byte encoding.
trait LeBytes {
    fn put(&self, out: &mut Vec<u8>);
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(impl LeBytes for $t { fn put(&self, out: &mut Vec<u8>) { out.extend_from_slice(&self.to_le_bytes()) } })*};
}
le_bytes!(f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64);

impl LeBytes for bool {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(*self as u8)
    }
}

impl LeBytes for String {
    fn put(&self, _out: &mut Vec<u8>) {
        unreachable!("string tensors are rejected before encoding")
    }
}

fn encode_le<T: LeBytes>(v: &[T], out: &mut Vec<u8>) {
    for x in v {
        x.put(out);
    }
}

/// Reads every array of an `.npz` archive, in archive order; keys lose their `.npy` suffix.
pub fn read_npz<R: Read + Seek>(r: R) -> Result<Vec<(String, Tensor)>, TensorError> {
    let mut zip =
        zip::ZipArchive::new(r).map_err(|e| bad(format!("not a valid .npz archive: {e}")))?;
    let mut out = Vec::with_capacity(zip.len());
    for i in 0..zip.len() {
        let mut file = zip
            .by_index(i)
            .map_err(|e| bad(format!("cannot read archive entry {i}: {e}")))?;
        if file.is_dir() {
            continue;
        }
        let name = file
            .name()
            .map_err(|e| bad(format!("archive entry {i} has a bad name: {e}")))?
            .to_string();
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        let mut bytes = Vec::with_capacity(file.size().min(1 << 30) as usize);
        file.read_to_end(&mut bytes)
            .map_err(|e| bad(format!("cannot read '{name}': {e}")))?;
        let t = read_npy(&bytes).map_err(|e| bad(format!("entry '{name}': {e}")))?;
        out.push((key, t));
    }
    Ok(out)
}

/// Writes an `.npz` archive (stored, uncompressed, as `np.savez` does).
pub fn write_npz<W: Write + Seek>(entries: &[(String, Tensor)], w: W) -> Result<(), TensorError> {
    let mut zip = zip::ZipWriter::new(w);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(entries.iter().any(|(_, t)| t.len() * 8 > (1 << 31)));
    for (name, t) in entries {
        zip.start_file(format!("{name}.npy"), opts)
            .map_err(|e| bad(format!("cannot write '{name}': {e}")))?;
        write_npy(t, &mut zip)?;
    }
    zip.finish()
        .map_err(|e| bad(format!("cannot finish archive: {e}")))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn roundtrip(t: Tensor) {
        let mut buf = Vec::new();
        write_npy(&t, &mut buf).unwrap();
        let header_len = buf.len() - t.len() * descr_size(&t);
        assert_eq!(
            header_len % 64,
            0,
            "numpy aligns the data start to 64 bytes"
        );
        assert_eq!(read_npy(&buf).unwrap(), t);
    }

    fn descr_size(t: &Tensor) -> usize {
        parse_descr(descr_of(t)).unwrap().1
    }

    #[test]
    fn npy_roundtrips_every_storage() {
        roundtrip(Tensor::from_f32(vec![2, 3], vec![1.0, -2.5, 3.0, 0.0, f32::MAX, -0.0]).unwrap());
        roundtrip(Tensor::from_bool(vec![3], vec![true, false, true]).unwrap());
        roundtrip(Tensor::from_f16(vec![2], vec![f16::from_f32(1.5), f16::MAX]).unwrap());
        roundtrip(Tensor::from_bf16(vec![1], vec![bf16::from_f32(3.0)]).unwrap());
        roundtrip(Tensor::from_i64(vec![], vec![i64::MIN]).unwrap());
        roundtrip(Tensor::from_u64(vec![0, 4], vec![]).unwrap());
        roundtrip(Tensor::from_u16(vec![1, 1, 2], vec![7, 65535]).unwrap());
        roundtrip(Tensor::from_i8(vec![2], vec![-128, 127]).unwrap());
    }

    fn replace_bytes(buf: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
        let at = buf.windows(from.len()).position(|w| w == from).unwrap();
        [&buf[..at], to, &buf[at + from.len()..]].concat()
    }

    #[test]
    fn reads_big_endian_and_rejects_fortran() {
        let mut buf = Vec::new();
        write_npy(&Tensor::from_i32(vec![2], vec![1, 2]).unwrap(), &mut buf).unwrap();
        let mut be = replace_bytes(&buf, b"'<i4'", b"'>i4'");
        let n = be.len();
        be[n - 8..].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(
            read_npy(&be).unwrap(),
            Tensor::from_i32(vec![2], vec![1, 2]).unwrap()
        );

        let mut buf = Vec::new();
        write_npy(
            &Tensor::from_i32(vec![2, 2], vec![1, 2, 3, 4]).unwrap(),
            &mut buf,
        )
        .unwrap();
        let f = replace_bytes(&buf, b"False", b"True ");
        assert!(read_npy(&f).unwrap_err().to_string().contains("Fortran"));
    }

    #[test]
    fn truncated_and_garbage_inputs_are_errors() {
        let mut buf = Vec::new();
        write_npy(&Tensor::from_f64(vec![4], vec![1.0; 4]).unwrap(), &mut buf).unwrap();
        let err = read_npy(&buf[..buf.len() - 1]).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
        assert!(read_npy(b"hello").is_err());
        assert!(read_npy(b"\x93NUMPY\x01\x00\xff\xff").is_err());
    }

    #[test]
    fn npz_roundtrip_keeps_order() {
        let entries = vec![
            (
                "zeta".to_string(),
                Tensor::from_f32(vec![1], vec![1.0]).unwrap(),
            ),
            (
                "alpha".to_string(),
                Tensor::from_i64(vec![2], vec![3, 4]).unwrap(),
            ),
        ];
        let mut buf = Cursor::new(Vec::new());
        write_npz(&entries, &mut buf).unwrap();
        buf.set_position(0);
        assert_eq!(read_npz(buf).unwrap(), entries);
        assert!(read_npz(Cursor::new(b"not a zip".to_vec())).is_err());
    }
}
