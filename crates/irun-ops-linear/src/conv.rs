//! The kernel of Convolution and GroupConvolution. f32 convolutions, prepared or not, run
//! the first of these that takes them: depthwise ones `depthwise/`; one group with 1 or 2
//! spatial dims `direct_conv/` (direct tiles or Winograd) where `DirectFilters::runs` says
//! it beats the GEMM, or `pointwise.rs` for a 1x1 kernel at stride 1; the GEMM by position
//! rows (`conv_rows.rs`) for 16+ input channels on planes of at most 32x32; the GEMM over
//! blocks of patches (`conv_blocks.rs`) for the rest. Other element types: for each batch
//! item, group and block of output positions, the input patches of the block laid out as
//! columns (im2col, zeros for padding) times the group's filters as one GEMM. Tasks own
//! disjoint blocks, so no result depends on the thread count. 1-D and 2-D convolutions are
//! 3-D ones with unit dims.

use std::sync::Arc;

use half::{bf16, f16};
use irun_tensor::{with_int, ElementType, Tensor};

use crate::conv_blocks::BlockFilters;
use crate::depthwise::Depthwise;
use crate::direct_conv::{DirectFilters, Shape2};
use crate::gemm::Mul;
use crate::kernel::try_zeroed;
use crate::op::{codes, OpError, Value};
use crate::par;
use crate::pointwise::PointwiseFilters;
use crate::spatial::{gather_run, Spatial};
use irun_opkit::epilogue::{Channels, Epilogue};
use irun_opkit::quantize::FakeQuantizeRange;
use std::sync::OnceLock;

/// Patch matrices up to this many elements (64 MiB of f32) are built whole, and the GEMM
/// writes straight into the output; larger ones go in column blocks.
const WHOLE_PLANE_ELEMENTS: usize = 16 << 20;

/// Dense convolutions of fewer multiply-adds run on the calling thread alone
/// ([`par::alone`]): about 10 us of one core, less than sharing them out costs. A
/// segmenter's small layers at two threads against one: 8 -> 16 channels 3x3 stride 2 onto
/// 16x16 (295k) 18 against 14 us, 3 -> 8 channels 3x3 onto 32x32 (221k) 12 against 10.
const SHARE_MIN_PRODUCTS: usize = 1 << 19;

/// `f()`, a convolution of `dims` multiply-adds in all (their product, saturating): on the
/// calling thread alone below [`SHARE_MIN_PRODUCTS`], else shared by the pool.
pub(crate) fn alone_if_small<R>(dims: impl IntoIterator<Item = usize>, f: impl FnOnce() -> R) -> R {
    let products = dims.into_iter().fold(1usize, usize::saturating_mul);
    if products < SHARE_MIN_PRODUCTS {
        par::alone(f)
    } else {
        f()
    }
}

/// Output columns per task in the blocked path: the im2col block stays in L2 for common
/// channel counts.
const BLOCK: usize = 512;

/// f32 filters packed once for the GEMM, one matrix `[Cout/G, Cin/G * k]` per group (the
/// per-call packing of the constant operand was a fifth of a convolution's time), or kept
/// for the direct kernel ([`PackedFilters::direct`]) instead.
pub struct PackedFilters {
    /// 1x1 kernels and few input channels: per group, the filters `[co, ci * taps]` as the
    /// left operand of the products by blocks of patches (or of positions, for 1x1).
    pub(crate) groups: BlockFilters,
    /// The others ([`crate::conv_rows::suits`]): per group, the filters transposed
    /// `[taps * ci, co]` as the right operand of the GEMMs by output positions.
    pub(crate) by_rows: Vec<rten_gemm::PackedBMatrix<f32>>,
    direct: Option<DirectFilters>,
    pointwise: Option<PointwiseFilters>,
    bytes: usize,
    /// Beside `direct`, the filters packed for the GEMM, on the first run of a plane the
    /// direct kernels run slower than it ([`DirectFilters::runs`]); beside `by_rows`, packed
    /// as the left operand, on the first run of a plane too large for them.
    gemm: OnceLock<Option<Box<PackedFilters>>>,
}

