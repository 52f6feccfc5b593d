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
    // Split at a character, not a byte: the descriptor is untrusted text.
    let mut chars = descr.chars();
    let big = match chars.next() {
        Some('<' | '|' | '=') => false,
        Some('>') => true,
        _ => return Err(bad(format!("unsupported dtype descriptor '{descr}'"))),
    };
    let code = chars.as_str();
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
    let fortran_v = dict_value(header, "fortran_order")?;
    let fortran = if fortran_v.starts_with("True") {
        true
    } else if fortran_v.starts_with("False") {
        false
    } else {
        let got: String = fortran_v
            .chars()
            .take_while(|c| *c != ',' && *c != '}')
            .collect();
        return Err(bad(format!(
            "fortran_order is {}, not True or False",
            got.trim()
        )));
    };
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

/// The longest header irun reads; numpy's own headers are a few hundred bytes.
const MAX_HEADER: usize = 1 << 20;

/// Reads one `.npy` document from a byte slice.
pub fn read_npy(bytes: &[u8]) -> Result<Tensor, TensorError> {
    let mut budget = u64::MAX;
    read_npy_from(&mut &bytes[..], &mut budget)
}

/// Reads one `.npy` document from a stream, reading no further than its header declares: a
/// stream that expands beyond that (a zip bomb) is never read. The array's bytes are taken
/// from `budget` before anything is allocated; an array larger than what is left is an error.
pub fn read_npy_from<R: Read>(r: &mut R, budget: &mut u64) -> Result<Tensor, TensorError> {
    read_npy_checked(r, budget, &mut |_, _| Ok(()))
}

/// What a reader learns from an `.npy` header before it reads the data: its element type and
/// shape. A check returns `Err` to stop before the data is allocated or inflated.
pub type HeaderCheck<'a> = dyn FnMut(ElementType, &[usize]) -> Result<(), String> + 'a;

/// [`read_npy_from`], calling `check` with the header's type and shape before reading data.
pub fn read_npy_checked<R: Read>(
    r: &mut R,
    budget: &mut u64,
    check: &mut HeaderCheck,
) -> Result<Tensor, TensorError> {
    let mut lead = [0u8; 8];
    r.read_exact(&mut lead)
        .map_err(|_| bad("not an .npy file (bad magic)"))?;
    if &lead[..6] != MAGIC {
        return Err(bad("not an .npy file (bad magic)"));
    }
    let header_len = match lead[6] {
        1 => {
            let mut n = [0u8; 2];
            r.read_exact(&mut n).map_err(|_| bad("truncated header"))?;
            u16::from_le_bytes(n) as usize
        }
        2 | 3 => {
            let mut n = [0u8; 4];
            r.read_exact(&mut n).map_err(|_| bad("truncated header"))?;
            u32::from_le_bytes(n) as usize
        }
        v => return Err(bad(format!("unsupported .npy format version {v}"))),
    };
    if header_len > MAX_HEADER {
        return Err(bad(format!(
            "header of {header_len} bytes is longer than the {MAX_HEADER} irun reads"
        )));
    }
    let mut header = vec![0u8; header_len];
    r.read_exact(&mut header)
        .map_err(|_| bad("truncated header"))?;
    let header = std::str::from_utf8(&header).map_err(|_| bad("header is not text"))?;
    let (descr, fortran, shape) = parse_header(header)?;
    let (ty, size, big) = parse_descr(&descr)?;
    check(ty, &shape).map_err(bad)?;
    let count = element_count(&shape).ok_or_else(|| bad("shape overflows"))?;
    let nbytes = count
        .checked_mul(size)
        .ok_or_else(|| bad("shape overflows"))?;
    if nbytes as u64 > *budget {
        return Err(TensorError::OverLimit {
            what: format!("an array of shape {}", crate::fmt_shape(&shape)),
            need: nbytes as u64,
            left: *budget,
        });
    }
    let mut data = Vec::new();
    data.try_reserve_exact(nbytes).map_err(|_| {
        bad(format!(
            "cannot allocate {nbytes} bytes for shape {shape:?}"
        ))
    })?;
    r.take(nbytes as u64)
        .read_to_end(&mut data)
        .map_err(|e| bad(format!("cannot read the data: {e}")))?;
    if data.len() < nbytes {
        return Err(bad(format!(
            "data is truncated: shape needs {nbytes} bytes, file has {}",
            data.len()
        )));
    }
    *budget -= nbytes as u64;
    if fortran {
        data = fortran_to_c_order(&data, &shape, size)?;
    }
    let storage =
        Storage::from_bytes(ty, &data, big).ok_or_else(|| bad("element type is not byte-sized"))?;
    Tensor::new(ty, shape, storage)
}

