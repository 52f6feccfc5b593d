//! How ScatterNDUpdate shares its output out between tasks: contiguous ranges balanced by
//! the work counted in them, and whether the tuples' offsets are in order.

use std::ops::Range;

use crate::kernel::{pieces, split_range, PAR_MIN_ELEMENTS};
use crate::par;

/// Fine ranges of the output that [`balanced_ranges`] counts tuples in.
const FINE_RANGES: usize = 4096;

/// The order of the tuples' offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Order {
    /// Never decreasing (sorted rows; all the same).
    Ascending,
    /// Never increasing, and not all the same.
    Descending,
    Scattered,
}

/// The output's ranges (contiguous, in order, covering it), the work counted in each, the
/// offsets' order, and whether the tasks fill the output as they go ([`Shares::copying`]).
#[derive(Debug, PartialEq)]
pub(super) struct Layout {
    pub(super) ranges: Vec<Range<usize>>,
    pub(super) costs: Vec<u64>,
    pub(super) order: Order,
    pub(super) fills: bool,
}

/// How [`balanced_ranges`] shares the output out.
pub(super) struct Shares {
    /// Ranges wanted when the offsets are in order.
    pub(super) ranges: usize,
    /// Ranges at most when they are not: one per thread, since each task then scans every
    /// tuple, and with slices under 64 elements that scan is the cost.
    pub(super) scattered: usize,
    /// Whether the tasks may copy the data in as they go, which then counts as work too.
    /// Only offsets in order do ([`Layout::fills`]): scattered slices land all over a range
    /// long before it is copied, and a copy first, by all threads, is faster (a 64 MB sum
    /// of 1M power-law rows: 19.6 ms copied first, 21.4 ms filled as it went).
    pub(super) copying: bool,
}

/// Contiguous, non-empty ranges covering `0..n` (at most [`Shares`] says) that get about
/// equal shares of the work, each tuple counted (its `s` elements) in the fine range (at
/// most 1/4096 of the output) where its slice starts, so that skewed indices (a power law, a
/// few hot rows) still share the work out evenly; with `copying`, each fine range's length
/// counts too. Cuts fall on fine-range boundaries. A fine range with more than a share of
/// the work left stands alone: with more ranges than threads, the other threads share the
/// rest out around it.
pub(super) fn balanced_ranges(n: usize, s: usize, offsets: &[usize], shares: Shares) -> Layout {
    if shares.ranges <= 1 {
        return Layout {
            ranges: std::iter::once(0..n).collect(),
            costs: vec![1],
            order: Order::Scattered,
            fills: false,
        };
    }
    // A power of two, so that a shift finds an offset's range (a division per tuple took a
    // tenth of a 1M-tuple scatter).
    let fine = n.div_ceil(FINE_RANGES).max(1).next_power_of_two();
    let shift = fine.trailing_zeros();
    let (counts, order) = census(offsets, shift, n.div_ceil(fine));
    let k = match order {
        Order::Scattered => shares.ranges.min(shares.scattered).max(1),
        _ => shares.ranges,
    };
    let fills = shares.copying && order != Order::Scattered;
    let cost = |f: usize, c: u64| -> u64 {
        let len = ((f + 1) * fine).min(n) - f * fine;
        c * s as u64 + if fills { len as u64 } else { 0 }
    };
    let mut left: u64 = (counts.iter().enumerate()).map(|(f, &c)| cost(f, c)).sum();
    let (mut ranges, mut costs) = (Vec::with_capacity(k), Vec::with_capacity(k));
    // The open range: where it starts, and its work so far.
    let (mut start, mut acc) = (0usize, 0u64);
    for (f, &c) in counts.iter().enumerate() {
        let here = cost(f, c);
        let (from, end) = (f * fine, ((f + 1) * fine).min(n));
        let to_make = (k - ranges.len()) as u64;
        if to_make > 1 && from > start && here * to_make > left {
            ranges.push(start..from);
            costs.push(acc);
            (start, left, acc) = (from, left - acc, 0);
        }
        acc += here;
        let to_make = (k - ranges.len()) as u64;
        if to_make > 1 && acc * to_make >= left && end < n {
            ranges.push(start..end);
            costs.push(acc);
            (start, left, acc) = (end, left - acc, 0);
        }
    }
    ranges.push(start..n);
    costs.push(acc);
    Layout {
        ranges,
        costs,
        order,
        fills,
    }
}

/// The tuples counted per fine range (`offset >> shift`, `ranges` of them) and the order of
/// the offsets, in parallel chunks.
fn census(offsets: &[usize], shift: u32, ranges: usize) -> (Vec<u64>, Order) {
    let chunks = split_range(offsets.len(), pieces(offsets.len(), PAR_MIN_ELEMENTS));
    // Per chunk: counts, and whether it never decreases / never increases.
    let mut parts: Vec<(Vec<u64>, bool, bool)> = vec![(Vec::new(), true, true); chunks.len()];
    par::for_each_mut(&mut parts, &|i, (counts, up, down)| {
        let chunk = &offsets[chunks[i].clone()];
        *counts = vec![0u64; ranges];
        for (&off, &next) in chunk.iter().zip(chunk.iter().skip(1)) {
            *up &= next >= off;
            *down &= next <= off;
        }
        for &off in chunk {
            if let Some(c) = counts.get_mut(off >> shift) {
                *c += 1;
            }
        }
    });
    let seams = chunks
        .iter()
        .skip(1)
        .map(|c| (offsets[c.start - 1], offsets[c.start]));
    let up = parts.iter().all(|p| p.1) && seams.clone().all(|(a, b)| b >= a);
    let down = parts.iter().all(|p| p.2) && seams.clone().all(|(a, b)| b <= a);
    let mut counts = vec![0u64; ranges];
    for (part, ..) in &parts {
        for (c, &p) in counts.iter_mut().zip(part) {
            *c += p;
        }
    }
    let order = match (up, down) {
        (true, _) => Order::Ascending,
        (false, true) => Order::Descending,
        _ => Order::Scattered,
    };
    (counts, order)
}
