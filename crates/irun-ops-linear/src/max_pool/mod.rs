//! MaxPool-1, -8 and -14: the largest value of each window. Attributes `strides`, `pads_begin`,
//! `pads_end`, `kernel` (required), `rounding_type` (floor, ceil; v14 also ceil_torch),
//! `auto_pad`; v8/v14 add `dilations`, `index_element_type` (i64 default, or i32) and `axis`
//! (default 0) and a second output: the index of each maximum, its flat position in the
//! unpadded input counted from dim `axis`. Padding acts as -inf; NaN is skipped (reference and
//! CPU agree); ties go to the first in scan order; a window wholly in padding gives the lowest
//! finite value and index 0.

use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{ElementType, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::depthwise::Depthwise;
use crate::fact::Fact;
use crate::kernel::PAR_MIN_ELEMENTS;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Value};
use crate::par;
use crate::pool::{infer_pool, tensor, RowWindows, Windows};
use crate::simd;
use crate::spatial::{list, Spatial};
use crate::util::norm_axis;

#[derive(Clone, Debug)]
pub struct MaxPool {
    pub version: u32,
    pub spatial: Spatial,
    pub kernel: Vec<usize>,
    pub index_type: ElementType,
    pub axis: i64,
}

fn build(a: &AttrReader, version: u32) -> Result<Box<dyn Op>, OpError> {
    let spatial = Spatial::read(a, true, version >= 14, version >= 8)?;
    let kernel = list(a, "kernel", None)?;
    let (index_type, axis) = if version >= 8 {
        let ty = match a.get("index_element_type") {
            None => ElementType::I64,
            Some(_) => a.element_type("index_element_type")?,
        };
        if !matches!(ty, ElementType::I32 | ElementType::I64) {
            return Err(OpError::attribute(
                "index_element_type",
                "index_element_type must be i32 or i64",
            ));
        }
        (ty, a.i64_or("axis", Some(0))?)
    } else {
        (ElementType::I64, 0)
    };
    Ok(Box::new(MaxPool {
        version,
        spatial,
        kernel,
        index_type,
        axis,
    }))
}

pub fn build_v1(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 1)
}
pub fn build_v8(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 8)
}
pub fn build_v14(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    build(a, 14)
}

/// Values a window maximum compares: NaN reports itself so that it is skipped.
trait Ordered: Scalar {
    /// What a window with no tap inside (or only NaN) gives.
    const LOWEST: Self;
    /// The running maximum's start: no tap is greater only if every one is NaN or this value.
    const START: Self;
    fn nan(self) -> bool;
    fn gt(self, o: Self) -> bool;

    /// `dst[i] = src[i * n]` for every `i` of `dst` (`src` holds `dst.len() * n`).
    #[inline(always)]
    fn every_nth(src: &[Self], n: usize, dst: &mut [Self]) {
        for (d, run) in dst.iter_mut().zip(src.chunks_exact(n)) {
            *d = run[0];
        }
    }

    /// `dst[j]` = the maximum of `row[j * sx + kx * dx]` over `kx < kw`, through `windows`
    /// (`dst.len() * sx` values of scratch); `row` holds every value read.
    #[inline(always)]
    fn window_maxima(row: &[Self], window: [usize; 3], windows: &mut [Self], dst: &mut [Self])
    where
        Self: Ord,
    {
        Self::window_maxima_by_passes(row, window, windows, dst);
    }

    /// [`Self::window_maxima`] as a pass over the row for each tap, then every `sx`-th
    /// window kept.
    #[inline(always)]
    fn window_maxima_by_passes(
        row: &[Self],
        [kw, dx, sx]: [usize; 3],
        windows: &mut [Self],
        dst: &mut [Self],
    ) where
        Self: Ord,
    {
        windows.copy_from_slice(&row[..windows.len()]);
        for kx in 1..kw {
            for (m, &t) in windows.iter_mut().zip(&row[kx * dx..]) {
                *m = (*m).max(t);
            }
        }
        Self::every_nth(windows, sx, dst);
    }
}

