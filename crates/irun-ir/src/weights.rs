//! The `.bin` weights file: memory-mapped once, read through bounds-checked views.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use irun_tensor::{element_count, fmt_shape, Buf, ByteSource, ElementType, Storage, Tensor};
use memmapix::Mmap;

use crate::decode;

enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

/// Both forms are immutable and never move once behind the `Arc`: the map is read-only and
/// lives until the last tensor borrowing it is dropped; the `Vec` is never touched again.
impl ByteSource for Bytes {
    fn bytes(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// The weights blob. Cloning is cheap (shared).
#[derive(Clone)]
pub struct Weights {
    path: PathBuf,
    bytes: Option<Arc<Bytes>>,
    /// Why the file could not be opened, when it could not.
    missing_reason: Option<String>,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weights")
            .field("path", &self.path)
            .field("len", &self.len())
            .finish()
    }
}

impl Weights {
    /// Opens `path`. A missing file is not an error here: as in OpenVINO, the model still
    /// loads and each Const that needs weights reports it. Set `IRUN_NO_MMAP=1` to read the
    /// file into memory instead of mapping it.
    pub fn open(path: &Path) -> Weights {
        let mut w = Weights {
            path: path.to_path_buf(),
            bytes: None,
            missing_reason: None,
        };
        match Self::load(path) {
            Ok(b) => w.bytes = Some(Arc::new(b)),
            Err(reason) => w.missing_reason = Some(reason),
        }
        w
    }

    /// No weights file at all (models made of Parameters only, tests).
    pub fn empty(path: &Path) -> Weights {
        Weights {
            path: path.to_path_buf(),
            bytes: Some(Arc::new(Bytes::Owned(Vec::new()))),
            missing_reason: None,
        }
    }

    pub fn from_vec(path: &Path, bytes: Vec<u8>) -> Weights {
        Weights {
            path: path.to_path_buf(),
            bytes: Some(Arc::new(Bytes::Owned(bytes))),
            missing_reason: None,
        }
    }

    fn load(path: &Path) -> Result<Bytes, String> {
        let file = File::open(path)
            .map_err(|e| format!("cannot open weights file {}: {e}", path.display()))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
        if !meta.is_file() {
            return Err(format!(
                "weights file {} is not a regular file",
                path.display()
            ));
        }
        if meta.len() == 0 || std::env::var_os("IRUN_NO_MMAP").is_some_and(|v| v == "1") {
            return std::fs::read(path)
                .map(Bytes::Owned)
                .map_err(|e| format!("cannot read {}: {e}", path.display()));
        }
        // SAFETY: the map is read-only and private to this process. Rust's aliasing rules hold
        // as long as no other process modifies or truncates the file while it is mapped; that
        // cannot be proven from inside the process, and it is the same contract OpenVINO's
        // own reader (which maps `.bin` files by default) imposes. A truncation would raise
        // SIGBUS, never a silent wrong value. Every access goes through `slice`, which checks
        // bounds against the length measured at map time. Users who cannot give that
        // guarantee set IRUN_NO_MMAP=1.
        let map = unsafe { Mmap::map(&file) }
            .map_err(|e| format!("cannot map {}: {e}", path.display()))?;
        Ok(Bytes::Mapped(map))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists and could be opened.
    pub fn is_available(&self) -> bool {
        self.bytes.is_some()
    }

    pub fn missing_reason(&self) -> Option<&str> {
        self.missing_reason.as_deref()
    }

    pub fn len(&self) -> u64 {
        match self.bytes.as_deref() {
            Some(Bytes::Mapped(m)) => m.len() as u64,
            Some(Bytes::Owned(v)) => v.len() as u64,
            None => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn all(&self) -> &[u8] {
        match self.bytes.as_deref() {
            Some(Bytes::Mapped(m)) => m,
            Some(Bytes::Owned(v)) => v,
            None => &[],
        }
    }

    /// The bytes `offset..offset+size`, if inside the file.
    pub fn slice(&self, offset: u64, size: u64) -> Option<&[u8]> {
        let end = offset.checked_add(size)?;
        let all = self.all();
        if end > all.len() as u64 {
            return None;
        }
        Some(&all[offset as usize..end as usize])
    }

    /// A checked constant as a tensor: borrowed from the weights without a copy when its
    /// bytes already are the values in memory (a little-endian host, a byte-aligned numeric
    /// type other than boolean, an offset aligned for the type); otherwise a decoded copy.
    pub fn decode(&self, c: &ConstInfo) -> Result<Tensor, String> {
        let bytes = self.slice(c.offset, c.size).ok_or_else(|| {
            format!(
                "bytes {}..{} are outside the weights file",
                c.offset,
                c.offset.saturating_add(c.size)
            )
        })?;
        if let Some(t) = self.borrow(c) {
            return Ok(t);
        }
        decode::decode(c.element_type, c.shape.clone(), bytes)
    }

    /// A constant's bytes as stored, borrowed from the weights without a copy (packed codes
    /// that a kernel decodes itself); `None` when they are outside the file.
    pub fn raw(&self, c: &ConstInfo) -> Option<Buf<u8>> {
        self.slice(c.offset, c.size)?;
        let source: Arc<dyn ByteSource> = self.bytes.clone()?;
        Buf::borrow(
            source,
            usize::try_from(c.offset).ok()?,
            usize::try_from(c.size).ok()?,
        )
    }

    /// The constant as a view of the weights, when its layout allows one.
    fn borrow(&self, c: &ConstInfo) -> Option<Tensor> {
        if cfg!(target_endian = "big") {
            return None;
        }
        let source: Arc<dyn ByteSource> = self.bytes.clone()?;
        let start = usize::try_from(c.offset).ok()?;
        let n = element_count(&c.shape)?;
        fn view<T: bytemuck::Pod>(
            s: Arc<dyn ByteSource>,
            start: usize,
            n: usize,
        ) -> Option<Buf<T>> {
            Buf::borrow(s, start, n)
        }
        use ElementType as E;
        let storage = match c.element_type {
            E::F16 => Storage::F16(view(source, start, n)?),
            E::Bf16 => Storage::Bf16(view(source, start, n)?),
            E::F32 => Storage::F32(view(source, start, n)?),
            E::F64 => Storage::F64(view(source, start, n)?),
            E::I8 => Storage::I8(view(source, start, n)?),
            E::I16 => Storage::I16(view(source, start, n)?),
            E::I32 => Storage::I32(view(source, start, n)?),
            E::I64 => Storage::I64(view(source, start, n)?),
            E::U8 => Storage::U8(view(source, start, n)?),
            E::U16 => Storage::U16(view(source, start, n)?),
            E::U32 => Storage::U32(view(source, start, n)?),
            E::U64 => Storage::U64(view(source, start, n)?),
            // Boolean bytes other than 0/1 must be normalised; packed and narrow types and
            // strings are decoded.
            _ => return None,
        };
        Tensor::new(c.element_type, c.shape.clone(), storage).ok()
    }
}

/// A Const's weight reference, validated against the weights file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstInfo {
    pub element_type: ElementType,
    pub shape: Vec<usize>,
    pub offset: u64,
    pub size: u64,
}

impl ConstInfo {
    /// Elements of the shape (saturating: a checked constant's shape never overflows).
    pub fn element_count(&self) -> usize {
        element_count(&self.shape).unwrap_or(usize::MAX)
    }
}

/// Parses a Const `shape` attribute: comma-separated non-negative integers, spaces allowed,
/// empty for a scalar.
pub fn parse_const_shape(s: &str) -> Result<Vec<usize>, String> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(Vec::new());
    }
    t.split(',')
        .map(|d| {
            let d = d.trim();
            if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("`{d}` is not a non-negative integer"));
            }
            d.parse::<usize>()
                .map_err(|_| format!("`{d}` is too large"))
        })
        .collect()
}

