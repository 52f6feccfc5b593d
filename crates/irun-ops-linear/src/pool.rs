//! What MaxPool and AvgPool share: inference (`[N, C, *out]`), and the window walk over one
//! `(n, c)` plane with 1 to 3 spatial dims (padded to 3). Planes run in parallel, each on one
//! task, so results do not depend on the thread count.

use irun_tensor::{Dim, ElementType, PartialShape, Tensor};

use crate::fact::Fact;
use crate::kernel::try_zeroed;
use crate::op::{codes, OpError};
use crate::par;
use crate::spatial::Spatial;

/// What a pool computes for one window: `(plane values, the window) -> output`.
pub type WindowFn<'a, T, O> = &'a (dyn Fn(&[T], &Window) -> O + Sync);

/// One output's window over its input plane: per dim, the first in-bounds input coordinate,
/// how many taps are in bounds (they are consecutive) and the dilation; and how many taps
/// lie in the explicit or same_* padding (not in cells only ceil rounding added).
pub struct Window {
    first: [usize; 3],
    count: [usize; 3],
    dil: [usize; 3],
    input: [usize; 3],
    pub padded: usize,
}

impl Window {
    /// Taps inside the input.
    pub fn inside(&self) -> usize {
        self.count.iter().product()
    }

    /// Calls `f` with the plane offset of every tap inside the input, in scan order.
    #[inline(always)]
    pub fn for_each(&self, mut f: impl FnMut(usize)) {
        for a in 0..self.count[0] {
            let z = self.first[0] + a * self.dil[0];
            for b in 0..self.count[1] {
                let row = (z * self.input[1] + self.first[1] + b * self.dil[1]) * self.input[2]
                    + self.first[2];
                for e in 0..self.count[2] {
                    f(row + e * self.dil[2]);
                }
            }
        }
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

    /// For every output position of every plane, `f(plane values, its window)`.
    pub fn map<T: Copy + Sync, O: Copy + Default + Send>(
        &self,
        x: &[T],
        f: WindowFn<T, O>,
    ) -> Result<Vec<O>, OpError> {
        let plane_in: usize = self.input.iter().product();
        let plane_out: usize = self.out.iter().product();
        let mut out = try_zeroed::<O>(self.planes * plane_out)?;
        if plane_out == 0 {
            return Ok(out);
        }
        par::for_each_chunk_mut(&mut out, plane_out, &|start, dst| {
            let p = start / plane_out;
            let xp = &x[p * plane_in..(p + 1) * plane_in];
            for (o, d) in dst.iter_mut().enumerate() {
                let oc = [
                    o / (self.out[1] * self.out[2]),
                    (o / self.out[2]) % self.out[1],
                    o % self.out[2],
                ];
                let mut w = Window {
                    first: [0; 3],
                    count: [0; 3],
                    dil: self.dil,
                    input: self.input,
                    padded: 0,
                };
                let mut in_pads = [0usize; 3];
                for k in 0..3 {
                    let base = (oc[k] * self.stride[k]) as isize - self.pad[k] as isize;
                    for t in 0..self.kernel[k] {
                        let c = base + (t * self.dil[k]) as isize;
                        if c >= 0 && (c as usize) < self.input[k] {
                            if w.count[k] == 0 {
                                w.first[k] = c as usize;
                            }
                            w.count[k] += 1;
                        }
                        if c < (self.input[k] + self.pad_end[k]) as isize {
                            in_pads[k] += 1;
                        }
                    }
                }
                w.padded = in_pads.iter().product::<usize>() - w.inside();
                *d = f(xp, &w);
            }
        });
        Ok(out)
    }
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