impl PackedFilters {
    /// Packs `filters [G, co, ci, *k]`, transposed for the GEMM by position rows where their
    /// sizes suit it (`conv_rows::suits`); `None` unless they are f32.
    pub fn new(filters: &Tensor) -> Option<PackedFilters> {
        let fs = filters.shape();
        let by_rows = crate::conv_rows::suits(*fs.get(2)?, fs.get(3..)?.iter().product());
        Self::packed(filters, by_rows)
    }

    /// Packs `filters [G, co, ci, *k]` as the GEMM's left operand, whatever their sizes;
    /// `None` unless they are f32.
    fn left(filters: &Tensor) -> Option<Box<PackedFilters>> {
        Self::packed(filters, false).map(Box::new)
    }

    /// Packs `filters [G, co, ci, *k]` transposed for the GEMM by position rows when
    /// `by_rows`, else as the GEMM's left operand; `None` unless they are f32.
    fn packed(filters: &Tensor, by_rows: bool) -> Option<PackedFilters> {
        let w = filters.values::<f32>()?;
        let fs = filters.shape();
        let (g, co) = (*fs.first()?, *fs.get(1)?);
        let k: usize = fs.get(2..)?.iter().product();
        if g == 0 || co == 0 || k == 0 {
            return None;
        }
        // `fs[2]` divides `k`, which is not 0.
        let taps = k / fs[2];
        let (groups, by_rows) = if by_rows {
            (
                BlockFilters::Gemm(Vec::new()),
                crate::conv_rows::pack(w, g, co, fs[2], taps),
            )
        } else {
            (crate::conv_blocks::pack(w, g, co, k, taps), Vec::new())
        };
        Some(PackedFilters {
            groups,
            by_rows,
            direct: None,
            pointwise: None,
            bytes: w.len() * 4,
            gemm: OnceLock::new(),
        })
    }

    /// Filters `[1, co, ci, *k]` (one group, 1 or 2 spatial dims) for the direct kernels,
    /// when this CPU runs them, for a convolution of these `strides`: [`PointwiseFilters`]
    /// for a 1x1 kernel at stride 1, whose patches are the input itself, else
    /// [`DirectFilters`].
    pub fn direct(filters: &Tensor, strides: &[usize]) -> Option<PackedFilters> {
        let fs = filters.shape();
        let kernel = match *fs {
            [1, _, _, k] => [1, k],
            [1, _, _, kh, kw] => [kh, kw],
            _ => return None,
        };
        if kernel == [1, 1] && strides.iter().all(|&s| s == 1) {
            let p = PointwiseFilters::new(filters.values::<f32>()?, fs[1], fs[2])?;
            return Some(PackedFilters {
                groups: BlockFilters::Gemm(Vec::new()),
                by_rows: Vec::new(),
                direct: None,
                bytes: p.byte_size(),
                pointwise: Some(p),
                gemm: OnceLock::new(),
            });
        }
        if !DirectFilters::supported() {
            return None;
        }
        let direct = DirectFilters::new(filters, fs[1], fs[2], kernel)?;
        Some(PackedFilters {
            groups: BlockFilters::Gemm(Vec::new()),
            by_rows: Vec::new(),
            bytes: direct.byte_size(),
            direct: Some(direct),
            pointwise: None,
            gemm: OnceLock::new(),
        })
    }

    /// About the bytes held beyond the filters (the packed panels are the filters' size,
    /// rounded up to tiles; the direct kernel shares the filters).
    pub fn byte_size(&self) -> usize {
        let gemm = self.gemm.get().and_then(Option::as_ref);
        self.bytes + gemm.map_or(0, |g| g.byte_size())
    }

    /// `filters` (the ones these were made from) packed for the GEMM, made on the first
    /// call and kept; `None` if they cannot be.
    fn for_gemm(&self, filters: &Tensor) -> Option<&PackedFilters> {
        if !self.groups.is_empty() || !self.by_rows.is_empty() {
            return Some(self);
        }
        self.gemm
            .get_or_init(|| PackedFilters::new(filters).map(Box::new))
            .as_deref()
    }
}

