//! The one copy kernel behind Transpose, Slice, Broadcast, Tile, Split, and reductions over
//! non-adjacent axes: the output, in
//! row-major order, read from the input at `base + sum(coord[k] * strides[k])`, strides in
//! elements and possibly 0 (broadcast, repeat) or negative (a reversing slice). Generic over
//! the element width only ([`Word`]), so four instantiations serve every type.

use irun_tensor::{with_words, Tensor, Word, WordVec};

use crate::kernel::{try_zeroed, PAR_MIN_ELEMENTS};
use crate::op::{codes, OpError};
use crate::par;

/// Where the output's values come from in the input.
#[derive(Clone, Debug, PartialEq)]
pub struct Strided {
    pub out_shape: Vec<usize>,
    /// Offset in the input of output position 0.
    pub base: isize,
    /// Input element stride of each output dim.
    pub strides: Vec<isize>,
}

impl Strided {
    /// The row-major layout of `shape` under `perm` (output dim `i` is input dim `perm[i]`).
    pub fn permuted(shape: &[usize], perm: &[usize]) -> Strided {
        let st = row_major_strides(shape);
        Strided {
            out_shape: perm.iter().map(|&p| shape[p]).collect(),
            base: 0,
            strides: perm.iter().map(|&p| st[p]).collect(),
        }
    }

    /// Output dims of 1 dropped, and neighbours merged where the input is contiguous across
    /// them: fewer, longer rows for the copy loop.
    fn collapsed(&self) -> (Vec<usize>, Vec<isize>) {
        let mut dims: Vec<usize> = Vec::new();
        let mut strides: Vec<isize> = Vec::new();
        for (&d, &s) in self.out_shape.iter().zip(&self.strides) {
            if d == 1 {
                continue;
            }
            match (dims.last_mut(), strides.last_mut()) {
                (Some(pd), Some(ps)) if *ps == s * d as isize => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    dims.push(d);
                    strides.push(s);
                }
            }
        }
        (dims, strides)
    }

    /// The copied values of `t`. Every offset the layout can reach is checked against `t`
    /// first, so a wrong layout is an error, never an out-of-bounds read.
    pub fn apply(&self, t: &Tensor, op: &str) -> Result<WordVec, OpError> {
        let words = t.words().ok_or_else(|| {
            OpError::new(
                codes::UNSUPPORTED_TYPE,
                format!("{op} on string tensors is not implemented"),
            )
        })?;
        if self.out_shape.iter().all(|&d| d > 0) {
            let (mut lo, mut hi) = (self.base, self.base);
            for (&d, &s) in self.out_shape.iter().zip(&self.strides) {
                let reach = (d as isize - 1) * s;
                if reach < 0 {
                    lo += reach;
                } else {
                    hi += reach;
                }
            }
            if lo < 0 || hi >= t.len() as isize {
                return Err(OpError::new(
                    codes::RUN_SHAPE,
                    format!(
                        "{op}: internal error: a copy would read offsets {lo}..={hi} of {} values",
                        t.len()
                    ),
                ));
            }
        }
        with_words!(words, w => Ok(Word::into_word_vec(self.copy(w)?)))
    }

    fn copy<W: Word>(&self, src: &[W]) -> Result<Vec<W>, OpError> {
        let n: usize = self.out_shape.iter().product();
        let (dims, strides) = self.collapsed();
        let Some((&inner, outer)) = dims.split_last() else {
            return par::build(n, PAR_MIN_ELEMENTS, &|_, out| {
                if n == 1 {
                    out.push(src[self.base as usize]);
                }
            });
        };
        let inner_stride = *strides.last().expect("same length as dims");
        if inner_stride != 1 && outer.last().is_some() && strides[outer.len() - 1] == 1 {
            return self.copy_transposing(src, &dims, &strides);
        }
        let outer_strides = &strides[..outer.len()];
        par::build(n, PAR_MIN_ELEMENTS, &|start, out| {
            let end = start + out.remaining();
            let mut coords = vec![0usize; outer.len()];
            let mut rest = start / inner;
            for k in (0..outer.len()).rev() {
                coords[k] = rest % outer[k];
                rest /= outer[k];
            }
            let mut col = start % inner;
            let mut done = start;
            while done < end {
                let len = (inner - col).min(end - done);
                let row: isize = coords
                    .iter()
                    .zip(outer_strides)
                    .map(|(&c, &s)| c as isize * s)
                    .sum();
                let first = self.base + row + col as isize * inner_stride;
                if inner_stride == 1 {
                    let f = first as usize;
                    out.extend_from_slice(&src[f..f + len]);
                } else if inner_stride == 0 {
                    // A value repeated along the row (Broadcast of a [n, 1] column).
                    out.repeat(src[first as usize], len);
                } else {
                    for i in 0..len {
                        out.push(src[(first + i as isize * inner_stride) as usize]);
                    }
                }
                done += len;
                col = 0;
                for k in (0..outer.len()).rev() {
                    coords[k] += 1;
                    if coords[k] < outer[k] {
                        break;
                    }
                    coords[k] = 0;
                }
            }
        })
    }
}