macro_rules! ordered_float {
    ($($t:ty => $lo:expr),*) => {$(
        impl Ordered for $t {
            const LOWEST: Self = $lo;
            const START: Self = <$t>::NEG_INFINITY;
            fn nan(self) -> bool { self.is_nan() }
            fn gt(self, o: Self) -> bool { self > o }
        }
    )*};
}
ordered_float!(f32 => f32::MIN, f64 => f64::MIN, f16 => f16::MIN, bf16 => bf16::MIN);

macro_rules! ordered_int {
    ($($t:ty),*) => {$(
        impl Ordered for $t {
            const LOWEST: Self = <$t>::MIN;
            const START: Self = <$t>::MIN;
            fn nan(self) -> bool { false }
            fn gt(self, o: Self) -> bool { self > o }
        }
    )*};
}
ordered_int!(i8, i16, i32, i64, u16, u32, u64);

impl Ordered for u8 {
    const LOWEST: Self = u8::MIN;
    const START: Self = u8::MIN;
    fn nan(self) -> bool {
        false
    }
    fn gt(self, o: Self) -> bool {
        self > o
    }

    /// For `n` 2 (a stride-2 pool), each pair read as one little-endian u16 and its low
    /// byte kept: that vectorises (a truncating move), picking bytes one by one does not.
    #[inline(always)]
    fn every_nth(src: &[u8], n: usize, dst: &mut [u8]) {
        if n != 2 {
            for (d, run) in dst.iter_mut().zip(src.chunks_exact(n)) {
                *d = run[0];
            }
            return;
        }
        for (d, pair) in dst.iter_mut().zip(src.chunks_exact(2)) {
            *d = u16::from_le_bytes([pair[0], pair[1]]) as u8;
        }
    }

    /// ResNet's pool (3 wide, stride 2) in one pass: each output's three bytes are a pair
    /// read as one u16 and the next pair's low byte, which vectorises; the general form
    /// made three passes and a fourth to keep every other window.
    #[inline(always)]
    fn window_maxima(row: &[u8], window: [usize; 3], windows: &mut [u8], dst: &mut [u8]) {
        if window != [3, 1, 2] {
            return Self::window_maxima_by_passes(row, window, windows, dst);
        }
        let pairs = row.chunks_exact(2).zip(row[2..].chunks_exact(2));
        for (d, (p, q)) in dst.iter_mut().zip(pairs) {
            let (p, q) = (
                u16::from_le_bytes([p[0], p[1]]),
                u16::from_le_bytes([q[0], q[1]]),
            );
            *d = (p as u8).max((p >> 8) as u8).max(q as u8);
        }
    }
}

/// One output row's buffers in [`MaxPool::run`], reused from row to row of a plane.
struct RowBuffers<T> {
    max: Vec<T>,
    which: Vec<u32>,
    taps: Vec<T>,
    merged: Vec<T>,
    tap_at: Vec<(usize, usize)>,
    /// Plane offsets of the input rows the row's windows cover.
    starts: Vec<usize>,
}

impl<T> Default for RowBuffers<T> {
    fn default() -> Self {
        RowBuffers {
            max: Vec::new(),
            which: Vec::new(),
            taps: Vec::new(),
            merged: Vec::new(),
            tap_at: Vec::new(),
            starts: Vec::new(),
        }
    }
}

/// Whether [`run_values_by_phases`] runs `w`: AVX-512 or AVX2, at most two spatial dims, no empty
/// dim.
fn by_phases(w: &Windows) -> bool {
    crate::depthwise::phases::supported()
        && w.input[0] == 1
        && w.kernel[0] == 1
        && w.out[0] == 1
        && !w.input.contains(&0)
        && !w.kernel.contains(&0)
}

