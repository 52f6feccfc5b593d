//! ConvolutionBackpropData-1 and GroupConvolutionBackpropData-1 (transposed convolution):
//! every input element scatters `x[n, ci, i] * w[ci, co, k]` to output position
//! `i * s + k * d - pads_begin` of channel `co`, where that lies in the output.
//!
//! - Inputs data `[N, Cin, *X]` (1 to 3 spatial dims), filters `[Cin, Cout, *K]` (grouped:
//!   `[G, Cin / G, Cout / G, *K]`, group g reading input channels `g * Cin / G ..` and writing
//!   output channels `g * Cout / G ..`), optional `output_shape` (the spatial dims).
//! - Without `output_shape`: `O = s (X - 1) + d (K - 1) + 1 - pb - pe + output_padding`, the
//!   pads taken as 0 unless `auto_pad` is `explicit`.
//! - With it: `O = output_shape`; `same_upper` / `same_lower` split
//!   `max(0, s (X - 1) + d (K - 1) + 1 - O + output_padding)` into the pads (the odd cell at
//!   the start for `same_upper`), `explicit` keeps `pads_begin`, `valid` uses 0.
//!
//! Per image and group: one GEMM `cols [Cout*K, X] = w^T x`, then each output channel adds
//! its columns into its own plane (col2im), so results do not depend on the thread count;
//! 2-D f32 ones the same by blocks of output rows (`backprop_rows.rs`). f16/bf16 run in f32
//! and round once.

use std::sync::Arc;

use irun_tensor::{Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::backprop_rows::PackedFilters;
use crate::conv::{narrow, widen};
use crate::fact::Fact;
use crate::gemm::Mul;
use crate::op::{codes, expect_inputs_between, Op, OpError, Prepared, Value};
use crate::spatial::{list, AutoPad};
use crate::util::{ints, known_ints};
use irun_opkit::epilogue::{Channels, Epilogue};

#[derive(Debug, Clone)]
pub struct ConvBackprop {
    pub grouped: bool,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    pub pads_begin: Vec<usize>,
    pub pads_end: Vec<usize>,
    pub output_padding: Vec<usize>,
    pub auto_pad: AutoPad,
}

fn read(a: &AttrReader, grouped: bool) -> Result<Box<dyn Op>, OpError> {
    let auto_pad = AutoPad::read(a)?;
    let strides = list(a, "strides", None)?;
    let n = strides.len();
    let op = ConvBackprop {
        grouped,
        dilations: list(a, "dilations", Some(vec![1; n]))?,
        pads_begin: list(a, "pads_begin", Some(vec![0; n]))?,
        pads_end: list(a, "pads_end", Some(vec![0; n]))?,
        output_padding: list(a, "output_padding", Some(vec![0; n]))?,
        strides,
        auto_pad,
    };
    if op.strides.contains(&0) || op.dilations.contains(&0) {
        return Err(OpError::attribute(
            "strides",
            "strides and dilations must be positive",
        ));
    }
    let lens = [
        op.dilations.len(),
        op.pads_begin.len(),
        op.pads_end.len(),
        op.output_padding.len(),
    ];
    if lens.iter().any(|&l| l != n) {
        return Err(OpError::attribute(
            "pads_begin",
            "strides, dilations, pads and output_padding must have one value per spatial dim",
        ));
    }
    Ok(Box::new(op))
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, false)
}

pub fn build_grouped(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    read(a, true)
}

/// The geometry of one run.
pub(crate) struct Geometry {
    pub(crate) groups: usize,
    pub(crate) cin: usize,
    pub(crate) cout: usize,
    pub(crate) x: Vec<usize>,
    pub(crate) k: Vec<usize>,
    pub(crate) out: Vec<usize>,
    pub(crate) pads_begin: Vec<usize>,
}

impl Geometry {
    /// The output's channels and planes, for an epilogue.
    pub(crate) fn planes(&self) -> Channels {
        Channels::Planes {
            channels: self.groups * self.cout,
            plane: self.out.iter().product(),
        }
    }
}

