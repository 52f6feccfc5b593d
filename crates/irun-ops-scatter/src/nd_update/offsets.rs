//! The flat element offset in data of each of ScatterNDUpdate's index tuples, checked
//! against the data's dims (negative coordinates counted from the end).

use std::sync::Mutex;

use crate::kernel::count_from_end;
use crate::op::OpError;
use crate::par;
use crate::{index_out_of_range, product};

/// The flat element offset in data of each index tuple, in row-major order; negative
/// coordinates are normalised (`c + dim`), anything still outside `[0, dim)` is an error.
pub(super) fn tuple_offsets(
    indices: crate::kernel::IndexValues<'_>,
    shape: &[usize],
    data: &[usize],
    k: usize,
) -> Result<Vec<usize>, OpError> {
    let dims = &data[..k];
    let tuples = product(&shape[..shape.len() - 1]);
    // Element strides of the addressed dims: coordinate j moves by prod(data[j+1:]).
    let strides: Vec<usize> = (0..k).map(|j| product(&data[j + 1..])).collect();
    if k == 0 {
        return Ok(vec![0; tuples]);
    }
    // Written straight into the vector (a zero-filled 8 MB one cost a tenth of a 1M-row
    // scatter's run), in blocks of tuples read together; the first bad index by position
    // is the error, whichever thread finds it.
    const BLOCK: usize = 4096;
    let first_bad: Mutex<Option<(usize, OpError)>> = Mutex::new(None);
    let offsets = par::build(tuples, BLOCK, &|start, filler| {
        let mut buf = vec![0i64; BLOCK * k];
        let mut flat = Vec::new();
        let mut at = start;
        while filler.remaining() > 0 {
            let len = filler.remaining().min(BLOCK);
            let buf = &mut buf[..len * k];
            indices.read(at * k..(at + len) * k, buf);
            if k == 1 && flat_offsets(buf, dims[0], strides[0], &mut flat) {
                filler.extend_from_slice(&flat);
                at += len;
                continue;
            }
            for (t, tuple) in buf.chunks_exact(k).enumerate() {
                let mut o = 0usize;
                for (j, &v) in tuple.iter().enumerate() {
                    let dim = dims[j] as i64;
                    let c = count_from_end(v, dim);
                    if !(0..dim).contains(&c) {
                        let pos = (at + t) * k + j;
                        let mut bad = first_bad.lock().unwrap_or_else(|p| p.into_inner());
                        if bad.as_ref().is_none_or(|(p, _)| pos < *p) {
                            let e = index_out_of_range(
                                shape,
                                pos,
                                v,
                                &format!("[{}, {}]", -dim, dim - 1),
                                &format!("data dim {j} of size {dim}"),
                            );
                            *bad = Some((pos, e));
                        }
                        // The run fails; the chunk is still filled, as `build` requires.
                        filler.repeat(0, filler.remaining());
                        return;
                    }
                    o += c as usize * strides[j];
                }
                filler.push(o);
            }
            at += len;
        }
    })?;
    match first_bad.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(offsets),
    }
}

/// The offsets of a block of one-coordinate tuples (rows of a matrix; torch's `index_put`
/// with one index), `values` on a dim of `dim` with elements `stride` apart, into `out`, in
/// one vectorised pass when every coordinate is in range; `false`, `out` unspecified, when
/// one is not, for the tuple-by-tuple loop to find and report the first. Tuple by tuple,
/// through the loop over coordinates, these were 9% of a 1M-row sorted ScatterNDUpdate sum.
fn flat_offsets(values: &[i64], dim: usize, stride: usize, out: &mut Vec<usize>) -> bool {
    let d = dim as i64;
    let coordinate = |v: i64| count_from_end(v, d);
    let in_range = irun_opkit::simd::widest(
        #[inline(always)]
        || {
            values.iter().fold(true, |ok, &v| {
                let c = coordinate(v);
                ok & (c >= 0) & (c < d)
            })
        },
    );
    if !in_range {
        return false;
    }
    out.clear();
    irun_opkit::simd::widest(
        #[inline(always)]
        || out.extend(values.iter().map(|&v| coordinate(v) as usize * stride)),
    );
    true
}