/// The f32 maxima alone, a plane at a time, as the depthwise convolution's phase walk reads
/// its input ([`Depthwise::phase_layout`]): the plane padded with `-inf` into its stride's
/// phases, then for each tile of flat output positions every tap merged in order, a tap
/// winning only when strictly greater (so NaN never wins, and of equal values the first
/// stays), which is what [`MaxPool::run_values`] computes tap by tap over each window's
/// inside taps: a `-inf` padding tap never wins either. An output that no tap moved off
/// `-inf` takes its window's first non-NaN value, else `f32::MIN`, as there. ResNet-18's
/// 64x112x112 pool: 0.62 ms by rows of gathered taps.
fn run_values_by_phases(x: &Tensor, w: &Windows) -> Result<Tensor, OpError> {
    let v = x
        .values::<f32>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
    let g = Depthwise {
        n: 1,
        channels: w.planes,
        input: w.input,
        kernel: w.kernel,
        out: w.out,
        stride: w.stride,
        dil: w.dil,
        pad: w.pad,
    };
    let l = g.phase_layout();
    let [_, ih, iw] = w.input;
    let [_, kh, kw] = w.kernel;
    let [_, oh, ow] = w.out;
    let (plane_in, plane_out) = (ih * iw, oh * ow);
    // The window's inside taps in order, for the outputs no tap moved off -inf.
    let first_non_nan = |xc: &[f32], oy: usize, ox: usize| {
        (0..kh * kw)
            .filter_map(|t| Some(xc[g.coord(1, oy, t / kw)? * iw + g.coord(2, ox, t % kw)?]))
            .find(|v| !v.is_nan())
            .unwrap_or(f32::MIN)
    };
    let grain = (PAR_MIN_ELEMENTS / (plane_out * l.taps.len()).max(1)).max(1) * plane_out;
    let best = par::build(w.planes * plane_out, grain.max(1), &|start, out| {
        let mut buf = vec![f32::NEG_INFINITY; l.buf_len];
        let mut wide = vec![f32::NEG_INFINITY; l.flat];
        for k in 0..out.remaining() / plane_out.max(1) {
            let xc = &v[(start / plane_out + k) * plane_in..][..plane_in];
            simd::widest(
                #[inline(always)]
                || {
                    g.fill_phases(xc, [l.hp, l.wp], &mut buf);
                    crate::depthwise::phases::max_tiles(
                        l.width,
                        &buf,
                        (&l.taps, l.reach),
                        &mut wide,
                    );
                    crate::rows::pack_rows(&mut wide, l.wp, oh, ow);
                    // One pass without an early exit (it vectorises) before the rare
                    // per-output look.
                    let moved = wide[..plane_out]
                        .iter()
                        .fold(true, |all, m| all & (*m > f32::NEG_INFINITY));
                    if !moved {
                        for (o, m) in wide[..plane_out].iter_mut().enumerate() {
                            // Still -inf, or NaN: no tap won.
                            if m.is_nan() || *m == f32::NEG_INFINITY {
                                *m = first_non_nan(xc, o / ow, o % ow);
                            }
                        }
                    }
                },
            );
            out.extend_from_slice(&wide[..plane_out]);
        }
    })?;
    tensor(ElementType::F32, w.shape.clone(), best)
}

/// Whether [`run_int_values_by_rows`] runs `w`: at most two spatial dims, no empty dim.
fn by_rows(w: &Windows) -> bool {
    w.input[0] == 1
        && w.kernel[0] == 1
        && w.out[0] == 1
        && !w.input.contains(&0)
        && !w.out.contains(&0)
}

