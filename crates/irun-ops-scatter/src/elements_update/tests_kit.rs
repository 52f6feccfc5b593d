//! What the kernel tests share: [`Scatter`], a ScatterElementsUpdate-12 case on 1-D or 2-D
//! data that runs the op at a thread count, with the indices stored as i64 or i32 and the
//! data owned by the op or kept by the caller, and checks it against the spec's loop
//! ([`Scatter::expected`]), one update at a time, bit for bit; and the index generators and
//! the out-of-range check the test files use.

use std::sync::Arc;

use irun_tensor::{Scalar, Tensor};

use super::*;
use crate::testing::{assert_same_bits, bools, f32s, f64s, i32s, i64s, on_threads, BitPattern};

/// The reductions the kit's loop runs on integers, `none` first.
pub(super) const EVERY_REDUCTION: [Reduction; 5] = [
    Reduction::None,
    Reduction::Sum,
    Reduction::Prod,
    Reduction::Max,
    Reduction::Min,
];

/// An element type the tests scatter: its tensors and the spec's combines.
pub(super) trait Value: Scalar + BitPattern + Send + Sync + 'static {
    fn tensor(shape: &[usize], v: &[Self]) -> Tensor;
    /// The spec's combine for `red`: integers wrap, a boolean sum is or and a product and.
    fn combine(red: Reduction, acc: Self, u: Self) -> Self;
    /// A mean's sum over its count (floats only: the kit's cases take no integer means).
    fn mean(sum: Self, count: u32) -> Self;
}

macro_rules! values {
    ($($t:ty => $tensor:ident, $sum:expr, $prod:expr, $mean:expr;)*) => {$(
        impl Value for $t {
            fn tensor(shape: &[usize], v: &[$t]) -> Tensor {
                $tensor(shape, v)
            }
            fn combine(red: Reduction, a: $t, u: $t) -> $t {
                match red {
                    Reduction::None => u,
                    Reduction::Sum | Reduction::Mean => $sum(a, u),
                    Reduction::Prod => $prod(a, u),
                    // ScatterElementsUpdate's `acc > u ? acc : u` and `acc < u ? acc : u`.
                    Reduction::Max => if a > u { a } else { u },
                    Reduction::Min => if a < u { a } else { u },
                    Reduction::Sub => unreachable!("not among the kit's cases"),
                }
            }
            fn mean(sum: $t, count: u32) -> $t {
                $mean(sum, count)
            }
        }
    )*};
}

values! {
    f32 => f32s, |a, u| a + u, |a, u| a * u, |s, k| s / k as f32;
    f64 => f64s, |a, u| a + u, |a, u| a * u, |s, k| s / f64::from(k);
    i32 => i32s, i32::wrapping_add, i32::wrapping_mul, no_mean;
    i64 => i64s, i64::wrapping_add, i64::wrapping_mul, no_mean;
    bool => bools, |a: bool, u| a | u, |a: bool, u| a & u, no_mean;
}

fn no_mean<T>(_: T, _: u32) -> T {
    unreachable!("the kit's means are on floats")
}

/// How a [`Scatter`] runs: on how many threads, with the indices stored as i32 (`narrow`)
/// or i64, and on data the caller keeps (`kept`: the output is filled from it, which must
/// stay as it was) or hands over.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub(super) threads: usize,
    pub(super) narrow: bool,
    pub(super) kept: bool,
}

/// Runs on each of `threads`, i64 indices, the data handed over.
pub(super) fn on(threads: &[usize]) -> Vec<Run> {
    let run = |threads| Run {
        threads,
        narrow: false,
        kept: false,
    };
    threads.iter().copied().map(run).collect()
}

/// [`on`] with the data kept by the caller.
pub(super) fn kept(threads: &[usize]) -> Vec<Run> {
    on(threads)
        .into_iter()
        .map(|r| Run { kept: true, ..r })
        .collect()
}

/// [`on`] with the indices stored as i64 and as i32.
pub(super) fn both_widths(runs: &[Run]) -> Vec<Run> {
    let narrow = runs.iter().map(|&r| Run { narrow: true, ..r });
    runs.iter().copied().chain(narrow).collect()
}

/// One scatter: indices and updates of `[idx.len() / inner, inner]` (1-D when `inner` is 1
/// and `axis` 0); along axis 0 `data` of `[data.len() / inner, inner]`, along axis 1 of
/// `[rows, data.len() / rows]`, `rows` those of the indices.
pub(super) struct Scatter<'a, T> {
    pub(super) red: Reduction,
    pub(super) init: bool,
    pub(super) inner: usize,
    pub(super) axis: usize,
    pub(super) data: &'a [T],
    pub(super) idx: &'a [i64],
    pub(super) upd: &'a [T],
}

impl<'a, T: Value> Scatter<'a, T> {
    /// A 1-D scatter with the initial values.
    pub(super) fn new(red: Reduction, data: &'a [T], idx: &'a [i64], upd: &'a [T]) -> Self {
        Scatter {
            red,
            init: true,
            inner: 1,
            axis: 0,
            data,
            idx,
            upd,
        }
    }