impl std::fmt::Debug for PackedFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedFilters({} groups)", self.groups.len())
    }
}

/// One grouped convolution's geometry, spatial dims padded to 3.
pub(crate) struct Geometry {
    pub(crate) n: usize,
    pub(crate) groups: usize,
    pub(crate) ci: usize,
    pub(crate) co: usize,
    pub(crate) input: [usize; 3],
    pub(crate) kernel: [usize; 3],
    pub(crate) out: [usize; 3],
    pub(crate) stride: [usize; 3],
    pub(crate) dil: [usize; 3],
    pub(crate) pad: [usize; 3],
}

/// The f32 values of an operand the kernel's dispatch has already typed as f32.
pub(crate) fn f32_values(t: &Tensor) -> Result<&[f32], OpError> {
    t.values::<f32>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected element type"))
}

fn pad3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut a = [fill; 3];
    a[3 - v.len()..].copy_from_slice(v);
    a
}

/// `data [N, G*ci, *sp]` convolved with `filters [G, co, ci, *k]` (the caller reshapes a plain
/// Convolution's `[co, ci, *k]` as G = 1).
pub fn grouped(
    data: &Value,
    filters: &Tensor,
    groups: usize,
    sp: &Spatial,
    name: &str,
) -> Result<Value, OpError> {
    grouped_with(data, filters, groups, sp, name, None, Finish::default())
}

/// What a convolution does to its output besides computing it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Finish<'a> {
    /// Ops after it that it applies (by each plane as soon as it is computed, on the packed
    /// path).
    pub epilogue: Option<&'a Epilogue>,
    /// The f32 output written `[n, *spatial, c]`
    /// ([`irun_opkit::fact::Fact::channels_last`]); straight from the
    /// patch products where the convolution runs in blocks of patches with one group, else
    /// moved so once computed.
    pub channels_last: bool,
    /// A FakeQuantize after the epilogue (one range, or one per output channel), for a
    /// depthwise convolution only; none if empty.
    pub quantize: &'a [FakeQuantizeRange],
}