/// The maxima of integers alone, separably, a plane at a time: for each output row the
/// window's rows merged into one (each column's maximum) and padded with `MIN`, then the
/// maximum of each run of the kernel's columns, then every stride-th of those, each step a
/// pass over consecutive values that vectorises. Integers have no NaN and `MIN` is both the
/// start and what a window without an inside tap gives, so this is [`MaxPool::run_values`]'s
/// result. ResNet-18's 64x112x112 pool on u8 (the levels an int8 convolution writes): 0.88 ms
/// by rows of gathered taps.
fn run_int_values_by_rows<T: Ordered + Ord>(x: &Tensor, w: &Windows) -> Result<Tensor, OpError> {
    let v = x
        .values::<T>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
    let [_, ih, iw] = w.input;
    let [_, kh, kw] = w.kernel;
    let [_, oh, ow] = w.out;
    let [_, sy, sx] = w.stride;
    let [_, dy, dx] = w.dil;
    let [_, pt, pl] = w.pad;
    let (plane_in, plane_out) = (ih * iw, oh * ow);
    // The window maxima at every column up to the last output's stride, and the padded row
    // they read (ceil rounding may reach past the end pad).
    let starts = ow * sx;
    let reach = (starts + (kw - 1) * dx).max(pl + iw);
    let grain = (PAR_MIN_ELEMENTS / (plane_out * kh * kw).max(1)).max(1) * plane_out;
    let best = par::build(w.planes * plane_out, grain.max(1), &|start, out| {
        let mut row = vec![T::START; reach];
        let mut windows = vec![T::START; starts];
        let mut maxima = vec![T::START; ow];
        // One dispatch for the task's planes: ResNet's rows are 112 values, and a dispatch,
        // a copy call and the loops' ends for each was half the pool's time.
        simd::widest(
            #[inline(always)]
            || {
                for k in 0..out.remaining() / plane_out.max(1) {
                    let xc = &v[(start / plane_out + k) * plane_in..][..plane_in];
                    for oy in 0..oh {
                        let columns = &mut row[pl..pl + iw];
                        let mut inside = (0..kh).filter_map(|ky| {
                            let y = (oy * sy + ky * dy).checked_sub(pt)?;
                            (y < ih).then(|| &xc[y * iw..(y + 1) * iw])
                        });
                        match (inside.next(), inside.next(), inside.next()) {
                            // A 3-row window inside the plane (ResNet's), merged in one pass.
                            (Some(a), Some(b), Some(c)) if kh == 3 => {
                                for (((m, &a), &b), &c) in columns.iter_mut().zip(a).zip(b).zip(c) {
                                    *m = a.max(b).max(c);
                                }
                            }
                            // Else the first row copied and the others merged, a pass each.
                            (first, second, third) => {
                                match first {
                                    Some(first) => columns.copy_from_slice(first),
                                    None => columns.fill(T::START),
                                }
                                for rows in second.into_iter().chain(third).chain(inside) {
                                    for (c, &x) in columns.iter_mut().zip(rows) {
                                        *c = (*c).max(x);
                                    }
                                }
                            }
                        }
                        T::window_maxima(&row, [kw, dx, sx], &mut windows, &mut maxima);
                        out.extend_from_slice(&maxima);
                    }
                }
            },
        );
    })?;
    tensor(x.element_type(), w.shape.clone(), best)
}

impl MaxPool {
    /// The maxima alone (MaxPool-1, or a later version whose indices nothing reads): each
    /// row's running maximum is merged tap by tap in the widest vectors, as in [`Self::run`].
    fn run_values<T: Ordered>(&self, x: &Tensor, w: &Windows) -> Result<Tensor, OpError> {
        let v = x
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let kw = w.kernel[2];
        let best: Vec<T> =
            w.map_rows(v, &|plane: &[T],
                            row: &RowWindows,
                            dst: &mut [T],
                            rows: &mut RowBuffers<T>| {
                let n = dst.len();
                let RowBuffers {
                    max,
                    taps,
                    merged,
                    starts,
                    ..
                } = rows;
                for buf in [&mut *max, &mut *taps, &mut *merged] {
                    buf.clear();
                    buf.resize(n, T::START);
                }
                row.input_rows_into(starts);
                simd::widest(
                    #[inline(always)]
                    || {
                        for &r in starts.iter() {
                            let xr = &plane[r..r + row.input_width()];
                            for kx in 0..kw {
                                row.gather(xr, kx, T::START, taps);
                                // Into a third buffer, then swap: a select that stores back into
                                // one of its operands becomes a masked store, half the speed.
                                for ((o, &m), &t) in
                                    merged.iter_mut().zip(max.iter()).zip(taps.iter())
                                {
                                    *o = if t.gt(m) { t } else { m };
                                }
                                std::mem::swap(max, merged);
                            }
                        }
                    },
                );
                for (ox, d) in dst.iter_mut().enumerate() {
                    // A tap won iff the maximum moved off START (NaN never does).
                    *d = if max[ox].gt(T::START) {
                        max[ox]
                    } else {
                        let first = row.first_non_nan(plane, ox, T::nan);
                        first.map_or(T::LOWEST, |(v, _)| v)
                    };
                }
            })?;
        tensor(x.element_type(), w.shape.clone(), best)
    }

