//! Test support for the convolution's kernels: the definition in f64, input values, and
//! the geometries every kernel is checked on.

use crate::conv::Geometry;

/// Batches, groups, 1-, 2- and 3-D planes, strides, dilations and padding past the kernel's
/// reach, channel counts off the 16 x 16 transposes and off the GEMM's tiles, and one-group
/// counts of 16, 32, 48 and 64 (the channel-last rows' one to four vectors).
pub(crate) fn cases() -> Vec<Geometry> {
    #[rustfmt::skip]
    let cases = [
        // n, groups, ci, co, input, kernel, out, stride, dil, pad
        (1, 1, 19, 33, [1, 9, 11], [1, 3, 3], [1, 9, 11], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
        (2, 3, 5, 7, [1, 8, 8], [1, 3, 2], [1, 4, 5], [1, 2, 2], [1, 1, 2], [0, 1, 2]),
        (1, 1, 17, 18, [1, 1, 30], [1, 1, 5], [1, 1, 14], [1, 1, 2], [1, 1, 1], [0, 0, 3]),
        (2, 2, 3, 4, [4, 5, 6], [2, 3, 3], [3, 5, 6], [1, 1, 1], [2, 1, 1], [1, 1, 1]),
        (1, 1, 40, 20, [1, 4, 4], [1, 3, 3], [1, 4, 4], [1, 1, 1], [1, 3, 3], [0, 3, 3]),
        (1, 1, 300, 5, [1, 12, 13], [1, 3, 3], [1, 6, 6], [1, 2, 2], [1, 1, 1], [0, 0, 0]),
        (2, 1, 3, 32, [1, 21, 23], [1, 3, 3], [1, 11, 12], [1, 2, 2], [1, 1, 1], [0, 1, 1]),
        (1, 1, 8, 64, [1, 7, 9], [1, 3, 3], [1, 7, 9], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
        (1, 1, 5, 48, [1, 6, 6], [1, 2, 2], [1, 5, 5], [1, 1, 1], [1, 1, 1], [0, 0, 0]),
        (1, 1, 2, 16, [1, 5, 7], [1, 3, 3], [1, 5, 7], [1, 1, 1], [1, 1, 1], [0, 1, 1]),
    ];
    cases
        .iter()
        .map(
            |&(n, groups, ci, co, input, kernel, out, stride, dil, pad)| Geometry {
                n,
                groups,
                ci,
                co,
                input,
                kernel,
                out,
                stride,
                dil,
                pad,
            },
        )
        .collect()
}

/// The convolution of `x [n, groups * ci, *input]` by `w [groups, co, ci, *kernel]` in
/// f64, from the definition (padding reads 0).
pub(crate) fn reference(g: &Geometry, x: &[f32], w: &[f32]) -> Vec<f64> {
    let (input, kernel, out) = (g.input, g.kernel, g.out);
    let plane: usize = input.iter().product();
    let taps: usize = kernel.iter().product();
    let positions: usize = out.iter().product();
    let mut y = vec![0.0; g.n * g.groups * g.co * positions];
    for (i, v) in y.iter_mut().enumerate() {
        let (p, oc, ng) = (i % positions, (i / positions) % g.co, i / positions / g.co);
        let o = [p / (out[1] * out[2]), (p / out[2]) % out[1], p % out[2]];
        for c in 0..g.ci {
            for t in 0..taps {
                let k = [
                    t / (kernel[1] * kernel[2]),
                    (t / kernel[2]) % kernel[1],
                    t % kernel[2],
                ];
                let at: Option<Vec<usize>> = (0..3)
                    .map(|d| {
                        let i = (o[d] * g.stride[d] + k[d] * g.dil[d]).checked_sub(g.pad[d])?;
                        (i < input[d]).then_some(i)
                    })
                    .collect();
                if let Some(at) = at {
                    let xi =
                        (ng * g.ci + c) * plane + (at[0] * input[1] + at[1]) * input[2] + at[2];
                    let wi = (((ng % g.groups) * g.co + oc) * g.ci + c) * taps + t;
                    *v += f64::from(x[xi]) * f64::from(w[wi]);
                }
            }
        }
    }
    y
}

pub(crate) fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}