impl ConvBackprop {
    fn name_str(&self) -> &'static str {
        if self.grouped {
            "GroupConvolutionBackpropData-1"
        } else {
            "ConvolutionBackpropData-1"
        }
    }

    fn bad(&self, slot: usize, code: &'static str, m: String) -> OpError {
        OpError::input(slot, code, format!("{}: {m}", self.name_str()))
    }

    /// `s (X - 1) + d (K - 1) + 1` of spatial dim `i`: the extent before pads.
    fn full(&self, i: usize, x: u64, k: u64) -> Option<u64> {
        let s = self.strides[i] as u64;
        let d = self.dilations[i] as u64;
        s.checked_mul(x.checked_sub(1)?)?
            .checked_add(d.checked_mul(k.checked_sub(1)?)?)?
            .checked_add(1)
    }

    /// The output dim `i` without `output_shape`.
    fn out_dim(&self, i: usize, x: u64, k: u64) -> Result<u64, OpError> {
        let (pb, pe) = match self.auto_pad {
            AutoPad::Explicit => (self.pads_begin[i] as u64, self.pads_end[i] as u64),
            _ => (0, 0),
        };
        self.full(i, x, k)
            .and_then(|f| f.checked_add(self.output_padding[i] as u64))
            .and_then(|f| f.checked_sub(pb + pe))
            .ok_or_else(|| {
                self.bad(
                    0,
                    codes::SHAPE,
                    format!("spatial dim {i} of {x} with kernel {k} leaves no output"),
                )
            })
    }

    /// The begin pad of dim `i` when the output is `o`.
    fn pad_for(&self, i: usize, x: u64, k: u64, o: u64) -> u64 {
        match self.auto_pad {
            AutoPad::Explicit => self.pads_begin[i] as u64,
            AutoPad::Valid => 0,
            AutoPad::SameUpper | AutoPad::SameLower => {
                let full = self.full(i, x, k).unwrap_or(0) + self.output_padding[i] as u64;
                let total = full.saturating_sub(o);
                if self.auto_pad == AutoPad::SameLower {
                    total / 2
                } else {
                    total - total / 2
                }
            }
        }
    }

    /// Channels in and out and the groups, from the data and filter shapes.
    fn channels(&self, data: &[Dim], filters: &[Dim]) -> Result<(Dim, Dim), OpError> {
        let spatial = data.len() - 2;
        let want = spatial + 2 + self.grouped as usize;
        if filters.len() != want {
            return Err(self.bad(
                1,
                codes::RANK,
                format!(
                    "filters of rank {} for data of rank {}",
                    filters.len(),
                    data.len()
                ),
            ));
        }
        let (g, cin_g, cout_g) = if self.grouped {
            (filters[0], filters[1], filters[2])
        } else {
            (Dim::fixed(1), filters[0], filters[1])
        };
        if let (Some(g), Some(c), Some(data_c)) =
            (g.get_static(), cin_g.get_static(), data[1].get_static())
        {
            if g * c != data_c {
                return Err(self.bad(
                    1,
                    codes::SHAPE,
                    format!(
                        "filters for {} input channels, the data has {data_c}",
                        g * c
                    ),
                ));
            }
        }
        let cout = match (g.get_static(), cout_g.get_static()) {
            (Some(g), Some(c)) => Dim::fixed(g * c),
            _ => Dim::DYNAMIC,
        };
        Ok((data[0], cout))
    }

    pub(crate) fn geometry(
        &self,
        data: &[usize],
        filters: &[usize],
        output_shape: Option<&[i64]>,
    ) -> Result<Geometry, OpError> {
        if data.len() < 3 || data.len() > 5 || data.len() - 2 != self.strides.len() {
            return Err(self.bad(
                0,
                codes::RANK,
                format!("data {data:?} for {} spatial dims", self.strides.len()),
            ));
        }
        let dims: Vec<Dim> = data.iter().map(|&d| Dim::fixed(d as u64)).collect();
        let fdims: Vec<Dim> = filters.iter().map(|&d| Dim::fixed(d as u64)).collect();
        self.channels(&dims, &fdims)?;
        let (groups, cin, cout, k) = if self.grouped {
            (filters[0], filters[1], filters[2], filters[3..].to_vec())
        } else {
            (1, filters[0], filters[1], filters[2..].to_vec())
        };
        let x = data[2..].to_vec();
        let mut out = Vec::with_capacity(x.len());
        let mut pads_begin = Vec::with_capacity(x.len());
        for i in 0..x.len() {
            let o = match output_shape {
                Some(s) => u64::try_from(s[i])
                    .map_err(|_| self.bad(2, codes::BAD_VALUE, format!("output_shape {s:?}")))?,
                None => self.out_dim(i, x[i] as u64, k[i] as u64)?,
            };
            pads_begin.push(self.pad_for(i, x[i] as u64, k[i] as u64, o) as usize);
            out.push(o as usize);
        }
        Ok(Geometry {
            groups,
            cin,
            cout,
            x,
            k,
            out,
            pads_begin,
        })
    }

    /// The f32 kernel: by blocks of output rows in 2-D (`backprop_rows.rs`), else
    /// [`Self::run_typed`].
    fn run_f32(
        &self,
        g: &Geometry,
        x: &Tensor,
        w: &Tensor,
        packed: Option<&PackedFilters>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Vec<f32>, OpError> {
        let (x, w) = (vals(x)?, vals(w)?);
        if self.runs_by_rows(g) {
            return self.run_by_rows(g, x, w, packed, epilogue, None);
        }
        let mut y = self.run_typed(g, x, w);
        if let Some(e) = epilogue {
            e.apply(&mut y, g.planes());
        }
        Ok(y)
    }

    /// Per image and group: `cols = w^T x`, added into the output planes.
    fn run_typed<T: Mul + Copy + Default + std::ops::Add<Output = T>>(
        &self,
        g: &Geometry,
        x: &[T],
        w: &[T],
    ) -> Vec<T> {
        let xs: usize = g.x.iter().product();
        let ks: usize = g.k.iter().product();
        let os: usize = g.out.iter().product();
        let n = x.len() / (g.groups * g.cin * xs).max(1);
        let mut out = vec![T::default(); n * g.groups * g.cout * os];
        if xs == 0 || ks == 0 || os == 0 || g.cin == 0 {
            return out;
        }
        // Where input position i and kernel position k land, per spatial dim.
        let land: Vec<Vec<Option<usize>>> = (0..g.x.len())
            .map(|d| {
                let mut t = Vec::with_capacity(g.x[d] * g.k[d]);
                for i in 0..g.x[d] {
                    for k in 0..g.k[d] {
                        let o = (i * self.strides[d] + k * self.dilations[d]) as i64
                            - g.pads_begin[d] as i64;
                        t.push((0..g.out[d] as i64).contains(&o).then_some(o as usize));
                    }
                }
                t
            })
            .collect();
        let rows = g.cout * ks;
        let mut cols = vec![T::default(); rows * xs];
        for b in 0..n {
            for grp in 0..g.groups {
                let xg = &x[(b * g.groups + grp) * g.cin * xs..][..g.cin * xs];
                let wg = &w[grp * g.cin * rows..][..g.cin * rows];
                T::gemm(
                    rows,
                    g.cin,
                    xs,
                    wg,
                    (1, rows as isize),
                    xg,
                    (xs as isize, 1),
                    &mut cols,
                );
                let dst = &mut out[(b * g.groups + grp) * g.cout * os..][..g.cout * os];
                let cols = &cols;
                crate::par::for_each_chunk_mut(dst, os, &|at, plane| {
                    let co = at / os;
                    self.col2im(g, &land, &cols[co * ks * xs..][..ks * xs], plane);
                });
            }
        }
        out
    }

    /// Adds one output channel's columns `[K, X]` into its plane: for each kernel position
    /// and each input row (every dim but the last), the row's landing place is found once
    /// and its values are added along the last dim at the stride, over the inputs that land
    /// inside the output.
    fn col2im<T: Copy + std::ops::Add<Output = T>>(
        &self,
        g: &Geometry,
        land: &[Vec<Option<usize>>],
        cols: &[T],
        plane: &mut [T],
    ) {
        let rank = g.x.len();
        let last = rank - 1;
        let (x_last, k_last, o_last) = (g.x[last], g.k[last], g.out[last]);
        let xs: usize = g.x.iter().product();
        let rows = xs / x_last.max(1);
        let mut kc = vec![0usize; rank];
        for kf in 0..cols.len() / xs.max(1) {
            // The inputs of the last dim that land inside, and where the first one lands.
            let kl = kc[last];
            let inside: Vec<usize> = (0..x_last)
                .filter(|&i| land[last][i * k_last + kl].is_some())
                .collect();
            if let (Some(&i0), Some(&i1)) = (inside.first(), inside.last()) {
                let o0 = land[last][i0 * k_last + kl].unwrap_or(0);
                let s = self.strides[last];
                let mut ic = vec![0usize; last];
                for r in 0..rows {
                    let mut base = Some(0usize);
                    for d in 0..last {
                        base = base.and_then(|b| {
                            land[d][ic[d] * g.k[d] + kc[d]].map(|o| b * g.out[d] + o)
                        });
                    }
                    if let Some(b) = base {
                        let src = &cols[kf * xs + r * x_last..][i0..=i1];
                        let dst = &mut plane[b * o_last + o0..];
                        for (j, &v) in src.iter().enumerate() {
                            dst[j * s] = dst[j * s] + v;
                        }
                    }
                    step(&mut ic, &g.x[..last]);
                }
            }
            step(&mut kc, &g.k);
        }
    }
}