impl Strided {
    /// The copy when the last two output dims are a transpose: the next-to-last reads the
    /// input contiguously, the last with a stride. Row by row, every output element would
    /// read its own cache line, and for wide planes the lines were gone again before the next
    /// 15 rows needed them (a [65536, 64] transpose took 13.6 ms); tile by tile, a line
    /// stays in L1 for the `TILE_ROWS` output rows that read it.
    fn copy_transposing<W: Word>(
        &self,
        src: &[W],
        dims: &[usize],
        strides: &[isize],
    ) -> Result<Vec<W>, OpError> {
        /// Output rows per tile: 16 four-byte values fill a cache line.
        const TILE_ROWS: usize = 16;
        /// Output columns per tile: that many input lines stay in L1 (256 x 64 bytes).
        const TILE_COLS: usize = 256;
        let r = dims.len();
        let (a, b, sb) = (dims[r - 2], dims[r - 1], strides[r - 1]);
        let (outer, outer_strides) = (&dims[..r - 2], &strides[..r - 2]);
        let n: usize = dims.iter().product();
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut out = try_zeroed::<W>(n)?;
        let grain = b * TILE_ROWS.max(PAR_MIN_ELEMENTS.div_ceil(b));
        par::for_each_split_mut(&mut out, grain, &|start, chunk| {
            let mut row = start / b;
            let mut done = 0;
            while done < chunk.len() {
                // A run of output rows inside one plane (one outer coordinate).
                let (plane, a0) = (row / a, row % a);
                let run = (a - a0).min((chunk.len() - done) / b);
                let mut rest = plane;
                let mut base = self.base + a0 as isize;
                for k in (0..outer.len()).rev() {
                    base += (rest % outer[k]) as isize * outer_strides[k];
                    rest /= outer[k];
                }
                let dst = &mut chunk[done..done + run * b];
                // Only 4-byte words: a cast of 2- or 8-byte words to u32 also succeeds when
                // lengths and alignment allow, but gives two values per 8-byte word (i64
                // indices came out with their halves mixed) or half as many (f16 read past
                // the block's end).
                let four_byte = std::mem::size_of::<W>() == 4 && sb > 0;
                if let (Some(src), Some(dst)) = (
                    bytemuck::try_cast_slice::<W, u32>(src)
                        .ok()
                        .filter(|_| four_byte),
                    bytemuck::try_cast_slice_mut::<W, u32>(dst)
                        .ok()
                        .filter(|_| four_byte),
                ) {
                    // 4-byte values: 16 x 16 blocks in registers, a line of 16 values each
                    // way per load and store (the loop below moves a value at a time).
                    let sb = sb as usize;
                    for r0 in (0..run).step_by(TILE_ROWS) {
                        let rows = TILE_ROWS.min(run - r0);
                        for c0 in (0..b).step_by(TILE_ROWS) {
                            let cols = TILE_ROWS.min(b - c0);
                            let from = (base + r0 as isize) as usize + c0 * sb;
                            crate::transpose16::block(
                                (&src[from..], sb),
                                cols,
                                rows,
                                (&mut dst[r0 * b + c0..], b),
                            );
                        }
                    }
                    done += run * b;
                    row += run;
                    continue;
                }
                for r0 in (0..run).step_by(TILE_ROWS) {
                    let r1 = (r0 + TILE_ROWS).min(run);
                    for c0 in (0..b).step_by(TILE_COLS) {
                        let c1 = (c0 + TILE_COLS).min(b);
                        for i in r0..r1 {
                            let from = base + i as isize;
                            for (j, d) in dst[i * b + c0..i * b + c1].iter_mut().enumerate() {
                                *d = src[(from + (c0 + j) as isize * sb) as usize];
                            }
                        }
                    }
                }
                done += run * b;
                row += run;
            }
        });
        Ok(out)
    }
}

