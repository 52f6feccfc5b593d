//! Weights kept as NNCF stores them: low-bit codes with a scale (and maybe a zero point) per
//! group of values along each row, decoded in f32 as the products run, never widened into a
//! copy.
//!
//! NNCF writes a compressed `[rows, cols]` weight as `codes -> Convert -> [Subtract zero
//! point] -> Multiply scale -> [Reshape] -> [Convert f32]` in front of a MatMul (with
//! `transpose_b`) or an embedding Gather. Read literally, the f16 graph rounds every weight
//! to f16; OpenVINO CPU instead computes `(code - zero_point) * scale` in f32 inside its
//! kernels. [`CompressedWeights`] does the same: each weight is that f32 expression of its
//! code, zero point and scale, all exact f32 values (f16, u4, f8e8m0 ... widen exactly).
//!
//! Codes of 4 bits are two to a byte, the lower-indexed element in the low nibble; codes of 8
//! bits one to a byte. `lut` maps a code to its value (u4: 0..15, nf4: its table ...), so
//! every format decodes the same way.

use std::sync::Arc;

use irun_tensor::{Buf, ElementType, Tensor};

use crate::kernel::{count_from_end, IndexValues};
use crate::op::OpError;
use crate::op::{codes, Prepared, Value};
use crate::par;
use crate::simd;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

/// How codes become values: arithmetic where the table is the identity or two's complement
/// (no lookup), a lookup otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decode {
    /// 4-bit codes 0..16 as themselves (u4).
    U4,
    /// 4-bit codes through the 16-entry table (i4, nf4, f4e2m1).
    Lut16,
    /// 8-bit codes as themselves (u8).
    U8,
    /// 8-bit codes as two's complement (i8).
    I8,
    /// 8-bit codes through the 256-entry table (f8e4m3, f8e5m2).
    Lut256,
}

impl Decode {
    fn of(width: CodeWidth, lut: &[f32]) -> Decode {
        let is = |f: fn(usize) -> f32| lut.iter().enumerate().all(|(c, &v)| v == f(c));
        match width {
            CodeWidth::Four if is(|c| c as f32) => Decode::U4,
            CodeWidth::Four => Decode::Lut16,
            CodeWidth::Eight if is(|c| c as f32) => Decode::U8,
            CodeWidth::Eight if is(|c| f32::from(c as u8 as i8)) => Decode::I8,
            CodeWidth::Eight => Decode::Lut256,
        }
    }
}

/// Bits per stored code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeWidth {
    Four,
    Eight,
}

impl CodeWidth {
    pub fn codes(self) -> usize {
        match self {
            CodeWidth::Four => 16,
            CodeWidth::Eight => 256,
        }
    }
}

/// A `[rows, cols]` matrix of codes with per-(row, group) scales and zero points.
pub struct CompressedWeights {
    codes: Buf<u8>,
    width: CodeWidth,
    decode: Decode,
    /// The value of each code.
    lut: Vec<f32>,
    rows: usize,
    cols: usize,
    /// Columns per group; `cols` is a whole number of groups.
    group: usize,
    /// `[rows, cols / group]`.
    scales: Vec<f32>,
    /// `[rows, cols / group]`, when there is a zero point.
    zero_points: Option<Vec<f32>>,
}

impl std::fmt::Debug for CompressedWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressedWeights")
            .field("width", &self.width)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("group", &self.group)
            .field("zero_points", &self.zero_points.is_some())
            .finish()
    }
}

