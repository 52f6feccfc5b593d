//! The 2-D f32 transposed convolution by blocks of output rows: each task owns a block of
//! output rows of every output channel of one (image, group), multiplies the filters
//! `w^T [cout * kh * kw, cin]` by the input rows that reach its block (a few rows of halo
//! where the kernel is taller than the stride) and adds the product's columns into its rows.
//!
//! Why: the whole-image form wrote the product `[cout * taps, positions]` out (13 MB for
//! the segmenter's 64 -> 32, 2x2 stride-2 layer onto 320x320), read it back channel by
//! channel, and zeroed and added into the whole output: 14.8 ms against OpenVINO's 4.5. A
//! block's product stays in cache, and the blocks write disjoint rows, so they run in
//! parallel without any order between them.
//!
//! Same bits as the whole-image form: the product is rten-gemm's (its depth blocks do not
//! depend on the columns), and each output adds its contributions in the same order, tap
//! by tap in (ky, kx) order from 0.

use rten_gemm::{GemmInputA, GemmInputB, GemmUninitOptions, PackedAMatrix};

use irun_opkit::epilogue::Epilogue;

use crate::conv_backprop::{ConvBackprop, Geometry};
use crate::gemm::{view, F32_GEMM};
use crate::op::{codes, OpError};
use crate::stretches::write_in_stretches;

/// At most about this many product values per block (1 MiB of f32).
const PRODUCT_BLOCK_VALUES: usize = 1 << 18;

/// The filters of every group as the GEMM's packed left operand `w^T [cout * kh * kw, cin]`.
pub(crate) struct PackedFilters {
    per_group: Vec<PackedAMatrix<f32>>,
    groups: usize,
    cin: usize,
    rows: usize,
    /// Bytes held, about the filters' own.
    pub bytes: usize,
}

impl std::fmt::Debug for PackedFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedFilters")
            .field("groups", &self.groups)
            .field("rows", &self.rows)
            .field("cin", &self.cin)
            .finish_non_exhaustive()
    }
}

fn pack(w: &[f32], groups: usize, cin: usize, rows: usize) -> Vec<PackedAMatrix<f32>> {
    (0..groups)
        .map(|grp| {
            let wg = &w[grp * cin * rows..][..cin * rows];
            F32_GEMM.with(|e| e.prepack_a(view(rows, cin, wg, (1, rows as isize))))
        })
        .collect()
}

impl ConvBackprop {
    /// Filters `w` of shape `ws` packed for [`Self::run_by_rows`]; `None` when they do not
    /// have this op's filter rank (the run reports it).
    pub(crate) fn pack_filters(&self, ws: &[usize], w: &[f32]) -> Option<PackedFilters> {
        let (groups, dims) = if self.grouped {
            (*ws.first()?, ws.get(1..)?)
        } else {
            (1, ws)
        };
        let [cin, cout, kh, kw] = dims.try_into().ok()?;
        let rows = cout * kh * kw;
        if groups * cin * rows != w.len() || rows == 0 || cin == 0 {
            return None;
        }
        Some(PackedFilters {
            per_group: pack(w, groups, cin, rows),
            groups,
            cin,
            rows,
            bytes: std::mem::size_of_val(w),
        })
    }

    /// Whether [`Self::run_by_rows`] takes it: two spatial dims.
    pub(crate) fn runs_by_rows(&self, g: &Geometry) -> bool {
        g.x.len() == 2 && self.strides.len() == 2 && self.dilations.len() == 2
    }