/// The next row-major coordinate of `c` within `dims`.
fn step(c: &mut [usize], dims: &[usize]) {
    for d in (0..c.len()).rev() {
        c[d] += 1;
        if c[d] < dims[d] {
            return;
        }
        c[d] = 0;
    }
}

impl Op for ConvBackprop {
    fn name(&self) -> &'static str {
        self.name_str()
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[2]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 2, 3, self.name())?;
        let ty = crate::op::same_element_type(inputs, &[0, 1], self.name())?;
        let (Some(data), Some(filters)) = (inputs[0].shape.dims(), inputs[1].shape.dims()) else {
            return Ok(vec![Fact::new(ty, PartialShape::dynamic_rank())]);
        };
        if data.len() < 3 || data.len() > 5 || data.len() - 2 != self.strides.len() {
            return Err(self.bad(
                0,
                codes::RANK,
                format!(
                    "data {} for {} spatial dims (rank 3 to 5)",
                    inputs[0].shape,
                    self.strides.len()
                ),
            ));
        }
        let (n, cout) = self.channels(data, filters)?;
        let k0 = 2 + self.grouped as usize;
        let mut out = vec![n, cout];
        match inputs.get(2) {
            Some(f) => match known_ints(f) {
                Some(s) if s.len() == data.len() - 2 => {
                    out.extend(s.iter().map(|&v| Dim::fixed(v.max(0) as u64)))
                }
                Some(s) => {
                    return Err(self.bad(
                        2,
                        codes::SHAPE,
                        format!("output_shape {s:?} for {} spatial dims", data.len() - 2),
                    ))
                }
                None => out.extend(std::iter::repeat_n(Dim::DYNAMIC, data.len() - 2)),
            },
            None => {
                for i in 0..data.len() - 2 {
                    out.push(
                        match (data[2 + i].get_static(), filters[k0 + i].get_static()) {
                            (Some(x), Some(k)) => Dim::fixed(self.out_dim(i, x, k)?),
                            _ => Dim::DYNAMIC,
                        },
                    );
                }
            }
        }
        Ok(vec![Fact::new(ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.eval_with(inputs, None, None)
    }

    fn prepare(&self, _: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        self.prepared(constants)
    }
}

impl ConvBackprop {
    /// [`Op::eval`], with the filters already packed when `packed` is given (they are the
    /// filters of `inputs`) and `epilogue` applied to the output (f32 only: a kernel is
    /// offered one only for f32 ops).
    pub(crate) fn eval_with(
        &self,
        inputs: Vec<Value>,
        packed: Option<&PackedFilters>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Vec<Value>, OpError> {
        let output_shape = inputs.get(2).map(|t| ints(t, 2)).transpose()?;
        let (x, w) = (&inputs[0], &inputs[1]);
        if let Some(s) = &output_shape {
            if s.len() + 2 != x.shape().len() {
                return Err(self.bad(
                    2,
                    codes::RUN_SHAPE,
                    format!("output_shape {s:?} for data {:?}", x.shape()),
                ));
            }
        }
        let g = self.geometry(x.shape(), w.shape(), output_shape.as_deref())?;
        let mut shape = vec![x.shape()[0], g.groups * g.cout];
        shape.extend_from_slice(&g.out);
        let ty = x.element_type();
        let out = match ty {
            ElementType::F32 => {
                // Small ones alone, as convolutions.
                let dims = [x.shape()[0], g.groups, g.cin, g.cout]
                    .into_iter()
                    .chain(g.x.iter().copied())
                    .chain(g.k.iter().copied());
                let y =
                    crate::conv::alone_if_small(dims, || self.run_f32(&g, x, w, packed, epilogue));
                Tensor::new(ty, shape, f32::wrap(y?))
            }
            ElementType::F64 => {
                Tensor::new(ty, shape, f64::wrap(self.run_typed(&g, vals(x)?, vals(w)?)))
            }
            ElementType::F16 | ElementType::Bf16 => {
                let (xw, ww) = (widen(x)?, widen(w)?);
                let y = Tensor::from_f32(shape, self.run_f32(&g, &xw, &ww, None, None)?)
                    .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
                return Ok(vec![Arc::new(narrow(&y, ty)?)]);
            }
            _ => {
                return Err(self.bad(
                    0,
                    codes::UNSUPPORTED_TYPE,
                    format!("on {ty} (floating-point types only)"),
                ))
            }
        };
        Ok(vec![Arc::new(out.map_err(|e| {
            OpError::new(codes::RUN_SHAPE, e.to_string())
        })?)])
    }
}

pub(crate) fn vals<T: Scalar>(t: &Tensor) -> Result<&[T], OpError> {
    t.values::<T>()
        .ok_or_else(|| OpError::new(codes::ELEMENT_TYPE, "data and filters of one type"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::eval1;
    use crate::testing::prelude::*;

    pub(crate) fn op(
        grouped: bool,
        s: usize,
        pads: usize,
        out_pad: usize,
        auto_pad: AutoPad,
    ) -> ConvBackprop {
        ConvBackprop {
            grouped,
            strides: vec![s, s],
            dilations: vec![1, 1],
            pads_begin: vec![pads, pads],
            pads_end: vec![pads, pads],
            output_padding: vec![out_pad, out_pad],
            auto_pad,
        }
    }

    /// The 2-D f32 kernel by blocks of output rows (`backprop_rows.rs`) against the
    /// definition in f64 and, bit for bit, against the whole-image GEMM and col2im
    /// (`run_typed`), in blocks of 1, 3 or the chosen rows, at 1-3 threads: kernels taller
    /// than the stride (halo rows), as tall (one row each), shorter (rows left 0), padding,
    /// dilation, output padding, groups and batches, odd widths, and taps whose pairs
    /// straddle either edge of a row.
    #[test]
    fn output_rows_in_blocks_match_the_whole_image() {
        #[rustfmt::skip]
        let cases = [
            // n, groups, cin, cout, [xh, xw], [kh, kw], stride, dilation, pad, output pad
            (1, 1, 6, 5, [7, 9], [2, 2], [2, 2], [1, 1], [0, 0], [0, 0]),
            (2, 1, 5, 3, [6, 5], [4, 4], [2, 2], [1, 1], [1, 1], [0, 0]),
            (1, 2, 4, 3, [5, 7], [3, 3], [1, 1], [1, 1], [1, 1], [0, 0]),
            (1, 1, 3, 2, [4, 6], [3, 3], [2, 2], [2, 2], [2, 1], [1, 1]),
            (1, 1, 2, 4, [5, 5], [1, 1], [3, 3], [1, 1], [0, 0], [2, 2]),
            (2, 2, 6, 2, [3, 8], [5, 3], [2, 2], [1, 1], [3, 2], [1, 0]),
            (1, 1, 300, 2, [3, 4], [2, 3], [2, 2], [1, 1], [0, 1], [0, 0]),
        ];
        for (i, &(n, groups, cin, cout, x2, k2, st, dil, pad, opad)) in cases.iter().enumerate() {
            let c = ConvBackprop {
                grouped: true,
                strides: st.to_vec(),
                dilations: dil.to_vec(),
                pads_begin: pad.to_vec(),
                pads_end: pad.to_vec(),
                output_padding: opad.to_vec(),
                auto_pad: AutoPad::Explicit,
            };
            let value =
                |j: usize, seed: usize| ((j * 7919 + seed * 104_729) % 2003) as f32 / 1001.0 - 1.0;
            let x: Vec<f32> = (0..n * groups * cin * x2[0] * x2[1])
                .map(|j| value(j, i))
                .collect();
            let w: Vec<f32> = (0..groups * cin * cout * k2[0] * k2[1])
                .map(|j| value(j, i + 9))
                .collect();
            let g = c
                .geometry(
                    &[n, groups * cin, x2[0], x2[1]],
                    &[groups, cin, cout, k2[0], k2[1]],
                    None,
                )
                .unwrap();
            assert!(c.runs_by_rows(&g));
            let [oh, ow] = [g.out[0], g.out[1]];
            // The definition: each input value times each tap, added where it lands.
            let mut want = vec![0f64; n * groups * cout * oh * ow];
            for (xi, &xv) in x.iter().enumerate() {
                let (xx, xy, ch, b) = (
                    xi % x2[1],
                    (xi / x2[1]) % x2[0],
                    (xi / x2[0] / x2[1]) % (groups * cin),
                    xi / x2[0] / x2[1] / (groups * cin),
                );
                let (grp, ci) = (ch / cin, ch % cin);
                for co in 0..cout {
                    for ky in 0..k2[0] {
                        for kx in 0..k2[1] {
                            let oy = (xy * st[0] + ky * dil[0]) as i64 - pad[0] as i64;
                            let ox = (xx * st[1] + kx * dil[1]) as i64 - pad[1] as i64;
                            if (0..oh as i64).contains(&oy) && (0..ow as i64).contains(&ox) {
                                let wv =
                                    w[(((grp * cin + ci) * cout + co) * k2[0] + ky) * k2[1] + kx];
                                let o = (((b * groups + grp) * cout + co) * oh + oy as usize) * ow
                                    + ox as usize;
                                want[o] += f64::from(xv) * f64::from(wv);
                            }
                        }
                    }
                }
            }
            let whole = c.run_typed(&g, &x, &w);
            let packed = c
                .pack_filters(&[groups, cin, cout, k2[0], k2[1]], &w)
                .unwrap();
            for (block, prepacked) in [
                (Some(1), false),
                (Some(3), true),
                (None, false),
                (None, true),
            ] {
                for threads in 1..=3 {
                    let packed = prepacked.then_some(&packed);
                    let got = crate::testing::on_threads(threads, || {
                        c.run_by_rows(&g, &x, &w, packed, None, block)
                    })
                    .unwrap();
                    let at = format!(
                        "case {i}, blocks of {block:?} rows, {threads} threads, packed at \
                         prepare: {prepacked}"
                    );
                    assert_eq!(got.len(), want.len(), "{at}");
                    for (j, (&a, &b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (f64::from(a) - b).abs() <= 1e-5 * (1.0 + b.abs()),
                            "{at}, output {j}: {a} vs {b}"
                        );
                    }
                    crate::testing::assert_same_bits(&got, &whole, at);
                }
            }
        }
    }

    /// ONNX's ConvTranspose example: x 3x3 of 0..9, two 3x3 filters of ones, stride 1: each
    /// output is the sum of the inputs its window covers.
    #[test]
    fn onnx_conv_transpose() {
        let x = f32s(&[1, 1, 3, 3], &(0..9).map(|v| v as f32).collect::<Vec<_>>());
        let w = f32s(&[1, 2, 3, 3], &[1.0; 18]);
        let y = eval1(&op(false, 1, 0, 0, AutoPad::Explicit), vec![x, w]).unwrap();
        #[rustfmt::skip]
        let plane = [
            0., 1., 3., 3., 2.,
            3., 8., 15., 12., 7.,
            9., 21., 36., 27., 15.,
            9., 20., 33., 24., 13.,
            6., 13., 21., 15., 8.,
        ];
        let want: Vec<f32> = plane.iter().chain(&plane).copied().collect();
        assert_eq!(y, f32s(&[1, 2, 5, 5], &want));
    }

    /// Stride 2 with pads 1 and output padding 1 against the definition, 1-D, with groups.
    #[test]
    fn strided_grouped_against_the_definition() {
        let (cin, cout_g, g, xl, k, s) = (4, 3, 2, 5, 3, 2);
        let x: Vec<f32> = (0..cin * xl).map(|v| (v as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..cin * cout_g * k)
            .map(|v| (v as f32 * 0.11).cos())
            .collect();
        let c = ConvBackprop {
            grouped: true,
            strides: vec![s],
            dilations: vec![1],
            pads_begin: vec![1],
            pads_end: vec![1],
            output_padding: vec![1],
            auto_pad: AutoPad::Explicit,
        };
        let y = eval1(
            &c,
            vec![f32s(&[1, cin, xl], &x), f32s(&[g, cin / g, cout_g, k], &w)],
        )
        .unwrap();
        let ol = s * (xl - 1) + k - 2 + 1;
        assert_eq!(y.shape(), &[1, g * cout_g, ol]);
        let mut want = vec![0f32; g * cout_g * ol];
        for grp in 0..g {
            for ci in 0..cin / g {
                for co in 0..cout_g {
                    for i in 0..xl {
                        for kk in 0..k {
                            let o = (i * s + kk) as i64 - 1;
                            if (0..ol as i64).contains(&o) {
                                want[(grp * cout_g + co) * ol + o as usize] += x
                                    [(grp * cin / g + ci) * xl + i]
                                    * w[((grp * cin / g + ci) * cout_g + co) * k + kk];
                            }
                        }
                    }
                }
            }
        }
        let got = y.values::<f32>().unwrap();
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{got:?} != {want:?}");
        }
    }

    #[test]
    fn shapes() {
        let c = op(false, 2, 1, 1, AutoPad::Explicit);
        let f = c
            .infer(&[fact(F32, "1,4,5,6"), fact(F32, "4,3,3,3")])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[1,3,10,12]");
        let c = op(false, 2, 0, 0, AutoPad::SameUpper);
        let f = c
            .infer(&[
                fact(F32, "1,4,5,6"),
                fact(F32, "4,3,3,3"),
                i64_value(&[10, 12]),
            ])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[1,3,10,12]");
        let e = c
            .infer(&[fact(F32, "1,4,5,6"), fact(F32, "5,3,3,3")])
            .unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let g = op(true, 1, 0, 0, AutoPad::Explicit);
        let f = g
            .infer(&[fact(F32, "1,4,5,6"), fact(F32, "2,2,3,3,3")])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[1,6,7,8]");
    }
}
