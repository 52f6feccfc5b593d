//! What MaxPool and AvgPool share: inference (`[N, C, *out]`), and the window walk over one
//! `(n, c)` plane with 1 to 3 spatial dims (padded to 3), an output row at a time. Planes run in parallel, each on one
//! task, so results do not depend on the thread count.

use irun_tensor::{Dim, ElementType, PartialShape, Tensor};

use crate::fact::Fact;
use crate::kernel::try_zeroed;
use crate::op::{codes, OpError};
use crate::par;
use crate::spatial::{gather_run, Spatial};

/// The windows of one output row: the outputs that share their coordinates along the first
/// two spatial dims and differ along the last. A kernel walks the input rows those windows cover
/// (the outer loop, in scan order) and, within each, the kernel taps and then the outputs, so
/// every output still sees its taps in scan order (ties and float sums match a per-window walk)
/// while the innermost loop runs over independent outputs and pipelines.
pub struct RowWindows<'a> {
    /// The `(n, c)` plane the row is in.
    pub plane: usize,
    outer: [Span; 2],
    cols: &'a [Span],
    g: &'a Windows,
}

impl RowWindows<'_> {
    /// Calls `f` with the plane offset of the start of every input row the windows cover.
    #[inline(always)]
    pub fn for_each_input_row(&self, mut f: impl FnMut(usize)) {
        let g = self.g;
        for a in 0..self.outer[0].count {
            let z = self.outer[0].first + a * g.dil[0];
            for b in 0..self.outer[1].count {
                let y = self.outer[1].first + b * g.dil[1];
                f((z * g.input[1] + y) * g.input[2]);
            }
        }
    }

    /// The plane offsets of [`Self::for_each_input_row`], into `rows` (cleared first): a
    /// kernel that loops over them in plain loops gets them compiled for the widest
    /// instruction set, where a closure called from a loop was compiled for the baseline one.
    pub fn input_rows_into(&self, rows: &mut Vec<usize>) {
        rows.clear();
        self.for_each_input_row(|r| rows.push(r));
    }

    /// Taps along the last dim.
    pub fn kernel_width(&self) -> usize {
        self.g.kernel[2]
    }

    /// Length of an input row.
    pub fn input_width(&self) -> usize {
        self.g.input[2]
    }

    /// The input column of tap `kx` of output `ox`'s window, `>= input_width()` when the tap
    /// lies in padding (the subtraction wraps for taps before the start).
    #[inline(always)]
    pub fn column(&self, ox: usize, kx: usize) -> usize {
        (ox * self.g.stride[2] + kx * self.g.dil[2]).wrapping_sub(self.g.pad[2])
    }

    /// Tap `kx` of every output of the row, read from input row `xr`; `fill` where the tap lies
    /// in padding.
    #[inline(always)]
    pub fn gather<T: Copy>(&self, xr: &[T], kx: usize, fill: T, taps: &mut [T]) {
        let start = (kx * self.g.dil[2]) as isize - self.g.pad[2] as isize;
        gather_run(xr, start, self.g.stride[2], fill, taps);
    }

    /// Taps of output `ox`'s window inside the input.
    pub fn inside(&self, ox: usize) -> usize {
        self.outer[0].count * self.outer[1].count * self.cols[ox].count
    }

    /// Taps of output `ox`'s window in the explicit or same_* padding (not in cells only ceil
    /// rounding added).
    pub fn padded(&self, ox: usize) -> usize {
        self.outer[0].in_pads * self.outer[1].in_pads * self.cols[ox].in_pads - self.inside(ox)
    }

    /// The first tap of output `ox`'s window, in scan order, inside the input and not NaN:
    /// its value and plane offset.
    pub fn first_non_nan<T: Copy>(
        &self,
        plane: &[T],
        ox: usize,
        nan: impl Fn(T) -> bool,
    ) -> Option<(T, usize)> {
        let c = self.cols[ox];
        let mut found = None;
        self.for_each_input_row(|row| {
            for e in 0..c.count {
                let t = row + c.first + e * self.g.dil[2];
                if found.is_none() && !nan(plane[t]) {
                    found = Some((plane[t], t));
                }
            }
        });
        found
    }
}

/// A pool's window geometry for one input shape, spatial dims padded to 3.
pub struct Windows {
    pub planes: usize,
    pub input: [usize; 3],
    pub kernel: [usize; 3],
    pub out: [usize; 3],
    pub stride: [usize; 3],
    pub dil: [usize; 3],
    pub pad: [usize; 3],
    pub pad_end: [usize; 3],
    pub shape: Vec<usize>,
}

fn pad3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut a = [fill; 3];
    a[3 - v.len()..].copy_from_slice(v);
    a
}

