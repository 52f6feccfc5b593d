//! A copy where every output dim reads its own input index through a table: output
//! `[o0, .., ok]` takes input `[t0[o0], .., tk[ok]]`, or the fill value where any table entry is
//! `None`. Pad (every mode), nearest Interpolate and ShuffleChannels-like moves are such maps;
//! the tables are checked against the input's dims when they are built, so the copy cannot
//! read out of bounds.

use irun_tensor::{with_words, Tensor, Word};

use crate::op::{codes, OpError, Value};
use crate::util::{no_strings, output};

/// Per output dim, the input index each output index reads (`None`: the fill value).
#[derive(Debug, Clone, PartialEq)]
pub struct AxisMap {
    tables: Vec<Vec<Option<usize>>>,
}

impl AxisMap {
    /// The map of `tables` over an input of `in_shape`; an error (naming `op`) if a table
    /// entry is past its input dim or the ranks differ.
    pub fn new(
        tables: Vec<Vec<Option<usize>>>,
        in_shape: &[usize],
        op: &str,
    ) -> Result<AxisMap, OpError> {
        let fits = tables.len() == in_shape.len()
            && tables
                .iter()
                .zip(in_shape)
                .all(|(t, &d)| t.iter().flatten().all(|&i| i < d));
        if !fits {
            return Err(OpError::new(
                codes::INTERNAL,
                format!("{op}: an index table does not fit the input {in_shape:?}"),
            ));
        }
        Ok(AxisMap { tables })
    }

    /// The input moved by `begin[i]` along each dim (negative: cropped) into an output of
    /// `out` dims; positions with no input read the fill: a constant pad or a crop.
    pub fn shifted(
        in_shape: &[usize],
        begin: &[i64],
        out: &[usize],
        op: &str,
    ) -> Result<AxisMap, OpError> {
        let tables = in_shape
            .iter()
            .zip(out)
            .enumerate()
            .map(|(i, (&d, &n))| {
                let b = begin.get(i).copied().unwrap_or(0);
                (0..n)
                    .map(|o| {
                        let src = o as i64 - b;
                        (0..d as i64).contains(&src).then_some(src as usize)
                    })
                    .collect()
            })
            .collect();
        AxisMap::new(tables, in_shape, op)
    }

    pub fn out_shape(&self) -> Vec<usize> {
        self.tables.iter().map(Vec::len).collect()
    }

    /// The mapped copy of `x`; `fill` (a one-element tensor of `x`'s type) where a table
    /// says `None`.
    pub fn apply(&self, x: &Tensor, fill: Option<&Tensor>, op: &str) -> Result<Value, OpError> {
        let words = x.words().ok_or_else(|| no_strings(op))?;
        let fill_words = fill.map(|f| f.words().ok_or_else(|| no_strings(op)));
        let out = with_words!(words, w => {
            let fill = match fill_words {
                Some(f) => first_word(f?, w)?,
                None => Default::default(),
            };
            Word::into_word_vec(self.gather(w, x.shape(), fill)?)
        });
        output(x.element_type(), self.out_shape(), out)
    }

    /// The output, built row by row in parallel, each row written once in order (no fill
    /// pass first). Plain stores: streaming ones fence after every run, and a padded row's
    /// runs are short.
    fn gather<W: Word>(&self, src: &[W], in_shape: &[usize], fill: W) -> Result<Vec<W>, OpError> {
        let out_shape = self.out_shape();
        let len: usize = out_shape.iter().product();
        let Some((last, outer)) = self.tables.split_last() else {
            // Rank 0: the one value.
            return Ok(src.to_vec());
        };
        let row = last.len();
        if row == 0 || len == 0 {
            return Ok(Vec::new());
        }
        let strides = crate::strided::row_major_strides(in_shape);
        let runs = runs(last);
        // Slice copies pay where runs are long (padding, cropping); a table of short runs
        // (nearest upsampling repeats each input) is read entry by entry.
        let by_runs = runs.len() * 8 <= row;
        // A short-run table without fill entries, as plain indices.
        let gathered: Option<Vec<usize>> = if by_runs {
            None
        } else {
            last.iter().copied().collect()
        };
        crate::par::build(len, row, &|at, out| {
            // The previous row's input offset: an output row that reads the same input row
            // (nearest upsampling's repeats) is a copy of the one before it.
            let mut previous: Option<(usize, bool)> = None;
            for r in 0..out.remaining() / row {
                // The outer coordinates of this row, from the last outer dim up.
                let mut rest = at / row + r;
                let mut base = 0usize;
                let mut inside = true;
                for (t, &s) in outer.iter().zip(&strides).rev() {
                    let o = rest % t.len();
                    rest /= t.len();
                    match t[o] {
                        Some(i) => base += i * s as usize,
                        None => inside = false,
                    }
                }
                if previous == Some((base, inside)) {
                    out.repeat_last(row);
                    continue;
                }
                previous = Some((base, inside));
                if !inside {
                    out.repeat(fill, row);
                } else if let Some(indices) = &gathered {
                    out.extend_gathered(&src[base..], indices);
                } else if by_runs {
                    for r in &runs {
                        match r.from {
                            Some(from) => {
                                out.extend_from_slice(&src[base + from..base + from + r.len])
                            }
                            None => out.repeat(fill, r.len),
                        }
                    }
                } else {
                    for &i in last {
                        out.push(i.map_or(fill, |i| src[base + i]));
                    }
                }
            }
        })
    }
}