/// Reorders the items of a column-major (Fortran-order) array, in which the first index varies
/// fastest, into row-major order: what numpy writes for `a.T` and other column-major arrays.
fn fortran_to_c_order(data: &[u8], shape: &[usize], size: usize) -> Result<Vec<u8>, TensorError> {
    let mut out = Vec::new();
    out.try_reserve_exact(data.len())
        .map_err(|_| bad(format!("cannot allocate {} bytes to reorder", data.len())))?;
    if data.is_empty() {
        return Ok(out);
    }
    // Column-major strides, in items; walked as an odometer over row-major indices.
    let mut strides = vec![0usize; shape.len()];
    let mut s = 1usize;
    for (k, &d) in shape.iter().enumerate() {
        strides[k] = s;
        s *= d;
    }
    let mut index = vec![0usize; shape.len()];
    let mut at = 0usize;
    for _ in 0..data.len() / size {
        out.extend_from_slice(&data[at * size..(at + 1) * size]);
        for k in (0..shape.len()).rev() {
            index[k] += 1;
            at += strides[k];
            if index[k] < shape[k] {
                break;
            }
            at -= strides[k] * shape[k];
            index[k] = 0;
        }
    }
    Ok(out)
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
    let mut unlimited = u64::MAX;
    read_npz_within(r, &mut unlimited)
}

/// [`read_npz`] whose arrays are taken from `budget` bytes (see [`read_npy_from`]); each entry
/// is read only as far as its `.npy` header declares, whatever its compressed stream would
/// expand to.
pub fn read_npz_within<R: Read + Seek>(
    r: R,
    budget: &mut u64,
) -> Result<Vec<(String, Tensor)>, TensorError> {
    read_npz_checked(r, budget, &mut |_, _, _| Ok(()))
}

/// [`HeaderCheck`] for an `.npz` entry, with the entry's key (its name without `.npy`).
pub type EntryCheck<'a> = dyn FnMut(&str, ElementType, &[usize]) -> Result<(), String> + 'a;

