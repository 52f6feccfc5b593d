//! What RDFT and IRDFT share: reading `axes` and `signal_size`, resizing an axis (trim or
//! zero-pad at the end), and running a transform over every 1-D line along an axis of a
//! row-major complex array. Computed in f64 (inputs are f32, f16 or bf16).

use realfft::num_complex::Complex;
use rustfft::FftPlanner;

use irun_tensor::ElementType;

use crate::fact::Fact;
use crate::op::{codes, expect_inputs_between, OpError, Value};
use crate::par;
use crate::util::{ints, norm_axis};

pub type C = Complex<f64>;

/// The data input of a transform with 2 or 3 inputs (data, axes, optionally signal_size),
/// checked to be f32, f16 or bf16 (or not yet known).
pub fn data_input<'a>(inputs: &'a [Fact], name: &str) -> Result<&'a Fact, OpError> {
    expect_inputs_between(inputs, 2, 3, name)?;
    let data = &inputs[0];
    if !matches!(
        data.ty,
        ElementType::F32 | ElementType::F16 | ElementType::Bf16 | ElementType::Dynamic
    ) {
        return Err(OpError::input(
            0,
            codes::ELEMENT_TYPE,
            format!("{name}: data must be f32, f16 or bf16, got {}", data.ty),
        ));
    }
    Ok(data)
}

/// `axes` normalised against `rank`, checked unique; `sizes` checked against them.
pub fn axes_and_sizes(
    axes: &[i64],
    sizes: Option<&[i64]>,
    rank: usize,
    name: &str,
) -> Result<(Vec<usize>, Vec<Option<usize>>), OpError> {
    let axes: Vec<usize> = axes
        .iter()
        .map(|&a| norm_axis(a, rank, Some(1), name))
        .collect::<Result<_, _>>()?;
    let mut seen = axes.clone();
    seen.sort_unstable();
    seen.dedup();
    if seen.len() != axes.len() || axes.is_empty() {
        return Err(OpError::input(
            1,
            codes::BAD_VALUE,
            format!("{name}: axes {axes:?} must be unique and not empty"),
        ));
    }
    let sizes = match sizes {
        None => vec![None; axes.len()],
        Some(s) if s.len() != axes.len() => {
            return Err(OpError::input(
                2,
                codes::BAD_VALUE,
                format!("{name}: {} signal sizes for {} axes", s.len(), axes.len()),
            ))
        }
        Some(s) => s
            .iter()
            .map(|&v| match v {
                -1 => Ok(None),
                v if v >= 0 => Ok(Some(v as usize)),
                v => Err(OpError::input(
                    2,
                    codes::BAD_VALUE,
                    format!("{name}: signal size {v}"),
                )),
            })
            .collect::<Result<_, _>>()?,
    };
    Ok((axes, sizes))
}

/// A complex transform's run-time inputs: the values of `data [..., 2]` as complex numbers,
/// its complex dims, and the checked axes and signal sizes (inputs 1 and 2).
pub struct ComplexInput {
    pub data: Vec<C>,
    pub dims: Vec<usize>,
    pub axes: Vec<usize>,
    pub sizes: Vec<Option<usize>>,
}

pub fn complex_input(inputs: &[Value], name: &str) -> Result<ComplexInput, OpError> {
    let z = &inputs[0];
    let zs = z.shape();
    if zs.len() < 2 || zs[zs.len() - 1] != 2 {
        return Err(OpError::input(
            0,
            codes::RUN_SHAPE,
            format!("{name}: data {zs:?} must end in a dim of 2"),
        ));
    }
    let axes = ints(
        inputs
            .get(1)
            .ok_or_else(|| OpError::new(codes::ARITY, format!("{name} needs axes")))?,
        1,
    )?;
    let sizes = inputs.get(2).map(|s| ints(s, 2)).transpose()?;
    let dims = zs[..zs.len() - 1].to_vec();
    let (axes, sizes) = axes_and_sizes(&axes, sizes.as_deref(), dims.len(), name)?;
    let re_im = crate::rdft::real_values(z, name)?;
    let data = re_im.chunks_exact(2).map(|p| C::new(p[0], p[1])).collect();
    Ok(ComplexInput {
        data,
        dims,
        axes,
        sizes,
    })
}

/// `data` (row-major, `dims`) with axis `k` trimmed or zero-padded at the end to `n`.
pub fn resize<T: Copy + Default>(
    data: &[T],
    dims: &[usize],
    k: usize,
    n: usize,
) -> (Vec<T>, Vec<usize>) {
    let (outer, len, inner): (usize, usize, usize) = (
        dims[..k].iter().product(),
        dims[k],
        dims[k + 1..].iter().product(),
    );
    let mut out = vec![T::default(); outer * n * inner];
    for o in 0..outer {
        for j in 0..len.min(n) {
            let (src, dst) = ((o * len + j) * inner, (o * n + j) * inner);
            out[dst..dst + inner].copy_from_slice(&data[src..src + inner]);
        }
    }
    let mut new_dims = dims.to_vec();
    new_dims[k] = n;
    (out, new_dims)
}

/// The (unnormalised) complex DFT, forward or inverse, of every line along axis `k`.
pub fn fft_axis(data: &mut [C], dims: &[usize], k: usize, inverse: bool) {
    let (len, inner): (usize, usize) = (dims[k], dims[k + 1..].iter().product());
    if len == 0 || inner == 0 {
        return;
    }
    let mut planner = FftPlanner::<f64>::new();
    let fft = if inverse {
        planner.plan_fft_inverse(len)
    } else {
        planner.plan_fft_forward(len)
    };
    // Outer blocks in parallel, each line through one scratch buffer (`process` would
    // allocate one per line).
    par::for_each_chunk_mut(data, len * inner, &|_, block| {
        let mut scratch = vec![C::default(); fft.get_inplace_scratch_len()];
        if inner == 1 {
            fft.process_with_scratch(block, &mut scratch);
            return;
        }
        let mut line = vec![C::default(); len];
        for i in 0..inner {
            for (j, v) in line.iter_mut().enumerate() {
                *v = block[j * inner + i];
            }
            fft.process_with_scratch(&mut line, &mut scratch);
            for (j, v) in line.iter().enumerate() {
                block[j * inner + i] = *v;
            }
        }
    });
}

/// What [`per_block`] runs on one pair of blocks.
pub type BlockFn<'a, A, B> = &'a (dyn Fn(&[A], &mut [B]) -> Result<(), OpError> + Sync);

/// Runs `f(source block, destination block)` over matching blocks of `src` and `dst` (one
/// outer index each), in parallel; the first error by block.
pub fn per_block<A: Sync, B: Send>(
    (src, src_block): (&[A], usize),
    (dst, dst_block): (&mut [B], usize),
    f: BlockFn<A, B>,
) -> Result<(), OpError> {
    if src_block == 0 || dst_block == 0 {
        return Ok(());
    }
    let mut pairs: Vec<(&[A], &mut [B])> = src
        .chunks(src_block)
        .zip(dst.chunks_mut(dst_block))
        .collect();
    par::try_for_each_mut(&mut pairs, &|i, (s, d)| f(s, d).map_err(|e| (i, e)))
}