impl Windows {
    pub fn new(
        shape: &[usize],
        kernel: &[usize],
        sp: &Spatial,
        name: &str,
    ) -> Result<Windows, OpError> {
        let r = sp.rank();
        if shape.len() != r + 2 || kernel.len() != r || !(1..=3).contains(&r) {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "{name}: input {shape:?} does not match the {r} spatial dims of the attributes"
                ),
            ));
        }
        let dims: Vec<(usize, usize, usize)> = (0..r)
            .map(|d| sp.dim(d, shape[2 + d], kernel[d]))
            .collect::<Result<_, _>>()?;
        let mut out_shape = shape[..2].to_vec();
        out_shape.extend(dims.iter().map(|d| d.2));
        Ok(Windows {
            planes: shape[0] * shape[1],
            input: pad3(&shape[2..], 1),
            kernel: pad3(kernel, 1),
            out: pad3(&dims.iter().map(|d| d.2).collect::<Vec<_>>(), 1),
            stride: pad3(&sp.strides, 1),
            dil: pad3(&sp.dilations, 1),
            pad: pad3(&dims.iter().map(|d| d.0).collect::<Vec<_>>(), 0),
            pad_end: pad3(&dims.iter().map(|d| d.1).collect::<Vec<_>>(), 0),
            shape: out_shape,
        })
    }

    /// Per output coordinate along spatial dim `k`: the first in-bounds input coordinate, how
    /// many taps are in bounds, and how many lie inside the input or its explicit padding.
    /// A window is the product of its three dims' spans, so these tables replace the per-output
    /// window walk.
    fn spans(&self, k: usize) -> Vec<Span> {
        (0..self.out[k])
            .map(|o| {
                let base = (o * self.stride[k]) as isize - self.pad[k] as isize;
                let mut s = Span::default();
                for t in 0..self.kernel[k] {
                    let c = base + (t * self.dil[k]) as isize;
                    if c >= 0 && (c as usize) < self.input[k] {
                        if s.count == 0 {
                            s.first = c as usize;
                        }
                        s.count += 1;
                    }
                    if c < (self.input[k] + self.pad_end[k]) as isize {
                        s.in_pads += 1;
                    }
                }
                s
            })
            .collect()
    }

    /// `f(plane values, the row's windows, the row's outputs, scratch)` for every output row
    /// of every plane; the scratch is made once per plane, so the kernels' row buffers are
    /// not allocated row by row (ResNet-18's max pool made 14,000 allocations a run).
    pub fn map_rows<T, O, S, F>(&self, x: &[T], f: &F) -> Result<Vec<O>, OpError>
    where
        T: Copy + Sync,
        O: Copy + Default + Send,
        S: Default,
        F: Fn(&[T], &RowWindows, &mut [O], &mut S) + Sync,
    {
        let plane_in: usize = self.input.iter().product();
        let plane_out: usize = self.out.iter().product();
        let mut out = try_zeroed::<O>(self.planes * plane_out)?;
        if plane_out == 0 {
            return Ok(out);
        }
        let spans = [self.spans(0), self.spans(1), self.spans(2)];
        par::for_each_chunk_mut(&mut out, plane_out, &|start, dst| {
            let p = start / plane_out;
            let xp = &x[p * plane_in..(p + 1) * plane_in];
            let mut rows = dst.chunks_mut(self.out[2]);
            let mut scratch = S::default();
            for &a in &spans[0] {
                for &b in &spans[1] {
                    let row = RowWindows {
                        plane: p,
                        outer: [a, b],
                        cols: &spans[2],
                        g: self,
                    };
                    if let Some(dst) = rows.next() {
                        f(xp, &row, dst, &mut scratch);
                    }
                }
            }
        });
        Ok(out)
    }
}

#[derive(Clone, Copy, Default)]
struct Span {
    first: usize,
    count: usize,
    in_pads: usize,
}

/// The output fact of a pool: `[N, C, *out]`.
pub fn infer_pool(
    name: &str,
    sp: &Spatial,
    kernel: &[usize],
    x: &Fact,
) -> Result<PartialShape, OpError> {
    if matches!(x.ty, ElementType::Boolean | ElementType::String) {
        return Err(OpError::input(
            0,
            codes::ELEMENT_TYPE,
            format!("{name}: input must be numeric, got {}", x.ty),
        ));
    }
    if kernel.len() != sp.rank() {
        return Err(OpError::attribute(
            "kernel",
            format!(
                "{name}: kernel has {} values for {} spatial dims",
                kernel.len(),
                sp.rank()
            ),
        ));
    }
    let Some(d) = x.shape.dims() else {
        return Ok(PartialShape::dynamic_rank());
    };
    if d.len() != sp.rank() + 2 {
        return Err(OpError::input(
            0,
            codes::RANK,
            format!("{name}: input {} must have rank {}", x.shape, sp.rank() + 2),
        ));
    }
    let mut out: Vec<Dim> = d[..2].to_vec();
    for (i, &k) in kernel.iter().enumerate() {
        out.push(
            sp.out_dim(i, d[2 + i], k)
                .map_err(|e| OpError::input(0, codes::SHAPE, format!("{name}: {}", e.message)))?,
        );
    }
    Ok(PartialShape::new(out))
}

pub fn tensor<T: irun_tensor::Scalar>(
    ty: ElementType,
    shape: Vec<usize>,
    v: Vec<T>,
) -> Result<Tensor, OpError> {
    Tensor::new(ty, shape, T::wrap(v)).map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
}