impl<'a> Finish<'a> {
    pub fn epilogue(epilogue: Option<&'a Epilogue>) -> Finish<'a> {
        Finish {
            epilogue,
            channels_last: false,
            quantize: &[],
        }
    }
}

/// Which parts of a [`Finish`] a path of the convolution did as it wrote its output.
#[derive(Default)]
struct Done {
    epilogue: bool,
    quantize: bool,
    channels_last: bool,
}

/// The f32 convolution output `[n, c, *spatial]` moved to `[n, *spatial, c]`.
fn channels_last(out: &Tensor) -> Result<Tensor, OpError> {
    let shape = out.shape();
    let x = f32_values(out)?;
    let moved = irun_opkit::transpose16::channels_last(x, shape[0], shape[1])?;
    let mut last = vec![shape[0]];
    last.extend_from_slice(&shape[2..]);
    last.push(shape[1]);
    Tensor::from_f32(last, moved).map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// [`grouped`], with the f32 filters of each group packed for the GEMM ahead of time (by
/// [`PackedFilters::new`]) when they are, and the output finished as `finish` says.
pub fn grouped_with(
    data: &Value,
    filters: &Tensor,
    groups: usize,
    sp: &Spatial,
    name: &str,
    packed: Option<&PackedFilters>,
    finish: Finish<'_>,
) -> Result<Value, OpError> {
    let epilogue = finish.epilogue;
    let (ds, fs) = (data.shape(), filters.shape());
    let r = sp.rank();
    if ds.len() != r + 2 || fs.len() != r + 3 || !(1..=3).contains(&r) {
        return Err(OpError::new(
            codes::RUN_SHAPE,
            format!("{name}: data {ds:?} and filters {fs:?} do not match {r} spatial dims"),
        ));
    }
    let (co, ci) = (fs[1], fs[2]);
    if fs[0] != groups || ds[1] != groups * ci {
        return Err(OpError::new(
            codes::RUN_SHAPE,
            format!(
                "{name}: {} input channels for {groups} group(s) of {ci}",
                ds[1]
            ),
        ));
    }
    let mut dims = Vec::with_capacity(r);
    for d in 0..r {
        dims.push(sp.dim(d, ds[2 + d], fs[3 + d])?);
    }
    let g = Geometry {
        n: ds[0],
        groups,
        ci,
        co,
        input: pad3(&ds[2..], 1),
        kernel: pad3(&fs[3..], 1),
        out: pad3(&dims.iter().map(|d| d.2).collect::<Vec<_>>(), 1),
        stride: pad3(&sp.strides, 1),
        dil: pad3(&sp.dilations, 1),
        pad: pad3(&dims.iter().map(|d| d.0).collect::<Vec<_>>(), 0),
    };
    let mut shape = vec![g.n, groups * co];
    shape.extend(dims.iter().map(|d| d.2));
    // One output position (a squeeze-excitation block's 1x1 convolutions) is a matrix times
    // a vector, which the unpacked filters serve best (see `Mul::gemm`).
    let packed = packed.filter(|_| g.out.iter().product::<usize>() > 1);
    let mut done = Done::default();
    let dispatch = || match data.element_type() {
        ElementType::F32 if g.is_depthwise() => {
            done.epilogue = true;
            done.quantize = true;
            g.depthwise(data, filters, shape, epilogue, finish.quantize)
        }
        ElementType::F32 => match packed {
            Some(PackedFilters {
                pointwise: Some(p), ..
            }) => {
                if g.fits_pointwise(p) {
                    done.epilogue = true;
                    g.run_pointwise_direct(data, p, shape, epilogue)
                } else {
                    g.run::<f32>(data, filters, shape)
                }
            }
            Some(
                p @ PackedFilters {
                    direct: Some(d), ..
                },
            ) => match g.direct_shape(d) {
                Some(s) if d.runs(&s) => {
                    done.epilogue = true;
                    g.run_direct(data, d, &s, shape, epilogue)
                }
                Some(_) => match p.for_gemm(filters) {
                    Some(p) => g.run_packed(data, filters, p, shape, finish, &mut done),
                    None => g.run::<f32>(data, filters, shape),
                },
                None => g.run::<f32>(data, filters, shape),
            },
            Some(p) => g.run_packed(data, filters, p, shape, finish, &mut done),
            // Unprepared filters take the kernel prepared ones would (packed here), so a
            // run that does not prepare (`irun run`) gives the same bits.
            None => match (g.direct_filters(filters), g.pointwise_filters(filters)) {
                (Some((d, s)), _) => {
                    done.epilogue = true;
                    g.run_direct(data, &d, &s, shape, epilogue)
                }
                (None, Some(p)) => {
                    done.epilogue = true;
                    g.run_pointwise_direct(data, &p, shape, epilogue)
                }
                (None, None) if g.runs_by_rows() => {
                    done.epilogue = true;
                    let w = f32_values(filters)?;
                    let taps = g.kernel.iter().product();
                    let packed = crate::conv_rows::pack(w, groups, co, ci, taps);
                    g.run_by_rows(data, &packed, shape, epilogue)
                }
                (None, None) if g.runs_in_im2col_blocks() => {
                    done.epilogue = true;
                    let w = f32_values(filters)?;
                    let taps = g.kernel.iter().product::<usize>();
                    let packed = crate::conv_blocks::pack(w, groups, co, ci * taps, taps);
                    done.channels_last = finish.channels_last && groups == 1;
                    let layout = done.channels_last;
                    g.run_in_im2col_blocks(data, &packed, shape, (epilogue, layout), None)
                }
                (None, None) => g.run::<f32>(data, filters, shape),
            },
        },
        ElementType::F64 => g.run::<f64>(data, filters, shape),
        ty @ (ElementType::F16 | ElementType::Bf16) => {
            let wide = g.run::<f32>(&widen(data)?, &widen(filters)?, shape)?;
            narrow(&wide, ty)
        }
        ty => with_int!(ty, T => g.run::<T>(data, filters, shape), else Err(OpError::new(
            codes::UNSUPPORTED_TYPE,
            format!("{name} on {ty}"),
        ))),
    };
    // Not depthwise ones: a product costs them several times a dense kernel's (a
    // MobileNetV3's 3x3 and 5x5 depthwise layers of 350-510k ran slower alone).
    let out = if g.is_depthwise() {
        dispatch()
    } else {
        let dims = [g.n, g.groups, g.co, g.ci]
            .into_iter()
            .chain(g.out)
            .chain(g.kernel);
        alone_if_small(dims, dispatch)
    }?;
    let mut out = out;
    if let Some(e) = epilogue.filter(|_| !done.epilogue) {
        let layout = Channels::Planes {
            channels: groups * co,
            plane: g.out.iter().product(),
        };
        e.apply_to(&mut out, layout)?;
    }
    if !finish.quantize.is_empty() && !done.quantize {
        // Only a depthwise convolution takes a FakeQuantize, and its paths write planes.
        return Err(OpError::new(
            codes::INTERNAL,
            format!("{name}: a FakeQuantize taken over where the depthwise path did not run"),
        ));
    }
    if finish.channels_last && !done.channels_last {
        out = channels_last(&out)?;
    }
    Ok(Arc::new(out))
}

impl Geometry {
    /// One input and one output channel per group: each output plane is a weighted sum of
    /// shifted copies of one input plane, computed directly rather than as a GEMM of 1 row.
    fn is_depthwise(&self) -> bool {
        self.groups > 1 && self.ci == 1 && self.co == 1
    }

    /// The depthwise convolution, by [`Depthwise`].
    fn depthwise(
        &self,
        data: &Tensor,
        filters: &Tensor,
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
        quantize: &[FakeQuantizeRange],
    ) -> Result<Tensor, OpError> {
        let (x, w) = (f32_values(data)?, f32_values(filters)?);
        let out = Depthwise {
            n: self.n,
            channels: self.groups,
            input: self.input,
            kernel: self.kernel,
            out: self.out,
            stride: self.stride,
            dil: self.dil,
            pad: self.pad,
        }
        .run_finished(x, w, epilogue, quantize)?;
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// The geometry for `d` when [`DirectFilters`] can run it: one group, at most two
    /// spatial dims, and the filters `d` was made from.
    fn direct_shape(&self, d: &DirectFilters) -> Option<Shape2> {
        let fits = self.groups == 1
            && self.stride[0] == 1
            && self.input[0] == 1
            && self.kernel[0] == 1
            && self.out[0] == 1
            && self.pad[0] == 0
            && d.output_channels() == self.co
            && d.input_channels() == self.ci
            && d.kernel() == [self.kernel[1], self.kernel[2]];
        fits.then_some(Shape2 {
            n: self.n,
            input: [self.input[1], self.input[2]],
            out: [self.out[1], self.out[2]],
            stride: [self.stride[1], self.stride[2]],
            dil: [self.dil[1], self.dil[2]],
            pad: [self.pad[1], self.pad[2]],
        })
    }

    /// `filters [1, co, ci, *k]` as [`DirectFilters`] and the geometry, when the
    /// prepared path would run it ([`PackedFilters::direct`] and [`Self::direct_shape`]).
    fn direct_filters(&self, filters: &Tensor) -> Option<(DirectFilters, Shape2)> {
        let pointwise = self.kernel[1..] == [1, 1] && self.stride[1..] == [1, 1];
        if self.groups != 1 || self.input[0] != 1 || pointwise {
            return None;
        }
        let d = PackedFilters::direct(filters, &self.stride[1..])?.direct?;
        let s = self.direct_shape(&d).filter(|s| d.runs(s))?;
        Some((d, s))
    }

    /// Whether `p` runs this convolution: a pointwise one ([`Self::is_pointwise`]) of one
    /// group, more than one output position (one is a matrix times a vector, which
    /// `Mul::gemm` serves), and the channels `p` was made for.
    fn fits_pointwise(&self, p: &PointwiseFilters) -> bool {
        self.groups == 1
            && self.is_pointwise()
            && self.out.iter().product::<usize>() > 1
            && p.output_channels() == self.co
            && p.input_channels() == self.ci
    }

    /// `filters [1, co, ci, 1, 1]` as [`PointwiseFilters`], when the prepared path would run
    /// them ([`PackedFilters::direct`] and [`Self::fits_pointwise`]).
    fn pointwise_filters(&self, filters: &Tensor) -> Option<PointwiseFilters> {
        if self.groups != 1 || !self.is_pointwise() || self.out.iter().product::<usize>() < 2 {
            return None;
        }
        let p = PackedFilters::direct(filters, &self.stride[1..])?.pointwise?;
        self.fits_pointwise(&p).then_some(p)
    }

    /// The convolution by [`PointwiseFilters`], with `epilogue` applied to each tile before
    /// it is stored.
    fn run_pointwise_direct(
        &self,
        data: &Tensor,
        p: &PointwiseFilters,
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Tensor, OpError> {
        let x = f32_values(data)?;
        let positions: usize = self.out.iter().product();
        let out = p.run(x, self.n, positions, epilogue)?;
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// The convolution by [`DirectFilters`], with `epilogue` applied to each task's output
    /// channels as soon as they are computed.
    fn run_direct(
        &self,
        data: &Tensor,
        d: &DirectFilters,
        s: &Shape2,
        shape: Vec<usize>,
        epilogue: Option<&Epilogue>,
    ) -> Result<Tensor, OpError> {
        let x = f32_values(data)?;
        let positions = s.out[0] * s.out[1];
        let layout = Channels::Planes {
            channels: self.co,
            plane: positions,
        };
        let out = d.run(x, s, &|start, dst| {
            if let Some(e) = epilogue {
                e.apply_at(dst, start, layout);
            }
        })?;
        Tensor::new(data.element_type(), shape, irun_tensor::Scalar::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// The convolution by the GEMM on filters `p` packed for it; `done` says which parts of
    /// `finish` it did.
    fn run_packed(
        &self,
        data: &Tensor,
        filters: &Tensor,
        p: &PackedFilters,
        shape: Vec<usize>,
        finish: Finish<'_>,
        done: &mut Done,
    ) -> Result<Tensor, OpError> {
        let epilogue = finish.epilogue;
        if !p.by_rows.is_empty() {
            if crate::conv_rows::suits_plane(self.out.iter().product()) {
                done.epilogue = true;
                return self.run_by_rows(data, &p.by_rows, shape, epilogue);
            }
            return match p
                .gemm
                .get_or_init(|| PackedFilters::left(filters))
                .as_deref()
            {
                Some(left) => self.run_packed(data, filters, left, shape, finish, done),
                None => self.run::<f32>(data, filters, shape),
            };
        }
        if self.runs_in_im2col_blocks() {
            done.epilogue = true;
            done.channels_last = finish.channels_last && self.groups == 1;
            let layout = done.channels_last;
            return self.run_in_im2col_blocks(data, &p.groups, shape, (epilogue, layout), None);
        }
        if self.is_pointwise() {
            done.epilogue = true;
            return self.run_pointwise(data, p, shape, epilogue);
        }
        // One output position: `grouped_with` passes no packed filters for it.
        self.run::<f32>(data, filters, shape)
    }

    /// A 1x1(x1) kernel at stride 1 without padding, whose patches are the input itself.
    pub(crate) fn is_pointwise(&self) -> bool {
        self.kernel == [1, 1, 1]
            && self.stride == [1, 1, 1]
            && self.pad == [0, 0, 0]
            && self.input == self.out
    }

    /// The convolution by one GEMM per patch matrix (whole, or in column blocks when large)
    /// on unpacked filters: the path of other element types, and the bits the f32 kernels
    /// are checked against.
    pub(crate) fn run<T: Mul + Default>(
        &self,
        data: &Tensor,
        filters: &Tensor,
        shape: Vec<usize>,
    ) -> Result<Tensor, OpError> {
        let bad = || OpError::new(codes::UNSUPPORTED_TYPE, "unexpected element type");
        let (x, w) = (
            data.values::<T>().ok_or_else(bad)?,
            filters.values::<T>().ok_or_else(bad)?,
        );
        let (co, k) = (self.co, self.ci * self.kernel.iter().product::<usize>());
        // One group's filters `[co, k]` times a patch matrix `[k, cols]` into `[co, cols]`.
        let gemm = |grp: usize, cols: usize, patches: &[T], dst: &mut [T]| {
            let wg = &w[grp * co * k..][..co * k];
            T::gemm(
                co,
                k,
                cols,
                wg,
                (k as isize, 1),
                patches,
                (cols as isize, 1),
                dst,
            )
        };
        let positions: usize = self.out.iter().product();
        let plane: usize = self.input.iter().product();
        let items = self.n * self.groups;
        if k.saturating_mul(positions) <= WHOLE_PLANE_ELEMENTS {
            // Whole planes: the patches of one (batch item, group) as one matrix, one GEMM
            // straight into the output. Items run in parallel when there are several (depthwise,
            // batches); a single item's im2col rows and GEMM tiles are split instead.
            let mut out = try_zeroed::<T>(items * self.co * positions)?;
            let mut planes: Vec<&mut [T]> = out.chunks_mut((self.co * positions).max(1)).collect();
            par::try_for_each_mut(&mut planes, &|ng, dst| {
                let (n, grp) = (ng / self.groups, ng % self.groups);
                let xg = &x[(n * self.groups + grp) * self.ci * plane..][..self.ci * plane];
                if self.is_pointwise() {
                    // A 1x1 kernel at stride 1 without padding: the input already is the
                    // patch matrix [ci, positions].
                    gemm(grp, positions, xg, dst);
                    return Ok(());
                }
                let mut patches = try_zeroed::<T>(k * positions).map_err(|e| (ng, e))?;
                self.im2col(xg, 0, positions, &mut patches);
                gemm(grp, positions, &patches, dst);
                Ok(())
            })?;
            return Tensor::new(data.element_type(), shape, T::wrap(out))
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()));
        }
        let blocks = positions.div_ceil(BLOCK).max(1);
        let tasks = items * blocks;
        let results = par::try_map_tasks(tasks, &|t| {
            let (ng, b) = (t / blocks, t % blocks);
            let (n, grp) = (ng / self.groups, ng % self.groups);
            let (p0, p1) = (b * BLOCK, ((b + 1) * BLOCK).min(positions));
            let cols = p1 - p0;
            let mut patches = try_zeroed::<T>(k * cols).map_err(|e| (t, e))?;
            let xg = &x[(n * self.groups + grp) * self.ci * plane..][..self.ci * plane];
            self.im2col(xg, p0, cols, &mut patches);
            let mut block = try_zeroed::<T>(self.co * cols).map_err(|e| (t, e))?;
            gemm(grp, cols, &patches, &mut block);
            Ok(block)
        })?;
        let mut out = try_zeroed::<T>(self.n * self.groups * self.co * positions)?;
        for (t, block) in results.iter().enumerate() {
            let (ng, b) = (t / blocks, t % blocks);
            let p0 = b * BLOCK;
            let cols = block.len() / self.co.max(1);
            for (c, row) in block.chunks(cols.max(1)).enumerate().take(self.co) {
                let at = (ng * self.co + c) * positions + p0;
                out[at..at + cols].copy_from_slice(row);
            }
        }
        Tensor::new(data.element_type(), shape, T::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// Rows `(channel, kd, kh, kw)`, columns output positions `p0..p0+cols`: the input value
    /// each filter tap meets, 0 in padding. Walks each row run by run along the output's
    /// innermost dim: at stride 1 the in-bounds part of a run is one contiguous copy between
    /// zeros, otherwise a strided gather; no division per element.
    fn im2col<T: Copy + Default + Send + Sync>(
        &self,
        x: &[T],
        p0: usize,
        cols: usize,
        patches: &mut [T],
    ) {
        if cols == 0 {
            return;
        }
        let taps: usize = self.kernel.iter().product();
        par::for_each_split_mut(
            patches,
            crate::kernel::PAR_MIN_ELEMENTS.max(cols) / cols * cols,
            &|start, rows| {
                for (r, dst) in rows.chunks_mut(cols).enumerate() {
                    self.im2col_row(x, start / cols + r, taps, p0, dst);
                }
            },
        );
    }

    /// Row `row` of the patches: channel `row / taps`, tap `row % taps` as `(kd, kh, kw)`;
    /// columns are output positions `p0..p0 + dst.len()`. Walks the row run by run along the
    /// output's innermost dim, each run one [`gather_run`]; no division per element.
    pub(crate) fn im2col_row<T: Copy + Default>(
        &self,
        x: &[T],
        row: usize,
        taps: usize,
        p0: usize,
        dst: &mut [T],
    ) {
        let [id, ih, iw] = self.input;
        let [_, kh, kw] = self.kernel;
        let [_, oh, ow] = self.out;
        let plane = id * ih * iw;
        let cols = dst.len();
        let (c, t) = (row / taps, row % taps);
        let (a, b, e) = (t / (kh * kw), (t / kw) % kh, t % kw);
        let xc = &x[c * plane..(c + 1) * plane];
        let off_x = (e * self.dil[2]) as isize - self.pad[2] as isize;
        let (mut done, mut p) = (0, p0);
        while done < cols {
            let (z, y, xo) = (p / (oh * ow), (p / ow) % oh, p % ow);
            let run = (ow - xo).min(cols - done);
            let seg = &mut dst[done..done + run];
            let iz = (z * self.stride[0] + a * self.dil[0]) as isize - self.pad[0] as isize;
            let iy = (y * self.stride[1] + b * self.dil[1]) as isize - self.pad[1] as isize;
            if iz < 0 || iz as usize >= id || iy < 0 || iy as usize >= ih {
                seg.fill(T::default());
            } else {
                let src = &xc[(iz as usize * ih + iy as usize) * iw..][..iw];
                let start = (xo * self.stride[2]) as isize + off_x;
                gather_run(src, start, self.stride[2], T::default(), seg);
            }
            done += run;
            p += run;
        }
    }
}

pub fn widen(t: &Tensor) -> Result<Tensor, OpError> {
    let v: Vec<f32> = if let Some(v) = t.values::<f16>() {
        par::map(v, |x| x.to_f32())
    } else if let Some(v) = t.values::<bf16>() {
        par::map(v, |x| x.to_f32())
    } else {
        return Err(OpError::new(
            codes::UNSUPPORTED_TYPE,
            "expected f16 or bf16",
        ));
    };
    Tensor::from_f32(t.shape().to_vec(), v)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

pub fn narrow(t: &Tensor, ty: ElementType) -> Result<Tensor, OpError> {
    let v = t
        .values::<f32>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "expected f32"))?;
    let shape = t.shape().to_vec();
    let r = if ty == ElementType::F16 {
        Tensor::from_f16(shape, par::map(v, f16::from_f32))
    } else {
        Tensor::from_bf16(shape, par::map(v, bf16::from_f32))
    };
    r.map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}

/// Filters as `[G, co, ci, *k]`: a plain convolution's gain a leading 1 (no copy).
pub fn grouped_view(filters: &Tensor, grouped: bool) -> Result<Tensor, OpError> {
    if grouped {
        return Ok(filters.clone());
    }
    let mut shape = vec![1];
    shape.extend_from_slice(filters.shape());
    filters
        .with_shape(shape)
        .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}