/// Element strides of a row-major shape.
pub fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut st = vec![1isize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        st[k] = st[k + 1] * shape[k + 1] as isize;
    }
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(s: &Strided, src: &[u32]) -> Vec<u32> {
        s.copy(src).unwrap()
    }

    /// The transposing copy of a `[rows, cols]` matrix in words of type `W`, against the
    /// definition: every width, square and not, small (the i64 indices of a 2x2 MaxPool came
    /// out with halves of two values mixed) and past one 16 x 16 block.
    fn transposes_words_of<W: Word + From<u8> + PartialEq + std::fmt::Debug>() {
        for (rows, cols) in [(2, 2), (3, 5), (16, 16), (17, 40), (40, 33)] {
            let src: Vec<W> = (0..rows * cols).map(|v| W::from((v % 251) as u8)).collect();
            let t = Strided::permuted(&[rows, cols], &[1, 0]);
            let want: Vec<W> = (0..cols * rows)
                .map(|o| src[(o % rows) * cols + o / rows])
                .collect();
            assert_eq!(t.copy(&src).unwrap(), want, "{rows}x{cols}");
        }
    }

    #[test]
    fn transposes_every_word_width() {
        transposes_words_of::<u8>();
        transposes_words_of::<u16>();
        transposes_words_of::<u32>();
        transposes_words_of::<u64>();
    }

    #[test]
    fn transposes_reverses_and_repeats() {
        let src: Vec<u32> = (0..6).collect();
        // [2,3] -> [3,2]
        assert_eq!(
            run(&Strided::permuted(&[2, 3], &[1, 0]), &src),
            vec![0, 3, 1, 4, 2, 5]
        );
        // Reversed rows of [2,3]: base 3, strides [-3, 1].
        let rev = Strided {
            out_shape: vec![2, 3],
            base: 3,
            strides: vec![-3, 1],
        };
        assert_eq!(run(&rev, &src), vec![3, 4, 5, 0, 1, 2]);
        // Row 1 repeated twice: stride 0.
        let rep = Strided {
            out_shape: vec![2, 3],
            base: 3,
            strides: vec![0, 1],
        };
        assert_eq!(run(&rep, &src), vec![3, 4, 5, 3, 4, 5]);
        let one = Strided {
            out_shape: vec![1, 1],
            base: 4,
            strides: vec![0, 0],
        };
        assert_eq!(run(&one, &src), vec![4]);
        let empty = Strided {
            out_shape: vec![0, 3],
            base: 0,
            strides: vec![3, 1],
        };
        assert_eq!(run(&empty, &src), Vec::<u32>::new());
    }

    /// Each output position's value by its definition: `base + sum(coord * stride)`.
    fn direct(s: &Strided, src: &[u32]) -> Vec<u32> {
        let n: usize = s.out_shape.iter().product();
        (0..n)
            .map(|mut i| {
                let mut at = s.base;
                for (&d, &st) in s.out_shape.iter().zip(&s.strides).rev() {
                    at += (i % d) as isize * st;
                    i /= d;
                }
                src[at as usize]
            })
            .collect()
    }

    /// The tiled path (last two output dims a transpose) against the definition: planes
    /// that are not whole tiles, several planes, tasks that split planes, a reversed
    /// strided dim, and inputs wide enough to run in parallel.
    #[test]
    fn tiled_transposes_equal_the_definition() {
        let cases: [(&[usize], &[usize]); 6] = [
            (&[33, 17], &[1, 0]),
            (&[3, 5, 70], &[0, 2, 1]),
            (&[2, 3, 4, 5], &[0, 2, 3, 1]),
            (&[2, 40, 300], &[0, 2, 1]),
            (&[5000, 64], &[1, 0]),
            (&[3, 1, 700, 9], &[3, 0, 2, 1]),
        ];
        for (shape, perm) in cases {
            let n: usize = shape.iter().product();
            let src: Vec<u32> = (0..n as u32).collect();
            let s = Strided::permuted(shape, perm);
            assert_eq!(run(&s, &src), direct(&s, &src), "{shape:?} by {perm:?}");
        }
        // [40, 300] read transposed with its rows reversed: the strided dim runs backwards.
        let src: Vec<u32> = (0..12_000).collect();
        let rev = Strided {
            out_shape: vec![300, 40],
            base: 39 * 300,
            strides: vec![1, -300],
        };
        assert_eq!(run(&rev, &src), direct(&rev, &src));
    }
}