    /// `x [n, groups * cin, xh, xw]` by `w [groups * cin, cout, kh, kw]` into `[n, groups *
    /// cout, oh, ow]`, in blocks of `block` output rows (`None`: [`Self::block_rows`]).
    pub(crate) fn run_by_rows(
        &self,
        g: &Geometry,
        x: &[f32],
        w: &[f32],
        packed: Option<&PackedFilters>,
        epilogue: Option<&Epilogue>,
        block: Option<usize>,
    ) -> Result<Vec<f32>, OpError> {
        let ([xh, xw], [kh, kw], [oh, ow]) = (dims(&g.x), dims(&g.k), dims(&g.out));
        let (cin, cout, groups) = (g.cin, g.cout, g.groups);
        let rows = cout * kh * kw;
        let plane_in = xh * xw;
        let items = x.len() / (groups * cin * plane_in).max(1);
        if w.len() != groups * cin * rows || x.len() != items * groups * cin * plane_in {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: a transposed convolution's operands do not match its geometry",
            ));
        }
        let len = items * groups * cout * oh * ow;
        if len == 0 || rows == 0 || cin == 0 || plane_in == 0 {
            return crate::kernel::try_zeroed::<f32>(len);
        }
        // Per group, `w^T`: row (co, ky, kx), column ci, packed once for all blocks (or
        // once for all runs, when the filters are constant).
        let packed_now;
        let packed = match packed.filter(|p| (p.groups, p.cin, p.rows) == (groups, cin, rows)) {
            Some(p) => &p.per_group,
            None => {
                packed_now = pack(w, groups, cin, rows);
                &packed_now
            }
        };
        let block = block
            .unwrap_or_else(|| self.block_rows(rows, xw, oh))
            .max(1);
        let (s, d, pb) = (&self.strides, &self.dilations, &g.pads_begin);
        write_in_stretches(items * groups, cout, oh * ow, block * ow, &|t, share| {
            let o0 = share.first / ow;
            let o1 = o0 + share.len() / ow;
            // Input rows i reaching output rows o0..o1: o = i s + ky d - pb for some ky.
            let reach = (kh - 1) * d[0];
            let lo = (o0 + pb[0]).saturating_sub(reach).div_ceil(s[0]);
            let hi = ((o1 - 1 + pb[0]) / s[0] + 1).min(xh);
            let cols = hi.saturating_sub(lo) * xw;
            let xi = &x[share.item * cin * plane_in..][..cin * plane_in];
            let mut product: Vec<f32> =
                crate::kernel::try_with_capacity(rows * cols).map_err(|e| (t, e))?;
            let product: &[f32] = if cols == 0 {
                &[]
            } else {
                F32_GEMM.with(|e| {
                    e.gemm_uninit(
                        &mut product.spare_capacity_mut()[..rows * cols],
                        GemmInputA::Packed(&packed[share.item % groups]),
                        GemmInputB::Unpacked(view(
                            cin,
                            cols,
                            &xi[lo * xw..],
                            (plane_in as isize, 1),
                        )),
                        GemmUninitOptions::default(),
                    )
                    .map_err(|e| (t, OpError::new(codes::INTERNAL, e.to_string())))
                })?
            };
            // Row by row of each plane: zeroed, then its contributions added tap by tap in
            // (ky, kx) order (one input row per ky, one input column per kx and output
            // column), while the row is in L1. Zeroing the whole output first was a serial
            // 13 MB memset whose rows were evicted before the adds read them.
            let item = share.item;
            for co in 0..cout {
                for oy in o0..o1 {
                    let row = share.zeros(co, ow);
                    for ky in 0..kh {
                        let Some(at) = (oy + pb[0]).checked_sub(ky * d[0]) else {
                            break;
                        };
                        let i = at / s[0];
                        if at % s[0] != 0 || !(lo..hi).contains(&i) {
                            continue;
                        }
                        let src = |kx: usize| {
                            let tap = (co * kh + ky) * kw + kx;
                            &product[tap * cols + (i - lo) * xw..][..xw]
                        };
                        let mut kx = 0;
                        while kx < kw {
                            if s[1] == 2 && d[1] == 1 && kx + 1 < kw {
                                add_pairs(src(kx), src(kx + 1), kx, pb[1], row);
                                kx += 2;
                            } else {
                                add_strided(src(kx), kx * d[1], pb[1], s[1], row);
                                kx += 1;
                            }
                        }
                    }
                    // The bias and activation while the finished row is in L1.
                    if let Some(e) = epilogue {
                        e.apply_at(row, ((item * cout + co) * oh + oy) * ow, g.planes());
                    }
                }
            }
            Ok(())
        })
    }

    /// Output rows per block for `rows` product rows over input rows of `xw`: about
    /// [`PRODUCT_BLOCK_VALUES`] of product, at least one input row's worth.
    fn block_rows(&self, rows: usize, xw: usize, oh: usize) -> usize {
        let input_rows = (PRODUCT_BLOCK_VALUES / (rows * xw).max(1)).max(1);
        (input_rows * self.strides[0]).clamp(1, oh.max(1))
    }
}

/// `row[j s + offset - pad] += src[j]` for every `j` that lands inside `row`.
fn add_strided(src: &[f32], offset: usize, pad: usize, s: usize, row: &mut [f32]) {
    // j lands at j s + offset - pad: inside for first <= j < end.
    let first = pad.saturating_sub(offset).div_ceil(s);
    let end = ((row.len() + pad).saturating_sub(offset).div_ceil(s)).min(src.len());
    if first >= end {
        return;
    }
    let start = first * s + offset - pad;
    if s == 1 {
        for (o, &v) in row[start..].iter_mut().zip(&src[first..end]) {
            *o += v;
        }
    } else {
        for (j, &v) in src[first..end].iter().enumerate() {
            row[start + j * s] += v;
        }
    }
}

/// Taps `kx` and `kx + 1` at stride 2 and dilation 1: `row[2 j + kx - pad] += a[j]` and
/// `row[2 j + kx + 1 - pad] += b[j]`, adjacent slots, so the pairs interleave in one pass
/// that vectorises (the strided adds of [`add_strided`] do not).
fn add_pairs(a: &[f32], b: &[f32], kx: usize, pad: usize, row: &mut [f32]) {
    let len = row.len() as isize;
    let base = kx as isize - pad as isize;
    // Whole pairs for first <= j < end: 0 <= 2 j + base and 2 j + base + 1 < len.
    let first = if base >= 0 {
        0
    } else {
        ((-base + 1) / 2) as usize
    };
    let end = (((len - base) / 2).max(0) as usize).min(a.len()).max(first);
    for j in (0..first).chain(end..a.len()) {
        for (v, at) in [
            (a[j], 2 * j as isize + base),
            (b[j], 2 * j as isize + base + 1),
        ] {
            if (0..len).contains(&at) {
                row[at as usize] += v;
            }
        }
    }
    let start = (2 * first as isize + base) as usize;
    let pairs = row[start..].chunks_exact_mut(2);
    for (pair, (&x, &y)) in pairs.zip(a[first..end].iter().zip(&b[first..end])) {
        pair[0] += x;
        pair[1] += y;
    }
}

fn dims(v: &[usize]) -> [usize; 2] {
    [v[0], v[1]]
}