/// [`read_npz_within`], calling `check` with each entry's key, element type and shape before
/// its data is inflated or allocated (so that an array the caller would refuse is never read).
///
/// Every entry must be exactly one `.npy` document: bytes after the array's data are an error,
/// and so is an entry whose zip CRC-32 does not match its bytes (a corrupted archive). Two
/// entries with the same name are an error: which one a reader picks is not defined.
pub fn read_npz_checked<R: Read + Seek>(
    r: R,
    budget: &mut u64,
    check: &mut EntryCheck,
) -> Result<Vec<(String, Tensor)>, TensorError> {
    let not_npz = |e: rawzip::Error| bad(format!("not a valid .npz archive: {e}"));
    let mut buffer = vec![0u8; rawzip::RECOMMENDED_BUFFER_SIZE];
    let archive = rawzip::ZipArchive::from_seekable(r, &mut buffer).map_err(not_npz)?;
    // The central directory first: every member's name, method and place.
    let mut members = Vec::new();
    let mut names = std::collections::HashSet::new();
    let mut listing = archive.entries(&mut buffer);
    while let Some(record) = listing.next_entry().map_err(not_npz)? {
        if record.is_dir() {
            continue;
        }
        let name = String::from_utf8_lossy(record.file_path().as_bytes()).into_owned();
        if !names.insert(name.clone()) {
            return Err(bad(format!(
                "the archive holds two entries named '{name}' (which one a reader takes is not defined)"
            )));
        }
        members.push((name, record.compression_method(), record.wayfinder()));
    }
    let mut out: Vec<(String, Tensor)> = Vec::with_capacity(members.len());
    for (name, method, place) in members {
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        let entry_error = |e: TensorError| match e {
            TensorError::OverLimit { what, need, left } => TensorError::OverLimit {
                what: format!("entry '{name}', {what},"),
                need,
                left,
            },
            e => bad(format!("entry '{name}': {e}")),
        };
        let entry = archive
            .get_entry(place)
            .map_err(|e| entry_error(bad(format!("cannot read it: {e}"))))?;
        // The verifying reader compares the bytes' count and CRC-32 with the archive's at
        // their end.
        let mut data: Box<dyn Read> = match method {
            rawzip::CompressionMethod::STORE => Box::new(entry.verifying_reader(entry.reader())),
            rawzip::CompressionMethod::DEFLATE => {
                Box::new(entry.verifying_reader(flate2::read::DeflateDecoder::new(entry.reader())))
            }
            other => {
                return Err(entry_error(bad(format!(
                    "compression method {} is not stored or deflated",
                    other.as_u16()
                ))))
            }
        };
        let t = read_npy_checked(&mut data, budget, &mut |ty, shape| check(&key, ty, shape))
            .map_err(entry_error)?;
        // One byte past the array tells whether there is more; reading to the end makes the
        // reader compare the CRC-32.
        let mut rest = [0u8; 1];
        match data.read(&mut rest) {
            Ok(0) => {}
            Ok(_) => {
                return Err(entry_error(bad(
                    "bytes after the array's data (an entry holds one array)",
                )))
            }
            Err(e) => return Err(entry_error(bad(format!("corrupted data: {e}")))),
        }
        out.push((key, t));
    }
    Ok(out)
}