    /// The maxima and where each was found (MaxPool-8/14).
    fn run<T: Ordered>(&self, x: &Tensor, w: &Windows) -> Result<(Tensor, Vec<i64>), OpError> {
        let v = x
            .values::<T>()
            .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected type"))?;
        let kw = w.kernel[2];
        let plane_in: usize = w.input.iter().product();
        let shape = x.shape();
        let axis = norm_axis(self.axis, shape.len(), None, self.name())?;
        let modulus: usize = shape[axis..].iter().product::<usize>().max(1);
        // Each maximum's index in the input counted from dim `axis`: its plane's flat offset,
        // reduced once per row so the taps need no division (with axis 0, the default,
        // nothing wraps at all), plus its offset in the plane; 0 for a window of no tap.
        let base_of = |plane: usize| (plane * plane_in) % modulus;
        let index = |base: usize, t: usize| -> i64 {
            match t {
                usize::MAX => 0,
                t if base + plane_in > modulus => ((base + t) % modulus) as i64,
                t => (base + t) as i64,
            }
        };
        let best: Vec<(T, i64)> =
            w.map_rows(v, &|plane: &[T],
                            row: &RowWindows,
                            dst,
                            rows: &mut RowBuffers<T>| {
                // Per tap in scan order, the tap's value for every output of the row (START where
                // it lies in padding) is gathered into `taps` and merged into the running maximum
                // with a branch-free select that vectorises. Strictly greater wins, so the first
                // largest tap is kept and NaN (never greater) is skipped.
                let n = dst.len();
                let RowBuffers {
                    max,
                    which,
                    taps,
                    tap_at,
                    starts,
                    ..
                } = rows;
                for (buf, fill) in [(&mut *max, T::START), (&mut *taps, T::START)] {
                    buf.clear();
                    buf.resize(n, fill);
                }
                which.clear();
                which.resize(n, u32::MAX);
                // Tap number -> (input row offset, kx).
                tap_at.clear();
                row.input_rows_into(starts);
                simd::widest(
                    #[inline(always)]
                    || {
                        for &r in starts.iter() {
                            let xr = &plane[r..r + row.input_width()];
                            for kx in 0..kw {
                                row.gather(xr, kx, T::START, taps);
                                let k = tap_at.len() as u32;
                                tap_at.push((r, kx));
                                // The merged maximum goes into `taps` and the buffers swap; the
                                // old values of each block are read from copies. A select that
                                // stored back where it read (into `max`, or `taps` and `which`
                                // in place) became a conditional store, scalar (20x slower on
                                // random data) or masked (`vmaskmovps`, microcoded on AMD).
                                const BLOCK: usize = 64;
                                let blocks = max
                                    .chunks(BLOCK)
                                    .zip(which.chunks_mut(BLOCK))
                                    .zip(taps.chunks_mut(BLOCK));
                                for ((max, which), taps) in blocks {
                                    let n = max.len();
                                    let mut seen = [T::START; BLOCK];
                                    let mut best = [0u32; BLOCK];
                                    seen[..n].copy_from_slice(taps);
                                    best[..n].copy_from_slice(which);
                                    let old = seen.iter().zip(&best);
                                    let new = taps.iter_mut().zip(which.iter_mut());
                                    for (((&t, &b), &m), (t_out, i_out)) in old.zip(max).zip(new) {
                                        let greater = t.gt(m);
                                        *i_out = if greater { k } else { b };
                                        *t_out = if greater { t } else { m };
                                    }
                                }
                                std::mem::swap(max, taps);
                            }
                        }
                    },
                );
                let base = base_of(row.plane);
                for (ox, d) in dst.iter_mut().enumerate() {
                    let (value, at) = match tap_at.get(which[ox] as usize) {
                        Some(&(r, kx)) => (max[ox], r + row.column(ox, kx)),
                        None => row
                            .first_non_nan(plane, ox, T::nan)
                            .unwrap_or((T::LOWEST, usize::MAX)),
                    };
                    *d = (value, index(base, at));
                }
            })?;
        let found = crate::par::map(&best, |(_, i)| i);
        let values = tensor(
            x.element_type(),
            w.shape.clone(),
            crate::par::map(&best, |(v, _)| v),
        )?;
        Ok((values, found))
    }
}

