//! An f32 output of planes written straight into its capacity by parallel tasks, each of
//! which owns the same stretch of every plane of one item: task `item * blocks + b` owns
//! values `b * stretch ..` of each of the item's planes. The convolution by blocks of
//! positions and the transposed one by blocks of rows write their outputs so: no zero fill
//! of the whole output first, and each block's values written while in cache.
//!
//! The one place of their `unsafe`: a task writes its stretches front to back through
//! [`Share`], which counts what it wrote per stretch, and the output gets its length only
//! when every stretch was written to its end.

use std::mem::MaybeUninit;

use crate::op::{codes, OpError};
use crate::par::{self, TaskResult};

/// One task's stretches: the same values of each of its item's planes.
pub(crate) struct Share<'a> {
    /// The item (the planes `item * per_item ..`).
    pub(crate) item: usize,
    /// Where the stretches start within their planes.
    pub(crate) first: usize,
    /// Each stretch and how many of its values are written.
    stretches: Vec<(&'a mut [MaybeUninit<f32>], usize)>,
}

impl Share<'_> {
    /// Values per stretch (the last block of a plane may be shorter).
    pub(crate) fn len(&self) -> usize {
        self.stretches.first().map_or(0, |s| s.0.len())
    }

    /// Writes `values` next in stretch `p` (the item's plane `p`).
    ///
    /// Panics when they run past the stretch's end (a caller's bug).
    pub(crate) fn push(&mut self, p: usize, values: &[f32]) {
        let (stretch, done) = &mut self.stretches[p];
        for (slot, &v) in stretch[*done..][..values.len()].iter_mut().zip(values) {
            slot.write(v);
        }
        *done += values.len();
    }

    /// Writes the next `n` values of stretch `p` by `init`, which proves it by handing the
    /// same slots back initialised (a transpose that writes them out of order).
    ///
    /// Panics when they run past the stretch's end or `init` returns other slots (a
    /// caller's bug, never unsound).
    pub(crate) fn init_with(
        &mut self,
        p: usize,
        n: usize,
        init: impl FnOnce(&mut [MaybeUninit<f32>]) -> &mut [f32],
    ) {
        let (stretch, done) = &mut self.stretches[p];
        par::init_slots(&mut stretch[*done..][..n], init);
        *done += n;
    }

    /// Writes `n` zeros next in stretch `p` and hands them back to be added into.
    ///
    /// Panics when they run past the stretch's end (a caller's bug).
    pub(crate) fn zeros(&mut self, p: usize, n: usize) -> &mut [f32] {
        let (stretch, done) = &mut self.stretches[p];
        let slots = &mut stretch[*done..][..n];
        slots.fill(MaybeUninit::new(0.0));
        *done += n;
        // SAFETY: every slot of `slots` was just written, and `MaybeUninit<f32>` has the
        // layout of `f32`; the borrow of `self` keeps the slots from being written again.
        unsafe { &mut *(slots as *mut [MaybeUninit<f32>] as *mut [f32]) }
    }
}

/// The output of `items * per_item` planes of `plane` values, each cut into stretches of
/// `stretch` values, written by `task(t, share)` for each task `t` (in parallel): an error
/// if any stretch was left short.
pub(crate) fn write_in_stretches(
    items: usize,
    per_item: usize,
    plane: usize,
    stretch: usize,
    task: &(dyn Fn(usize, &mut Share) -> TaskResult + Sync),
) -> Result<Vec<f32>, OpError> {
    let len = items * per_item * plane;
    let mut out: Vec<f32> = crate::kernel::try_with_capacity(len)?;
    let (stretch, plane) = (stretch.max(1), plane.max(1));
    let blocks = plane.div_ceil(stretch);
    let mut shares: Vec<Share> = (0..items * blocks)
        .map(|t| Share {
            item: t / blocks,
            first: (t % blocks) * stretch,
            stretches: Vec::with_capacity(per_item),
        })
        .collect();
    for (p, dst) in out.spare_capacity_mut()[..len]
        .chunks_mut(plane)
        .enumerate()
    {
        for (b, s) in dst.chunks_mut(stretch).enumerate() {
            shares[(p / per_item) * blocks + b].stretches.push((s, 0));
        }
    }
    par::try_for_each_mut(&mut shares, task)?;
    let full = shares
        .iter()
        .all(|s| s.stretches.iter().all(|(s, done)| *done == s.len()));
    if !full {
        return Err(OpError::new(
            codes::INTERNAL,
            "internal error: a kernel left part of its output unwritten",
        ));
    }
    drop(shares);
    // SAFETY: the first `len` slots of the capacity were cut into disjoint stretches, and
    // each stretch's count reached its length; `Share` writes only front to back from its
    // count, so every slot was written. `f32: Copy`.
    unsafe { out.set_len(len) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stretches in any order and at any thread count land where they belong; a stretch
    /// left short is an error, not uninitialised values, and slots said to be written that
    /// are not the stretch's are a panic.
    #[test]
    fn every_stretch_lands_in_its_plane_or_the_output_is_refused() {
        for threads in 1..=3 {
            let out = irun_opkit::testing::on_threads(threads, || {
                write_in_stretches(2, 3, 10, 4, &|_, share| {
                    for p in 0..3 {
                        let plane = share.item * 3 + p;
                        let half = share.len() / 2;
                        let values: Vec<f32> = (share.first..share.first + half)
                            .map(|j| (plane * 10 + j) as f32)
                            .collect();
                        share.push(p, &values);
                        let (first, rest) = (share.first + half, share.len() - half);
                        if p == 1 {
                            let values: Vec<f32> = (first..first + rest)
                                .map(|j| (plane * 10 + j) as f32)
                                .collect();
                            share.init_with(p, rest, |slots| slots.write_copy_of_slice(&values));
                            continue;
                        }
                        for (i, v) in share.zeros(p, rest).iter_mut().enumerate() {
                            *v += (plane * 10 + first + i) as f32;
                        }
                    }
                    Ok(())
                })
            })
            .unwrap();
            let want: Vec<f32> = (0..60).map(|i| i as f32).collect();
            assert_eq!(out, want, "{threads} threads");
        }
        let short = write_in_stretches(1, 2, 5, 2, &|_, share| {
            share.push(0, &vec![1.0; share.len()]);
            Ok(())
        });
        assert!(short.is_err());
        let elsewhere = std::panic::catch_unwind(|| {
            write_in_stretches(1, 1, 4, 4, &|_, share| {
                share.init_with(0, 4, |_| Box::leak(Box::new([1.0f32; 4])).as_mut_slice());
                Ok(())
            })
        });
        assert!(elsewhere.is_err(), "slots handed back from elsewhere");
    }
}