/// Writes an `.npz` archive (stored, uncompressed, as `np.savez` does).
pub fn write_npz<W: Write>(entries: &[(String, Tensor)], w: W) -> Result<(), TensorError> {
    let failed = |name: &str, e: &dyn std::fmt::Display| bad(format!("cannot write '{name}': {e}"));
    let mut archive = rawzip::ZipArchiveWriter::new(w);
    for (name, t) in entries {
        let file = format!("{name}.npy");
        let (mut entry, config) = archive
            .new_file(file.as_str())
            .compression_method(rawzip::CompressionMethod::STORE)
            .start()
            .map_err(|e| failed(name, &e))?;
        let mut data = config.wrap(&mut entry);
        write_npy(t, &mut data)?;
        let (_, descriptor) = data.finish().map_err(|e| failed(name, &e))?;
        entry.finish(descriptor).map_err(|e| failed(name, &e))?;
    }
    archive
        .finish()
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
    fn reads_big_endian() {
        let mut buf = Vec::new();
        write_npy(&Tensor::from_i32(vec![2], vec![1, 2]).unwrap(), &mut buf).unwrap();
        let mut be = replace_bytes(&buf, b"'<i4'", b"'>i4'");
        let n = be.len();
        be[n - 8..].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(
            read_npy(&be).unwrap(),
            Tensor::from_i32(vec![2], vec![1, 2]).unwrap()
        );
    }

    /// An `.npy` document in Fortran order with the given descriptor, shape and raw items.
    fn fortran_npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': True, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn reads_fortran_order_as_row_major() {
        // numpy's `np.arange(6).reshape(2, 3).T` is saved as shape (3, 2), Fortran order, with
        // the items 0..6 in memory: its row-major reading is [[0, 3], [1, 4], [2, 5]].
        let raw: Vec<u8> = (0..6i32).flat_map(|v| v.to_le_bytes()).collect();
        let t = read_npy(&fortran_npy("<i4", "(3, 2)", &raw)).unwrap();
        assert_eq!(
            t,
            Tensor::from_i32(vec![3, 2], vec![0, 3, 1, 4, 2, 5]).unwrap()
        );

        // Rank 3, (2, 3, 2): the item at [i, j, k] sits at i + 2j + 6k in memory.
        let raw: Vec<u8> = (0..12i64).flat_map(|v| v.to_le_bytes()).collect();
        let t = read_npy(&fortran_npy("<i8", "(2, 3, 2)", &raw)).unwrap();
        let mut want = Vec::new();
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..2 {
                    want.push(i + 2 * j + 6 * k);
                }
            }
        }
        assert_eq!(t, Tensor::from_i64(vec![2, 3, 2], want).unwrap());

        // Every byte width: 1-byte bool, 2-byte f16, 8-byte f64; and the empty and 1-D cases.
        let t = read_npy(&fortran_npy("|b1", "(2, 2)", &[1, 0, 0, 1])).unwrap();
        assert_eq!(
            t,
            Tensor::from_bool(vec![2, 2], vec![true, false, false, true]).unwrap()
        );
        let halves: Vec<f16> = (0..4).map(|v| f16::from_f32(v as f32)).collect();
        let raw: Vec<u8> = halves.iter().flat_map(|v| v.to_le_bytes()).collect();
        let t = read_npy(&fortran_npy("<f2", "(2, 2)", &raw)).unwrap();
        let want = [0, 2, 1, 3].map(|i| halves[i]).to_vec();
        assert_eq!(t, Tensor::from_f16(vec![2, 2], want).unwrap());
        let raw: Vec<u8> = [1.5f64, -2.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let t = read_npy(&fortran_npy(">f8", "(2,)", &raw)).unwrap();
        assert_eq!(t, Tensor::from_f64(vec![2], vec![1.5, -2.0]).unwrap());
        let t = read_npy(&fortran_npy("<f4", "(0, 3)", &[])).unwrap();
        assert_eq!(t, Tensor::from_f32(vec![0, 3], vec![]).unwrap());
    }

    #[test]
    fn a_descriptor_of_any_text_is_a_clean_error() {
        for descr in ["\u{e9}f4", "\u{1f600}", "<\u{e9}", ""] {
            let doc = fortran_npy(descr, "(1,)", &[0; 4]);
            let err = read_npy(&doc).unwrap_err().to_string();
            assert!(
                err.contains("unsupported dtype descriptor"),
                "{descr}: {err}"
            );
        }
    }

    #[test]
    fn reading_stops_where_the_header_says_the_data_ends() {
        // A header for 4 f32 followed by an endless stream: only 16 bytes are read.
        let mut buf = Vec::new();
        write_npy(&Tensor::from_f32(vec![4], vec![0.0; 4]).unwrap(), &mut buf).unwrap();
        let header = &buf[..buf.len() - 16];
        let mut endless = header.chain(std::io::repeat(0));
        let mut budget = u64::MAX;
        let t = read_npy_from(&mut endless, &mut budget).unwrap();
        assert_eq!(t, Tensor::from_f32(vec![4], vec![0.0; 4]).unwrap());
        assert_eq!(budget, u64::MAX - 16);

        // A declared size beyond the budget is refused before anything is allocated.
        let mut budget = 15;
        let err = read_npy_from(&mut &buf[..], &mut budget)
            .unwrap_err()
            .to_string();
        assert!(err.contains("memory limit"), "{err}");
        let huge = replace_bytes(&buf, b"(4,)", b"(1000000000000,)");
        let err = read_npy(&huge).unwrap_err().to_string();
        assert!(
            err.contains("cannot allocate") || err.contains("truncated"),
            "{err}"
        );
    }

    #[test]
    fn a_deflated_npz_entry_that_expands_past_its_header_is_refused_unread() {
        use std::io::Write as _;
        // The entry's header declares 4 f32; its deflated stream holds 64 MiB more zeros.
        let mut doc = Vec::new();
        write_npy(&Tensor::from_f32(vec![4], vec![1.0; 4]).unwrap(), &mut doc).unwrap();
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("x.npy", opts).unwrap();
        zip.write_all(&doc).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            zip.write_all(&zeros).unwrap();
        }
        let archive = zip.finish().unwrap().into_inner();
        assert!(archive.len() < 1 << 20, "the bomb is small on disk");
        // One byte past the array is read, to tell that there is more: an error.
        let err = read_npz_within(Cursor::new(&archive), &mut 16)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("entry 'x.npy': bytes after the array's data"),
            "{err}"
        );
        let err = read_npz_within(Cursor::new(&archive), &mut 15)
            .unwrap_err()
            .to_string();
        assert!(err.contains("memory limit"), "{err}");
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

    /// An archive of two small arrays, `a` and `b`, as `write_npz` writes it.
    fn two_entry_npz() -> Vec<u8> {
        let entries = vec![
            (
                "a".to_string(),
                Tensor::from_i32(vec![3], vec![1, 2, 3]).unwrap(),
            ),
            ("b".to_string(), Tensor::from_i32(vec![1], vec![7]).unwrap()),
        ];
        let mut buf = Cursor::new(Vec::new());
        write_npz(&entries, &mut buf).unwrap();
        buf.into_inner()
    }

    fn npz_error(bytes: &[u8]) -> String {
        read_npz(Cursor::new(bytes)).unwrap_err().to_string()
    }

    #[test]
    fn a_flipped_data_byte_fails_the_entrys_crc() {
        let good = two_entry_npz();
        assert_eq!(read_npz(Cursor::new(&good)).unwrap().len(), 2);
        // The value 2 of `a` (stored, uncompressed) becomes 3.
        let bad = replace_bytes(&good, &[1, 0, 0, 0, 2, 0, 0, 0], &[1, 0, 0, 0, 3, 0, 0, 0]);
        let err = npz_error(&bad);
        assert!(err.contains("entry 'a.npy': "), "{err}");
        assert!(err.contains("Invalid checksum"), "{err}");
    }

    #[test]
    fn an_archive_with_one_name_twice_is_refused() {
        // `b.npy` renamed `a.npy` in its local header and the central directory.
        let twice = two_entry_npz();
        let at: Vec<usize> = (0..twice.len() - 5)
            .filter(|&i| &twice[i..i + 5] == b"b.npy")
            .collect();
        assert_eq!(at.len(), 2, "a local header and a central directory entry");
        let mut twice = twice;
        for i in at {
            twice[i] = b'a';
        }
        let err = npz_error(&twice);
        assert!(err.contains("two entries named 'a.npy'"), "{err}");
    }

    #[test]
    fn fortran_order_must_be_true_or_false() {
        let mut buf = Vec::new();
        write_npy(&Tensor::from_i32(vec![2], vec![1, 2]).unwrap(), &mut buf).unwrap();
        let yes = replace_bytes(&buf, b"'fortran_order': False", b"'fortran_order': 'yes'");
        let err = read_npy(&yes).unwrap_err().to_string();
        assert!(
            err.contains("fortran_order is 'yes', not True or False"),
            "{err}"
        );
        let one = replace_bytes(&buf, b"'fortran_order': False", b"'fortran_order': 1    ");
        assert!(read_npy(&one).is_err());
    }

    #[test]
    fn a_header_check_stops_before_the_data_is_read() {
        let archive = two_entry_npz();
        let mut seen = Vec::new();
        let mut budget = 1000;
        let err = read_npz_checked(Cursor::new(&archive), &mut budget, &mut |key, ty, shape| {
            seen.push((key.to_string(), ty, shape.to_vec()));
            if key == "b" {
                Err("b is not wanted".to_string())
            } else {
                Ok(())
            }
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("entry 'b.npy': b is not wanted"), "{err}");
        assert_eq!(
            seen,
            [
                ("a".to_string(), ElementType::I32, vec![3]),
                ("b".to_string(), ElementType::I32, vec![1])
            ]
        );
        // `a`'s 12 bytes were read; `b`'s 4 never were.
        assert_eq!(budget, 1000 - 12);
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