impl Op for MaxPool {
    fn name(&self) -> &'static str {
        match self.version {
            1 => "MaxPool-1",
            8 => "MaxPool-8",
            _ => "MaxPool-14",
        }
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 1, self.name())?;
        let shape = infer_pool(self.name(), &self.spatial, &self.kernel, &inputs[0])?;
        if let Some(r) = inputs[0].rank() {
            norm_axis(self.axis, r, None, self.name())?;
        }
        let mut out = vec![Fact::new(inputs[0].ty, shape.clone())];
        if self.version >= 8 {
            out.push(Fact::new(self.index_type, shape));
        }
        Ok(out)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.eval_reading(inputs, &[true, true])
    }

    /// Without the indices when nothing reads them: finding them took more than half of
    /// ResNet-18's max pool, whose indices output (MaxPool-14) is never used.
    fn eval_reading(&self, inputs: Vec<Value>, read: &[bool]) -> Result<Vec<Value>, OpError> {
        let [x] = take_inputs::<1>(inputs, self.name())?;
        let w = Windows::new(x.shape(), &self.kernel, &self.spatial, self.name())?;
        let unsupported =
            |ty| OpError::new(codes::UNSUPPORTED_TYPE, format!("{} on {ty}", self.name()));
        if self.version < 8 || read.get(1) == Some(&false) {
            let values = match x.element_type() {
                ElementType::F32 if by_phases(&w) => run_values_by_phases(&x, &w),
                ElementType::F32 => self.run_values::<f32>(&x, &w),
                ElementType::F64 => self.run_values::<f64>(&x, &w),
                ElementType::F16 => self.run_values::<f16>(&x, &w),
                ElementType::Bf16 => self.run_values::<bf16>(&x, &w),
                ty if by_rows(&w) => {
                    irun_tensor::with_int!(ty, T => run_int_values_by_rows::<T>(&x, &w),
                    else Err(unsupported(ty)))
                }
                ty => irun_tensor::with_int!(ty, T => self.run_values::<T>(&x, &w),
                    else Err(unsupported(ty))),
            }?;
            let mut out = vec![Arc::new(values)];
            if self.version >= 8 {
                let none = match self.index_type {
                    ElementType::I32 => tensor(ElementType::I32, vec![0], Vec::<i32>::new()),
                    ty => tensor(ty, vec![0], Vec::<i64>::new()),
                };
                out.push(Arc::new(none?));
            }
            return Ok(out);
        }
        let (values, idx) = match x.element_type() {
            ElementType::F32 => self.run::<f32>(&x, &w),
            ElementType::F64 => self.run::<f64>(&x, &w),
            ElementType::F16 => self.run::<f16>(&x, &w),
            ElementType::Bf16 => self.run::<bf16>(&x, &w),
            ty => irun_tensor::with_int!(ty, T => self.run::<T>(&x, &w), else Err(unsupported(ty))),
        }?;
        let idx = if self.index_type == ElementType::I32 {
            tensor(
                ElementType::I32,
                w.shape.clone(),
                idx.iter().map(|&i| i as i32).collect(),
            )?
        } else {
            tensor(ElementType::I64, w.shape.clone(), idx)?
        };
        Ok(vec![Arc::new(values), Arc::new(idx)])
    }
}

#[cfg(test)]
mod tests;
