//! Private folds: an integer histogram on a small output, its positions cut into one
//! contiguous chunk per thread. The first chunk is applied straight to the output; each
//! other chunk is folded into a private copy of the output that starts at the combine's
//! identity; the copies are then folded into the output in chunk order. Every thread runs
//! the plain lean loop with no lists at all.
//!
//! Exact because the combine is associative with an identity on these types (wrapping
//! integer sums and products, minima, maxima, boolean or/and): an element's updates from
//! chunk `k`, folded from the identity and then applied as one, give what applying them one
//! by one would give, and the chunks are applied in position order. Floats are excluded
//! (their sums are not associative), and so are `Sub`, `none` and counted reductions.
//!
//! Split rounds, the alternative ([`super::split`]), partition a share of each round into
//! lists and apply them after. On a 2-core EPYC (Zen 3, 512 KB L2 per core), 16M updates,
//! 2 threads, medians of 3 alternating runs: i32 sums onto 250K elements (1 MB) 33.7 ms in
//! split rounds, 23.1 in private folds (one thread: 35.4); i64 onto 100K (800 KB) 27.3
//! against 25.8. On larger outputs the copies double what the random read-modify-writes
//! reach: onto 1M i64 (8 MB) the folds took 92-101 ms against 72-92 in split rounds, their
//! lean loops at 14 ns an update, so they are kept to outputs of [`Tuning::PRIVATE_MAX_OUTPUT_BYTES`].

use std::ops::Range;

use super::kernel::ElementsKernel;
#[cfg(doc)]
use super::strategy::Tuning;
use crate::kernel::try_with_capacity;
use crate::op::OpError;
use crate::par;
use crate::reduce::{Combine, Elem};
use crate::updates::Updates;

/// Where one chunk folds its positions: into the output, or into a private copy made by
/// the chunk's own task (so that its pages are first touched by the thread that uses them).
enum Fold<'a, T> {
    Out(&'a mut [T]),
    Private(&'a mut Vec<T>),
}

/// Whether a chunk's updates folded into a copy that starts at the combine's identity, the
/// copy then applied to the output as one update an element, give what applying them one
/// by one gives: exact elements and an associative combine with an identity (the module's
/// note).
pub(super) fn folds_from_identity<T: Elem, C: Combine<T>>() -> bool {
    T::EXACT && C::ASSOCIATIVE && C::IDENTITY
}

impl ElementsKernel<'_> {
    /// Runs the folds; `Ok(false)`, with nothing written, when the private copies cannot be
    /// allocated (the caller then runs another path). An index out of range is reported
    /// as the lean pass reports it, the first position's across chunks.
    pub(super) fn run_private_folds<T: Elem, C: Combine<T>, U: Updates<T> + ?Sized>(
        &self,
        out: &mut [T],
        updates: &U,
    ) -> Result<bool, OpError> {
        let n = self.indices.len();
        let chunks = par::threads().min(n).max(1);
        let bound = |k: usize| k * n / chunks;
        let along = out.len();
        // Each copy allocated here, left empty for its chunk's task to fill (so that its
        // pages are first touched by the thread that uses them).
        let Ok(mut copies) = (1..chunks)
            .map(|_| try_with_capacity::<T>(along))
            .collect::<Result<Vec<_>, _>>()
        else {
            return Ok(false);
        };
        let mut work: Vec<(Range<usize>, Fold<'_, T>)> = Vec::with_capacity(chunks);
        work.push((bound(0)..bound(1), Fold::Out(&mut *out)));
        for (k, copy) in copies.iter_mut().enumerate() {
            work.push((bound(k + 1)..bound(k + 2), Fold::Private(copy)));
        }
        par::try_for_each_mut(&mut work, &|_, (positions, fold)| {
            let dst: &mut [T] = match fold {
                Fold::Out(out) => out,
                Fold::Private(copy) => {
                    // Capacity reserved above: no allocation here.
                    copy.resize(along, C::NEUTRAL);
                    copy
                }
            };
            self.lean_range::<T, C, _>(dst, 0, positions.clone(), updates)
                .map_err(|e| (positions.start, e))
        })?;
        fold_copies::<T, C>(out, &copies);
        Ok(true)
    }
}

/// Folds every copy into `out`, in copy order, each stretch of `out` on one task.
fn fold_copies<T: Elem, C: Combine<T>>(out: &mut [T], copies: &[Vec<T>]) {
    par::for_each_split_mut(out, 4096, &|start, stretch| {
        for copy in copies {
            let copy = &copy[start..start + stretch.len()];
            irun_opkit::simd::widest(
                #[inline(always)]
                || {
                    irun_opkit::simd::update_each(stretch, copy, C::apply);
                },
            );
        }
    });
}