    /// The shapes of the data and of the indices.
    fn shapes(&self) -> (Vec<usize>, Vec<usize>) {
        let (n, inner) = (self.idx.len(), self.inner);
        let rows = n / inner;
        match (self.axis, inner) {
            (0, 1) => (vec![self.data.len()], vec![n]),
            (0, _) => (vec![self.data.len() / inner, inner], vec![rows, inner]),
            _ => (vec![rows, self.data.len() / rows], vec![rows, inner]),
        }
    }

    /// The op's output values, or its error.
    pub(super) fn run(&self, run: Run) -> Result<Vec<T>, OpError> {
        let (dshape, ishape) = self.shapes();
        let indices = match run.narrow {
            true => i32s(
                &ishape,
                &self.idx.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            ),
            false => i64s(&ishape, self.idx),
        };
        let data = Arc::new(T::tensor(&dshape, self.data));
        let inputs = vec![
            data.clone(),
            Arc::new(indices),
            Arc::new(T::tensor(&ishape, self.upd)),
            Arc::new(i64s(&[], &[self.axis as i64])),
        ];
        let kept = run.kept.then(|| data.clone());
        drop(data);
        let out = on_threads(run.threads, || seu12(self.red, self.init).eval(inputs));
        if let Some(data) = kept {
            assert_same_bits(data.values::<T>().unwrap(), self.data, "the kept data");
        }
        Ok(out?.remove(0).values::<T>().unwrap().to_vec())
    }

    /// The spec's result: each update in turn, in row-major order of the indices; without
    /// the initial values an element's first update replaces it; a mean divides by the
    /// updates counted (and the initial value, when kept).
    pub(super) fn expected(&self) -> Vec<T> {
        let (dshape, _) = self.shapes();
        let (along, columns) = (dshape[self.axis], dshape.get(1).map_or(1, |&c| c));
        let mut out = self.data.to_vec();
        let mut hits = vec![0u32; out.len()];
        for (p, (&v, &u)) in self.idx.iter().zip(self.upd).enumerate() {
            let t = v.rem_euclid(along as i64) as usize;
            let o = match self.axis {
                0 => t * columns + p % self.inner,
                _ => p / self.inner * columns + t,
            };
            out[o] = match hits[o] > 0 || self.init {
                true => T::combine(self.red, out[o], u),
                false => u,
            };
            hits[o] += 1;
        }
        if self.red == Reduction::Mean {
            for (x, &k) in out.iter_mut().zip(&hits).filter(|(_, &k)| k > 0) {
                *x = T::mean(*x, k + u32::from(self.init));
            }
        }
        out
    }

    /// Each run gives the spec's result bit for bit; `what` names the case on failure.
    #[track_caller]
    pub(super) fn check(&self, what: &str, runs: &[Run]) {
        let want = self.expected();
        for &run in runs {
            let got = self.run(run).unwrap();
            let case = format!(
                "{what} {:?} {}, {run:?}",
                self.red,
                std::any::type_name::<T>()
            );
            assert_same_bits(&got, &want, case);
        }
    }

    /// Each run fails with index `value` at `position` out of range.
    #[track_caller]
    pub(super) fn check_error(&self, value: i64, position: usize, runs: &[Run]) {
        for &run in runs {
            let e = self.run(run).unwrap_err();
            assert_out_of_range(&e, value, position, &format!("{run:?}"));
        }
    }
}

/// `n` indices spread over `0..along` by a multiplicative hash, no two nearby positions on
/// nearby targets (so not local), each `negative_every`-th (if any) written from the end.
pub(super) fn scattered(n: usize, along: usize, negative_every: Option<usize>) -> Vec<i64> {
    (0..n)
        .map(|i| {
            let t = (i as i64 * 2_654_435_761) % along as i64;
            match negative_every {
                Some(k) if i % k == 3 => t - along as i64,
                _ => t,
            }
        })
        .collect()
}

/// `n` updates that wrap i32 sums and products.
pub(super) fn wrapping_i32(n: usize) -> Vec<i32> {
    (0..n as i32)
        .map(|i| i.wrapping_mul(1_103_515_245) >> 3)
        .collect()
}

/// `n` f32 updates of mixed signs, whose sums depend on their order.
pub(super) fn mixed_f32(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 37) % 101) as f32 * 0.013 - 0.6)
        .collect()
}

/// `e` is the out-of-range error for index `value` at `position` (as the op prints a
/// position: `5`, or `3,0` for two dims); `context` names the case on failure.
#[track_caller]
pub(super) fn assert_out_of_range(
    e: &OpError,
    value: impl std::fmt::Display,
    position: impl std::fmt::Display,
    context: &str,
) {
    assert_eq!(e.code, codes::INDEX_OUT_OF_RANGE, "{context}");
    let want = format!("index {value} at position [{position}]");
    assert!(e.message.starts_with(&want), "{context}: {}", e.message);
}