impl CompressedWeights {
    /// Checks that every part has the length the shape says.
    pub fn new(
        codes: Buf<u8>,
        width: CodeWidth,
        lut: Vec<f32>,
        (rows, cols): (usize, usize),
        group: usize,
        scales: Vec<f32>,
        zero_points: Option<Vec<f32>>,
    ) -> Result<CompressedWeights, String> {
        let bytes = match width {
            CodeWidth::Four => rows.checked_mul(cols).map(|n| n.div_ceil(2)),
            CodeWidth::Eight => rows.checked_mul(cols),
        };
        if group == 0 || cols % group != 0 {
            return Err(format!("groups of {group} do not divide {cols} columns"));
        }
        let groups = rows * (cols / group);
        if bytes != Some(codes.len()) {
            return Err(format!(
                "{} bytes of codes for a {rows} x {cols} matrix of {width:?}-bit codes",
                codes.len()
            ));
        }
        if lut.len() != width.codes() {
            return Err(format!(
                "{} code values for {} codes",
                lut.len(),
                width.codes()
            ));
        }
        if scales.len() != groups || zero_points.as_ref().is_some_and(|z| z.len() != groups) {
            return Err(format!(
                "scales or zero points are not one per {groups} groups"
            ));
        }
        Ok(CompressedWeights {
            codes,
            width,
            decode: Decode::of(width, &lut),
            lut,
            rows,
            cols,
            group,
            scales,
            zero_points,
        })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Bytes this holds beyond the weights file (codes borrowed from it count nothing).
    pub fn byte_size(&self) -> usize {
        self.codes.owned_bytes()
            + 4 * (self.lut.len()
                + self.scales.len()
                + self.zero_points.as_ref().map_or(0, Vec::len))
    }

    /// Row `r`'s weights into `out` (`cols` values).
    pub fn decode_row(&self, r: usize, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if avx2::usable(self) {
            avx2::decode_row(self, r, out);
            return;
        }
        simd::widest(
            #[inline(always)]
            || self.decode_row_portable(r, out),
        );
    }

    /// [`Self::decode_row`] one value at a time, for any group and row layout.
    #[inline(always)]
    fn decode_row_portable(&self, r: usize, out: &mut [f32]) {
        let out = &mut out[..self.cols];
        let groups = self.cols / self.group;
        let zero = |g: usize| self.zero_points.as_ref().map_or(0.0, |z| z[r * groups + g]);
        let first = r * self.cols;
        match self.width {
            CodeWidth::Eight => {
                let codes = &self.codes[first..first + self.cols];
                for (g, (out, codes)) in out
                    .chunks_exact_mut(self.group)
                    .zip(codes.chunks_exact(self.group))
                    .enumerate()
                {
                    let (s, z) = (self.scales[r * groups + g], zero(g));
                    for (o, &c) in out.iter_mut().zip(codes) {
                        *o = (self.lut[c as usize] - z) * s;
                    }
                }
            }
            CodeWidth::Four if first.is_multiple_of(2) && self.group.is_multiple_of(2) => {
                // Whole bytes per group: two codes from each.
                let codes = &self.codes[first / 2..(first + self.cols) / 2];
                let lut: &[f32; 16] = self.lut[..16].try_into().expect("16 codes");
                for (g, (out, codes)) in out
                    .chunks_exact_mut(self.group)
                    .zip(codes.chunks_exact(self.group / 2))
                    .enumerate()
                {
                    let (s, z) = (self.scales[r * groups + g], zero(g));
                    for (o, &b) in out.chunks_exact_mut(2).zip(codes) {
                        o[0] = (lut[(b & 15) as usize] - z) * s;
                        o[1] = (lut[(b >> 4) as usize] - z) * s;
                    }
                }
            }
            CodeWidth::Four => {
                for (k, o) in out.iter_mut().enumerate() {
                    let i = first + k;
                    let code = (self.codes[i / 2] >> (4 * (i % 2))) & 15;
                    let g = k / self.group;
                    *o = (self.lut[code as usize] - zero(g)) * self.scales[r * groups + g];
                }
            }
        }
    }
}

/// The fewest weight rows per task of the dot products: a task per row costs more in
/// scheduling (a microsecond) than a row's products.
const MIN_ROWS_PER_TASK: usize = 16;
/// Tasks per thread for the dot products, so that threads finishing early take more.
const TASKS_PER_THREAD: usize = 4;
/// Weight rows decoded per task when many input rows share them (a prompt): the GEMM packs
/// the input once per block, so blocks are larger.
const GEMM_BLOCK: usize = 128;
/// Input rows from which each weight is decoded once to f32 and multiplied into several rows
/// ([`avx2::weighted_rows`]) rather than summed per group for each row.
const WEIGHTED_ROWS: usize = 5;
/// Input rows from which a block's product goes through the GEMM on decoded rows: enough
/// rows that packing the decoded block pays.
const GEMM_ROWS: usize = 65;
#[cfg(target_arch = "x86_64")]
const _: () = assert!(WEIGHTED_ROWS == avx2::MAX_ROWS + 1);

/// `x · Wᵀ` for f32 `x` of shape `[..., cols]` and compressed `W` `[rows, cols]`: a MatMul
/// with `transpose_b` whose B is a compressed weight. The output is `[..., rows]`.
#[derive(Debug)]
pub struct CompressedMatMul {
    pub weights: Arc<CompressedWeights>,
}

impl CompressedMatMul {
    /// `y = x · Wᵀ`, `x` being `x_rows` rows of `cols` values; `y` is `x_rows` rows of `rows`.
    pub fn multiply(&self, x: &[f32], x_rows: usize) -> Vec<f32> {
        let w = &self.weights;
        let (n, k) = (w.rows, w.cols);
        let gemm = x_rows >= GEMM_ROWS;
        // Each dot product is one row's whatever the block, so only the GEMM's blocks are
        // fixed (its tiles might round with the block's width).
        let block = if gemm {
            GEMM_BLOCK
        } else {
            n.div_ceil(par::threads() * TASKS_PER_THREAD)
                .max(MIN_ROWS_PER_TASK)
        };
        // Only the per-group dot products (fewer than WEIGHTED_ROWS rows) subtract the zero
        // point through the inputs' group sums.
        #[cfg(target_arch = "x86_64")]
        let x_sums = if x_rows < WEIGHTED_ROWS {
            avx2::group_sums(w, x)
        } else {
            Vec::new()
        };
        #[cfg(not(target_arch = "x86_64"))]
        let x_sums: Vec<f32> = Vec::new();
        // The decode step's one row, reordered once for the AVX-512 kernel.
        #[cfg(target_arch = "x86_64")]
        let one_row = (x_rows == 1 && avx512::usable(w)).then(|| avx512::Input::new(w, x));
        let mut parts: Vec<Vec<f32>> = vec![Vec::new(); n.div_ceil(block)];
        par::for_each_mut(&mut parts, &|b, part| {
            let first = b * block;
            let count = block.min(n - first);
            let mut out = vec![0f32; x_rows * count];
            #[cfg(target_arch = "x86_64")]
            if let Some(x) = &one_row {
                avx512::dot_block(w, first, x, &mut out);
                *part = out;
                return;
            }
            if gemm {
                let mut tile = vec![0f32; count * k];
                for (j, row) in tile.chunks_exact_mut(k.max(1)).enumerate() {
                    w.decode_row(first + j, row);
                }
                use crate::gemm::Mul;
                let kk = k as isize;
                f32::gemm(x_rows, k, count, x, (kk, 1), &tile, (1, kk), &mut out);
            } else if x_rows >= WEIGHTED_ROWS && w.vectorised() {
                w.weighted_block(first..first + count, x, &mut out);
            } else {
                let mut dots = vec![0f32; x_rows];
                let mut row = Vec::new();
                for j in 0..count {
                    w.dot_rows(first + j, x, &x_sums, &mut dots, &mut row);
                    for (m, &d) in dots.iter().enumerate() {
                        out[m * count + j] = d;
                    }
                }
            }
            *part = out;
        });
        let mut y = vec![0f32; x_rows * n];
        for (b, part) in parts.iter().enumerate() {
            let first = b * block;
            let count = block.min(n - first);
            for (r, src) in part.chunks_exact(count.max(1)).enumerate() {
                y[r * n + first..r * n + first + count].copy_from_slice(src);
            }
        }
        y
    }
}

/// Bytes of codes a sub-block of [`CompressedWeights::weighted_block`] keeps in L2 while
/// each chunk of input rows goes over it.
const WEIGHTED_BLOCK_CODES: usize = 192 << 10;

impl CompressedWeights {
    /// Whether the AVX2 kernels serve these weights on this CPU.
    fn vectorised(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            avx2::usable(self)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// `out[m * rows.len() + j] = x_m · w_(rows.start + j)` for the input rows `xs` (five or
    /// more, whole rows of `cols`) by [`avx2::weighted_rows`], chunk of input rows by chunk
    /// over sub-blocks of weight rows whose codes stay in L2: a chunk's inputs then stay in
    /// L1 from weight row to weight row, where taking every chunk for one weight row before
    /// the next alternated them (16 rows of 768 inputs, 48 KB) and read them from L2. Each
    /// output is the one call's, so the same bits whatever the order.
    #[cfg(target_arch = "x86_64")]
    fn weighted_block(&self, rows: std::ops::Range<usize>, xs: &[f32], out: &mut [f32]) {
        let k = self.cols;
        let count = rows.len();
        let chunk = avx2::MAX_WEIGHTED_ROWS;
        let row_bytes = self.codes.len() / self.rows.max(1);
        let sub = (WEIGHTED_BLOCK_CODES / row_bytes.max(1)).max(1);
        let mut dots = [0f32; avx2::MAX_WEIGHTED_ROWS];
        for s0 in (0..count).step_by(sub) {
            for (c, xs) in xs.chunks(chunk * k.max(1)).enumerate() {
                let here = &mut dots[..xs.len() / k.max(1)];
                for j in s0..(s0 + sub).min(count) {
                    avx2::weighted_rows(self, rows.start + j, xs, here);
                    for (m, &d) in here.iter().enumerate() {
                        out[(c * chunk + m) * count + j] = d;
                    }
                }
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn weighted_block(&self, _: std::ops::Range<usize>, _: &[f32], _: &mut [f32]) {
        unreachable!("vectorised() is false off x86_64")
    }

    /// `out[m] = x_m · w_r` for the input rows `xs` (`out.len()` rows of `cols`, `x_sums`
    /// their sums per group where the vector kernel wants them); `scratch` holds a decoded
    /// row where no vector kernel serves.
    fn dot_rows(
        &self,
        r: usize,
        xs: &[f32],
        x_sums: &[f32],
        out: &mut [f32],
        scratch: &mut Vec<f32>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if avx2::usable(self) && out.len() < WEIGHTED_ROWS {
            avx2::dot_rows(self, r, xs, x_sums, out);
            return;
        }
        let _ = x_sums;
        scratch.resize(self.cols, 0.0);
        self.decode_row(r, scratch);
        for (o, x) in out.iter_mut().zip(xs.chunks_exact(self.cols.max(1))) {
            *o = crate::gemm::dot32(x, scratch);
        }
    }
}

impl Prepared for CompressedMatMul {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [x] = inputs.as_slice() else {
            return Err(OpError::new(
                codes::ARITY,
                "a compressed MatMul takes one input",
            ));
        };
        let k = self.weights.cols;
        let shape = x.shape();
        let values = x
            .values::<f32>()
            .filter(|_| shape.last() == Some(&k))
            .ok_or_else(|| {
                OpError::new(
                    codes::RUN_SHAPE,
                    format!(
                        "MatMul with compressed weights [{}, {k}] needs f32 input [..., {k}], got {} {}",
                        self.weights.rows,
                        x.element_type(),
                        irun_tensor::fmt_shape(shape)
                    ),
                )
            })?;
        let x_rows = values.len().checked_div(k).unwrap_or(0);
        let y = self.multiply(values, x_rows);
        let mut out_shape = shape.to_vec();
        *out_shape.last_mut().expect("rank >= 1") = self.weights.rows;
        let t = Tensor::from_f32(out_shape, y)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }

    fn byte_size(&self) -> usize {
        self.weights.byte_size()
    }
}

/// Rows of a compressed `[rows, cols]` table picked by integer indices (Gather-8 on axis 0,
/// no batch dims: an embedding). Negative indices count from the end; one still out of range
/// gives a row of zeros, as Gather-8 does. The output is `indices.shape + [cols]`.
#[derive(Debug)]
pub struct CompressedGather {
    pub weights: Arc<CompressedWeights>,
}

impl Prepared for CompressedGather {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [indices] = inputs.as_slice() else {
            return Err(OpError::new(
                codes::ARITY,
                "a compressed Gather takes the indices",
            ));
        };
        let w = &self.weights;
        let picks = IndexValues::of(indices)
            .map(|v| {
                let mut buf = vec![0i64; v.len()];
                v.read(0..v.len(), &mut buf);
                buf
            })
            .ok_or_else(|| {
                OpError::new(
                    codes::RUN_SHAPE,
                    format!(
                        "Gather indices must be integers, got {}",
                        indices.element_type()
                    ),
                )
            })?;
        let cols = w.cols;
        let mut out = vec![0f32; picks.len() * cols];
        if cols > 0 {
            par::for_each_chunk_mut(&mut out, cols, &|at, row| {
                let i = count_from_end(picks[at / cols], w.rows as i64);
                if (0..w.rows as i64).contains(&i) {
                    w.decode_row(i as usize, row);
                }
            });
        }
        let mut shape = indices.shape().to_vec();
        shape.push(cols);
        let t = Tensor::from_f32(shape, out)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }

    fn byte_size(&self) -> usize {
        self.weights.byte_size()
    }
}

/// Which stored element types are codes of compressed weights, and their width.
pub fn code_width(ty: ElementType) -> Option<CodeWidth> {
    use ElementType as E;
    match ty {
        E::U4 | E::I4 | E::Nf4 | E::F4e2m1 => Some(CodeWidth::Four),
        E::U8 | E::I8 | E::F8e4m3 | E::F8e5m2 => Some(CodeWidth::Eight),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes 0..16 per nibble of `values` (low nibble first), u4 values.
    fn u4(rows: usize, cols: usize, codes: &[u8]) -> Buf<u8> {
        assert_eq!(codes.len(), rows * cols);
        let mut bytes = vec![0u8; codes.len().div_ceil(2)];
        for (i, &c) in codes.iter().enumerate() {
            bytes[i / 2] |= c << (4 * (i % 2));
        }
        bytes.into()
    }

    fn lut16() -> Vec<f32> {
        (0..16).map(|c| c as f32).collect()
    }

    /// The definition, one weight at a time.
    fn dense(codes: &[u8], cols: usize, group: usize, s: &[f32], z: Option<&[f32]>) -> Vec<f32> {
        let groups = cols / group;
        codes
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let (r, k) = (i / cols, i % cols);
                let g = r * groups + k / group;
                (c as f32 - z.map_or(0.0, |z| z[g])) * s[g]
            })
            .collect()
    }

    fn sample(rows: usize, cols: usize) -> Vec<u8> {
        (0..rows * cols)
            .map(|i| ((i * 7 + i / 3) % 16) as u8)
            .collect()
    }

    #[test]
    fn four_bit_rows_decode_as_the_definition() {
        for (rows, cols, group) in [(3, 8, 4), (5, 6, 3), (3, 5, 5), (2, 16, 16)] {
            let codes = sample(rows, cols);
            let groups = rows * cols / group;
            let s: Vec<f32> = (0..groups).map(|g| 0.5 - g as f32 * 0.125).collect();
            let z: Vec<f32> = (0..groups).map(|g| (g % 16) as f32).collect();
            for zp in [None, Some(z.as_slice())] {
                let w = CompressedWeights::new(
                    u4(rows, cols, &codes),
                    CodeWidth::Four,
                    lut16(),
                    (rows, cols),
                    group,
                    s.clone(),
                    zp.map(<[f32]>::to_vec),
                )
                .unwrap();
                let want = dense(&codes, cols, group, &s, zp);
                let mut got = vec![0f32; rows * cols];
                for (r, row) in got.chunks_exact_mut(cols).enumerate() {
                    w.decode_row(r, row);
                }
                assert_eq!(got, want, "{rows}x{cols} groups of {group}");
            }
        }
    }

    #[test]
    fn products_equal_dense_products_at_any_thread_count() {
        // Groups of 16 (AVX2 kernels), groups of two 32-code blocks (AVX-512 for one row).
        for (rows, cols, group) in [(37, 64, 16), (37, 128, 64)] {
            products_equal_dense_products(rows, cols, group);
        }
    }

    fn products_equal_dense_products(rows: usize, cols: usize, group: usize) {
        let codes = sample(rows, cols);
        let groups = rows * cols / group;
        let s: Vec<f32> = (0..groups).map(|g| 0.01 * (g as f32 - 40.0)).collect();
        let z: Vec<f32> = (0..groups).map(|g| (g * 5 % 16) as f32).collect();
        let w = Arc::new(
            CompressedWeights::new(
                u4(rows, cols, &codes),
                CodeWidth::Four,
                lut16(),
                (rows, cols),
                group,
                s.clone(),
                Some(z.clone()),
            )
            .unwrap(),
        );
        let dense_w = dense(&codes, cols, group, &s, Some(&z));
        let op = CompressedMatMul { weights: w };
        for x_rows in [1, 3, 9, 20, 70] {
            let x: Vec<f32> = (0..x_rows * cols)
                .map(|i| ((i % 13) as f32 - 6.0) * 0.25)
                .collect();
            let results: Vec<Vec<f32>> = [1, 2, 3]
                .into_iter()
                .map(|t| crate::testing::on_threads(t, || op.multiply(&x, x_rows)))
                .collect();
            let y = &results[0];
            for r in results.iter().skip(1) {
                assert_eq!(r, y, "the thread count changed the bits");
            }
            for (i, &got) in y.iter().enumerate() {
                let (m, n) = (i / rows, i % rows);
                let want: f64 = (0..cols)
                    .map(|k| x[m * cols + k] as f64 * dense_w[n * cols + k] as f64)
                    .sum();
                assert!(
                    (got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "{x_rows} rows, y[{i}] {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn gathered_rows_count_negative_indices_from_the_end_and_zero_the_rest() {
        let (rows, cols) = (4, 6);
        let codes: Vec<u8> = (0..rows * cols).map(|i| i as u8).collect();
        let w = CompressedWeights::new(
            codes.clone().into(),
            CodeWidth::Eight,
            (0..256).map(|c| c as f32).collect(),
            (rows, cols),
            cols,
            vec![0.5, 1.0, 2.0, -1.0],
            Some(vec![1.0, 0.0, 3.0, 2.0]),
        )
        .unwrap();
        let op = CompressedGather {
            weights: Arc::new(w),
        };
        let idx = Tensor::from_i64(vec![2, 2], vec![1, -1, 7, -5]).unwrap();
        let out = op.eval(vec![Arc::new(idx)]).unwrap();
        assert_eq!(out[0].shape(), &[2, 2, 6]);
        let v = out[0].values::<f32>().unwrap();
        let row = |r: usize, s: f32, z: f32| -> Vec<f32> {
            (0..cols)
                .map(|k| (codes[r * cols + k] as f32 - z) * s)
                .collect()
        };
        assert_eq!(&v[..6], row(1, 1.0, 0.0).as_slice());
        assert_eq!(&v[6..12], row(3, -1.0, 2.0).as_slice());
        assert!(v[12..].iter().all(|&x| x == 0.0));
    }

    /// Every way of decoding (identity and two's complement without a table, 16- and
    /// 256-entry tables) in the vector kernels and one value at a time: decoded rows the same
    /// bits, products within f32 rounding of the definition in f64, on every path.
    #[test]
    fn every_decoding_gives_the_definitions_weights_and_products() {
        // Groups of 16 (AVX2 for 4-bit codes), of one 32-code block and of three (AVX-512
        // for one input row, an odd block at the group's end).
        for (rows, cols, group) in [(19, 48, 16), (7, 64, 32), (5, 192, 96)] {
            every_decoding_gives_the_definitions(rows, cols, group);
        }
    }

    fn every_decoding_gives_the_definitions(rows: usize, cols: usize, group: usize) {
        let nf: Vec<f32> = (0..16).map(|c| (c as f32 - 7.5) / 7.5).collect();
        let fp8: Vec<f32> = (0..256).map(|c| ((c as f32) - 128.0) * 0.037).collect();
        let kinds: Vec<(CodeWidth, Vec<f32>, Decode)> = vec![
            (CodeWidth::Four, lut16(), Decode::U4),
            (
                CodeWidth::Four,
                (0..16)
                    .map(|c| f32::from(((c as u8) << 4) as i8 >> 4))
                    .collect(),
                Decode::Lut16,
            ),
            (CodeWidth::Four, nf, Decode::Lut16),
            (
                CodeWidth::Eight,
                (0..256).map(|c| c as f32).collect(),
                Decode::U8,
            ),
            (
                CodeWidth::Eight,
                (0..256).map(|c| f32::from(c as u8 as i8)).collect(),
                Decode::I8,
            ),
            (CodeWidth::Eight, fp8, Decode::Lut256),
        ];
        let groups = rows * cols / group;
        let s: Vec<f32> = (0..groups).map(|g| 0.01 * (g as f32 - 20.0)).collect();
        let z: Vec<f32> = (0..groups).map(|g| (g * 3 % 11) as f32).collect();
        // Zero points off the whole numbers (a graph may compute any): subtracted from the
        // values, not the codes.
        let z_half: Vec<f32> = z.iter().map(|z| z + 0.5).collect();
        for (width, lut, decode) in kinds {
            let codes: Vec<u8> = (0..rows * cols)
                .map(|i| ((i * 37 + i / 5) % width.codes()) as u8)
                .collect();
            let bytes: Buf<u8> = match width {
                CodeWidth::Four => u4(rows, cols, &codes),
                CodeWidth::Eight => codes.clone().into(),
            };
            for zp in [None, Some(z.clone()), Some(z_half.clone())] {
                let w = CompressedWeights::new(
                    bytes.clone(),
                    width,
                    lut.clone(),
                    (rows, cols),
                    group,
                    s.clone(),
                    zp.clone(),
                )
                .unwrap();
                assert_eq!(w.decode, decode);
                let dense: Vec<f32> = codes
                    .iter()
                    .enumerate()
                    .map(|(i, &c)| {
                        let g = (i / cols) * (cols / group) + (i % cols) / group;
                        (lut[c as usize] - zp.as_ref().map_or(0.0, |z| z[g])) * s[g]
                    })
                    .collect();
                let mut fast = vec![0f32; cols];
                let mut portable = vec![0f32; cols];
                for r in 0..rows {
                    w.decode_row(r, &mut fast);
                    w.decode_row_portable(r, &mut portable);
                    crate::testing::assert_same_bits(
                        &fast,
                        &dense[r * cols..][..cols],
                        format!("{decode:?} row {r}"),
                    );
                    crate::testing::assert_same_bits(
                        &portable,
                        &fast,
                        format!("{decode:?} row {r}"),
                    );
                }
                let op = CompressedMatMul {
                    weights: Arc::new(w),
                };
                // Dot products per group (1-4 rows), weighted rows in chunks of 8 (5-64),
                // decoded blocks through the GEMM (65 and more).
                for x_rows in [1, 2, 3, 4, 5, 6, 8, 9, 13, 70] {
                    let x: Vec<f32> = (0..x_rows * cols)
                        .map(|i| ((i % 13) as f32 - 6.0) * 0.25)
                        .collect();
                    let y = op.multiply(&x, x_rows);
                    for (i, &got) in y.iter().enumerate() {
                        let (m, n) = (i / rows, i % rows);
                        let want: f64 = (0..cols)
                            .map(|k| f64::from(x[m * cols + k]) * f64::from(dense[n * cols + k]))
                            .sum();
                        let scale: f64 = (0..cols)
                            .map(|k| {
                                (f64::from(x[m * cols + k]) * f64::from(dense[n * cols + k])).abs()
                            })
                            .sum();
                        assert!(
                            (f64::from(got) - want).abs() <= 1e-6 * (1.0 + scale),
                            "{decode:?}, {x_rows} rows, y[{i}] {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn parts_of_the_wrong_length_are_refused() {
        let made = |bytes: usize, group: usize| {
            CompressedWeights::new(
                vec![0u8; bytes].into(),
                CodeWidth::Four,
                lut16(),
                (2, 4),
                group,
                vec![1.0; 2],
                None,
            )
        };
        assert!(made(3, 4).unwrap_err().contains("3 bytes"));
        assert!(made(4, 3).unwrap_err().contains("groups of 3"));
        assert!(made(4, 4).is_ok());
    }
}