/// A run of output positions of the last dim reading consecutive inputs (`from`) or the
/// fill value (`None`); a row's runs are in order and cover it.
struct Run {
    len: usize,
    from: Option<usize>,
}

/// The last dim's table as maximal runs, so that a row is a few slice copies (a padded
/// row: one run for the data, one per edge value or fill block).
fn runs(table: &[Option<usize>]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    for &from in table {
        if let Some(r) = out.last_mut() {
            let continues = match (r.from, from) {
                (Some(a), Some(b)) => a + r.len == b,
                (None, None) => true,
                _ => false,
            };
            if continues {
                r.len += 1;
                continue;
            }
        }
        out.push(Run { len: 1, from });
    }
    out
}

/// The first word of `f`, which must have the width of `like`.
fn first_word<W: Word>(f: irun_tensor::Words<'_>, _like: &[W]) -> Result<W, OpError> {
    W::of(f).and_then(|v| v.first().copied()).ok_or_else(|| {
        OpError::new(
            codes::RUN_VALUE,
            "the fill value is empty or of another type",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn maps_each_dim_and_fills() {
        let x = i32s(&[2, 3], &[1, 2, 3, 4, 5, 6]);
        let map = AxisMap::new(
            vec![
                vec![None, Some(1), Some(0)],
                vec![Some(2), Some(2), None, Some(0)],
            ],
            &[2, 3],
            "t",
        )
        .unwrap();
        let out = map.apply(&x, Some(&i32s(&[], &[9])), "t").unwrap();
        assert_eq!(*out, i32s(&[3, 4], &[9, 9, 9, 9, 6, 6, 9, 4, 3, 3, 9, 1]));
        // A contiguous last dim is copied as a run.
        let map = AxisMap::new(vec![vec![Some(1)], vec![Some(1), Some(2)]], &[2, 3], "t").unwrap();
        assert_eq!(*map.apply(&x, None, "t").unwrap(), i32s(&[1, 2], &[5, 6]));
    }

    /// Long runs (a padded row) are copied as slices: the same values as entry by entry.
    #[test]
    fn long_runs_copy_as_slices() {
        let x = i32s(&[2, 32], &(0..64).collect::<Vec<_>>());
        let mut row: Vec<Option<usize>> = vec![None; 4];
        row.extend((0..32).map(Some));
        row.extend([Some(31), Some(30), None, None]);
        assert!(runs(&row).len() * 8 <= row.len(), "the run path is taken");
        let map = AxisMap::new(
            vec![vec![Some(1), None, Some(0)], row.clone()],
            &[2, 32],
            "t",
        )
        .unwrap();
        let out = map.apply(&x, Some(&i32s(&[], &[-1])), "t").unwrap();
        let want: Vec<i32> = [Some(1), None, Some(0)]
            .iter()
            .flat_map(|r| {
                row.iter().map(move |c| match (r, c) {
                    (Some(r), Some(c)) => (r * 32 + c) as i32,
                    _ => -1,
                })
            })
            .collect();
        assert_eq!(*out, i32s(&[3, 40], &want));
    }

    /// Nearest upsampling: rows that read the same input row are copies of the row before,
    /// a full table is gathered, a fill row repeats; every row as the tables say.
    #[test]
    fn repeated_rows_and_gathered_rows_read_their_tables() {
        let x = i32s(&[2, 3, 4], &(0..24).collect::<Vec<_>>());
        let planes = vec![Some(1), Some(1), Some(0)];
        let rows = vec![Some(0), Some(0), None, None, Some(2), Some(2), Some(1)];
        let cols = vec![
            Some(3),
            Some(3),
            Some(0),
            Some(0),
            Some(1),
            Some(2),
            Some(2),
        ];
        let map = AxisMap::new(
            vec![planes.clone(), rows.clone(), cols.clone()],
            &[2, 3, 4],
            "t",
        )
        .unwrap();
        let mut want = Vec::new();
        for p in &planes {
            for r in &rows {
                for c in &cols {
                    want.push(match (p, r, c) {
                        (Some(p), Some(r), Some(c)) => (p * 12 + r * 4 + c) as i32,
                        _ => -1,
                    });
                }
            }
        }
        for threads in [1, 2, 3] {
            let out = crate::testing_kit::on_threads(threads, || {
                map.apply(&x, Some(&i32s(&[], &[-1])), "t").unwrap()
            });
            assert_eq!(*out, i32s(&[3, 7, 7], &want), "{threads} threads");
        }
    }

    #[test]
    fn tables_past_the_input_are_refused() {
        assert!(AxisMap::new(vec![vec![Some(2)]], &[2], "t").is_err());
        assert!(AxisMap::new(vec![vec![Some(0)]], &[2, 1], "t").is_err());
    }
}