/// Checks a Const's reference against the weights file, as OpenVINO does and more:
/// `offset + size` must not overflow and must lie inside the file, the element count must not
/// overflow, and `size` must hold `ceil(count * bits / 8)` bytes (for strings: the header,
/// and the blob must decode: its count, its offsets, UTF-8).
pub fn check_const(
    weights: &Weights,
    element_type: ElementType,
    shape: Vec<usize>,
    offset: u64,
    size: u64,
) -> Result<ConstInfo, String> {
    if element_type == ElementType::Dynamic {
        return Err("a Const cannot have the dynamic element type".into());
    }
    let count = element_count(&shape)
        .ok_or_else(|| format!("element count of shape {} overflows", fmt_shape(&shape)))?;
    let end = offset
        .checked_add(size)
        .ok_or_else(|| format!("offset {offset} + size {size} overflows"))?;
    if !weights.is_available() {
        return Err(format!(
            "the Const needs {size} bytes of weights but {}",
            weights
                .missing_reason()
                .unwrap_or("there is no weights file")
        ));
    }
    if end > weights.len() {
        return Err(format!(
            "bytes {offset}..{end} (offset {offset} + size {size}) are past the end of {} ({} bytes)",
            weights.path().display(),
            weights.len()
        ));
    }
    let needed = if element_type == ElementType::String {
        if count == 0 {
            4
        } else {
            8u64.saturating_add(4u64.saturating_mul(count as u64))
        }
    } else {
        element_type
            .packed_size(count as u64)
            .ok_or_else(|| format!("byte size of {count} {element_type} elements overflows"))?
    };
    if size < needed {
        return Err(format!(
            "size {size} is too small for shape {} of {element_type}: {needed} bytes needed",
            fmt_shape(&shape)
        ));
    }
    if element_type == ElementType::String {
        // The blob's count, offsets and UTF-8 are checked here, where `check` sees them, not
        // only when a kernel first reads the strings.
        let bytes = weights
            .slice(offset, size)
            .ok_or("the string blob is outside the weights")?;
        crate::decode::decode(element_type, shape.clone(), bytes)?;
    }
    Ok(ConstInfo {
        element_type,
        shape,
        offset,
        size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: usize) -> Weights {
        Weights::from_vec(Path::new("m.bin"), vec![0; n])
    }

    /// A string Const's blob is checked when the Const is: count, offsets (negative,
    /// decreasing, past the data) and UTF-8 are errors, as for a kernel reading them.
    #[test]
    fn string_blobs_are_checked_with_the_const() {
        let blob = |words: &[i32], data: &[u8]| -> Vec<u8> {
            let mut b: Vec<u8> = words.iter().flat_map(|x| x.to_le_bytes()).collect();
            b.extend_from_slice(data);
            b
        };
        let check = |bytes: Vec<u8>, n: usize| {
            let len = bytes.len() as u64;
            let w = Weights::from_vec(Path::new("m.bin"), bytes);
            check_const(&w, ElementType::String, vec![n], 0, len)
        };
        assert!(check(blob(&[2, 0, 2, 3], b"abc"), 2).is_ok());
        for (bytes, n, why) in [
            (blob(&[3, 0, 2, 3, 3], b"abc"), 2, "holds 3 strings"),
            (blob(&[2, 0, 2, 1], b"abc"), 2, "offsets 2..1"),
            (blob(&[2, 0, -1, 3], b"abc"), 2, "offsets 0..-1"),
            (blob(&[2, 0, 2, 9], b"abc"), 2, "offsets 2..9"),
            (blob(&[1, 0, 2], &[0xff, 0xfe]), 1, "UTF-8"),
        ] {
            let e = check(bytes, n).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn aligned_constants_are_views_of_the_weights_others_are_decoded() {
        let mut bytes: Vec<u8> = [1.0f32, 2.0, 3.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        bytes.extend([1, 0, 2]);
        let w = Weights::from_vec(Path::new("m.bin"), bytes);
        let info = |ty, shape: Vec<usize>, offset: u64, size| ConstInfo {
            element_type: ty,
            shape,
            offset,
            size,
        };
        let aligned = w.decode(&info(ElementType::F32, vec![2], 4, 8)).unwrap();
        assert!(aligned.is_borrowed());
        assert_eq!(aligned.values::<f32>().unwrap(), &[2.0, 3.0]);
        let again = w.decode(&info(ElementType::F32, vec![2], 4, 8)).unwrap();
        assert!(
            aligned.shares_storage_with(&again),
            "both views read the same bytes"
        );
        let unaligned = w.decode(&info(ElementType::I16, vec![1], 3, 2)).unwrap();
        assert!(!unaligned.is_borrowed());
        assert_eq!(
            unaligned.values::<i16>().unwrap(),
            &[i16::from_le_bytes([0x3f, 0])]
        );
        // Booleans are normalised to 0/1, so they are always decoded.
        let b = w
            .decode(&info(ElementType::Boolean, vec![3], 12, 3))
            .unwrap();
        assert!(!b.is_borrowed());
        assert_eq!(b.values::<bool>().unwrap(), &[true, false, true]);
        let mut written = aligned.clone();
        written.values_mut::<f32>().unwrap()[0] = 9.0;
        assert!(!written.is_borrowed());
        assert_eq!(
            w.decode(&info(ElementType::F32, vec![1], 4, 4))
                .unwrap()
                .values::<f32>()
                .unwrap(),
            &[2.0]
        );
    }

    #[test]
    fn const_checks() {
        assert!(check_const(&w(16), ElementType::F32, vec![2, 2], 0, 16).is_ok());
        assert!(check_const(&w(16), ElementType::F32, vec![2, 2], 1, 16)
            .unwrap_err()
            .contains("past the end"));
        assert!(check_const(&w(16), ElementType::F32, vec![2, 2], 0, 12)
            .unwrap_err()
            .contains("too small"));
        assert!(check_const(&w(16), ElementType::F32, vec![2], u64::MAX, 2)
            .unwrap_err()
            .contains("overflows"));
        assert!(
            check_const(&w(16), ElementType::F32, vec![usize::MAX, 3], 0, 2)
                .unwrap_err()
                .contains("overflows")
        );
        assert!(
            check_const(&w(16), ElementType::F32, vec![usize::MAX / 2], 0, 16)
                .unwrap_err()
                .contains("overflows")
        );
        assert!(check_const(&w(16), ElementType::U1, vec![17], 0, 3).is_ok());
        assert!(check_const(&w(16), ElementType::U1, vec![17], 0, 2).is_err());
        let missing = Weights::open(Path::new("/nonexistent/model.bin"));
        assert!(check_const(&missing, ElementType::F32, vec![1], 0, 4)
            .unwrap_err()
            .contains("cannot open"));
    }

    #[test]
    fn const_shape_parsing() {
        assert_eq!(parse_const_shape("1, 3").unwrap(), vec![1, 3]);
        assert_eq!(parse_const_shape("").unwrap(), Vec::<usize>::new());
        assert!(parse_const_shape("1,-3").is_err());
        assert!(parse_const_shape("1,,3").is_err());
        assert!(parse_const_shape("99999999999999999999999").is_err());
    }

    #[test]
    fn dev_zero_is_not_a_weights_file() {
        let w = Weights::open(Path::new("/dev/zero"));
        assert!(!w.is_available());
        assert!(w.missing_reason().unwrap().contains("not a regular file"));
    }
}
