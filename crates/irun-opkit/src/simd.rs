//! Running a kernel's inner loop compiled for the widest vector unit the CPU has.
//!
//! The workspace is built for the x86-64 baseline (SSE2), so that one binary runs on every
//! x86-64 machine; loops the compiler vectorises then use 4-lane registers even on a CPU with
//! 16-lane AVX-512 ones. [`widest`] runs a closure inside a function compiled with AVX-512 (or
//! AVX2) enabled, chosen once at run time, so the closure, inlined there, is vectorised for it.
//!
//! Results do not change with the unit: Rust never contracts `a * b + c` into a fused
//! multiply-add on its own and never reorders floating-point operations, so a vectorised loop
//! does per element exactly what the scalar one does.

#[cfg(target_arch = "x86_64")]
use std::sync::OnceLock;

/// The vector units [`widest`] picks between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// AVX-512 F, VL, BW and DQ (16 f32 lanes).
    Avx512,
    /// AVX2 and FMA (8 f32 lanes).
    Avx2,
    /// What the build targets (SSE2 on x86-64).
    Baseline,
}

/// The widest unit this CPU has; detected once.
pub fn unit() -> Unit {
    #[cfg(target_arch = "x86_64")]
    {
        static UNIT: OnceLock<Unit> = OnceLock::new();
        *UNIT.get_or_init(|| {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("avx512vl") && has!("avx512bw") && has!("avx512dq") {
                Unit::Avx512
            } else if has!("avx2") && has!("fma") {
                Unit::Avx2
            } else {
                Unit::Baseline
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Unit::Baseline
    }
}

/// `f()`, compiled for [`unit()`]. Mark `f`'s body `#[inline(always)]` where it calls other
/// functions: only code inlined into the wrapper gets the wider unit.
#[inline(always)]
pub fn widest<R>(f: impl FnOnce() -> R) -> R {
    match unit() {
        // SAFETY: `unit()` returned these units only after `is_x86_feature_detected!` found
        // every feature the wrappers enable on the running CPU.
        #[cfg(target_arch = "x86_64")]
        Unit::Avx512 => unsafe { avx512(f) },
        #[cfg(target_arch = "x86_64")]
        Unit::Avx2 => unsafe { avx2(f) },
        _ => f(),
    }
}

/// # Safety
/// The CPU must have AVX-512 F, VL, BW and DQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
#[inline]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// A hint that `s` is about to be read: every cache line of it is requested at once, so that
/// a few scattered blocks (a sample of a large tensor) arrive in one memory round trip
/// rather than one trip each.
#[inline]
pub fn prefetch_read<T>(s: &[T]) {
    each_line(
        s.as_ptr().cast(),
        std::mem::size_of_val(s),
        prefetch_read_ptr,
    );
}

/// A hint that the `n` elements from `p` are about to be written: every cache line they touch
/// is fetched for ownership ([`prefetch_write_ptr`]). `p` need not point into an allocation.
#[inline]
pub fn prefetch_write<T>(p: *const T, n: usize) {
    each_line(p.cast(), n * std::mem::size_of::<T>(), prefetch_write_ptr);
}

/// Calls `hint` with a pointer to each 64-byte cache line that the `len` bytes from `p`
/// touch, counted from the line of the first byte to the line of the last (16 f64 from the
/// middle of a line touch three). A slice within one line costs one hint and a compare:
/// these hints run once per tuple in loops that wait on memory, where every instruction
/// more means fewer tuples in flight (a 64 MB ScatterNDUpdate sum of rows of 16 f32, one
/// line each, went from 15.1 to 17.8 ms with an iterator here).
#[inline(always)]
fn each_line(p: *const u8, len: usize, mut hint: impl FnMut(*const u8)) {
    if len == 0 {
        return;
    }
    let skew = p as usize % 64;
    let first = p.wrapping_sub(skew);
    let span = skew + len - 1;
    hint(first);
    let mut line = 64;
    while line <= span {
        hint(first.wrapping_add(line));
        line += 64;
    }
}

/// A hint that the cache line of `p` is about to be read. `p` need not point into an
/// allocation: a prefetch never faults.
#[inline(always)]
pub fn prefetch_read_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A hint that the cache line of `p` is about to be written: fetched for ownership
/// (`prefetchw`) ahead of the stores, which then do not wait on memory in the store buffer.
/// `p` need not point into an allocation: a prefetch never faults.
#[inline(always)]
pub fn prefetch_write_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(p.cast());
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// `_mm_prefetch` with `HINT` of the line of `p`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch<const HINT: i32>(p: *const i8) {
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (a CPU without PREFETCHW
    // runs the write hint as a NOP); a prefetch never faults and changes nothing the program
    // can observe, whatever the address.
    unsafe { std::arch::x86_64::_mm_prefetch::<HINT>(p) };
}

/// `*d = f(*d, s)` for each element `d` of `dst` and `s` of `src` (as far as the shorter
/// goes), written so that it vectorises into plain stores. Where `f` keeps the old value on
/// some lanes (`max`, ReLU's `if x > 0 { x } else { 0 }`), LLVM turns the in-place loop into
/// masked stores (`vmaskmovps`), which AMD cores run microcoded, several times slower than
/// the whole loop otherwise (a k = 1 TopK down 21 channels spent three quarters of its time
/// on them). Reading the old values from a copy of each block, not from `dst`, leaves
/// nothing to mask. Call it inside [`widest`] like any loop.
#[inline(always)]
pub fn update_each<T: Copy + Default, S: Copy>(dst: &mut [T], src: &[S], f: impl Fn(T, S) -> T) {
    const BLOCK: usize = 64;
    let mut old = [T::default(); BLOCK];
    for (d, s) in dst.chunks_mut(BLOCK).zip(src.chunks(BLOCK)) {
        let n = d.len().min(s.len());
        let old = &mut old[..n];
        old.copy_from_slice(&d[..n]);
        for ((d, &o), &s) in d.iter_mut().zip(old.iter()).zip(s) {
            *d = f(o, s);
        }
    }
}

/// `*d = f(*d)` for each element of `dst`, as [`update_each`] writes it.
#[inline(always)]
pub fn map_each<T: Copy + Default>(dst: &mut [T], f: impl Fn(T) -> T) {
    const BLOCK: usize = 64;
    let mut old = [T::default(); BLOCK];
    for d in dst.chunks_mut(BLOCK) {
        let old = &mut old[..d.len()];
        old.copy_from_slice(d);
        for (d, &o) in d.iter_mut().zip(old.iter()) {
            *d = f(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both helpers give the plain loop's values at lengths around their block size, and
    /// `update_each` stops at the shorter slice, leaving the rest of `dst` as it was.
    #[test]
    fn block_updates_are_the_plain_loops() {
        let pick = |a: f32, x: f32| if x > a || x.is_nan() { x } else { a };
        for len in [0, 1, 63, 64, 65, 130] {
            let dst: Vec<f32> = (0..len).map(|i| ((i * 37 % 11) as f32) - 5.0).collect();
            let src: Vec<f32> = (0..len)
                .map(|i| {
                    if i % 9 == 4 {
                        f32::NAN
                    } else {
                        ((i * 13 % 7) as f32) - 3.0
                    }
                })
                .collect();
            let mut got = dst.clone();
            update_each(&mut got, &src, pick);
            let want: Vec<f32> = dst.iter().zip(&src).map(|(&a, &x)| pick(a, x)).collect();
            assert_eq!(bits(&got), bits(&want), "update, {len}");
            let mut got = dst.clone();
            update_each(&mut got, &src[..len / 2], pick);
            let mut want = dst.clone();
            for (a, &x) in want.iter_mut().zip(&src[..len / 2]) {
                *a = pick(*a, x);
            }
            assert_eq!(bits(&got), bits(&want), "update of a shorter source, {len}");
            let relu = |x: f32| if x > 0.0 || x.is_nan() { x } else { 0.0 };
            let mut got = src.clone();
            map_each(&mut got, relu);
            let want: Vec<f32> = src.iter().map(|&x| relu(x)).collect();
            assert_eq!(bits(&got), bits(&want), "map, {len}");
        }
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The hint reads nothing: any slice, empty or ending mid-line, leaves it unchanged.
    #[test]
    fn prefetching_changes_nothing() {
        let v: Vec<u16> = (0..1000).collect();
        for (a, b) in [(0, 0), (0, 1000), (3, 97), (999, 1000)] {
            prefetch_read(&v[a..b]);
        }
        prefetch_read::<f64>(&[]);
        // Addresses past the end, far away or null: hints that must not fault.
        for ahead in [0, 999, 1000, 1128, usize::MAX / 4] {
            prefetch_read_ptr(v.as_ptr().wrapping_add(ahead));
            prefetch_write_ptr(v.as_ptr().wrapping_add(ahead));
        }
        prefetch_read_ptr(std::ptr::null::<u8>());
        prefetch_write(v.as_ptr().wrapping_add(990), 300);
        prefetch_write(std::ptr::null::<f64>(), 40);
        assert!(v.iter().enumerate().all(|(i, &x)| usize::from(x) == i));
    }

    /// The lines hinted are exactly the lines the bytes touch, each once, in order, from any
    /// place in a line and for any length (none for none).
    #[test]
    fn each_line_hints_every_touched_line_once() {
        let buf = vec![0u8; 1024];
        let base = buf.as_ptr().wrapping_add(64 - buf.as_ptr() as usize % 64);
        for skew in 0..64 {
            for len in 0..300 {
                let p = base.wrapping_add(skew);
                let mut got = Vec::new();
                each_line(p, len, |line| got.push(line as usize));
                let want: Vec<usize> = match len {
                    0 => Vec::new(),
                    _ => (p as usize / 64..=(p as usize + len - 1) / 64)
                        .map(|l| l * 64)
                        .collect(),
                };
                assert_eq!(got, want, "skew {skew} len {len}");
            }
        }
    }

    /// Every unit this CPU has gives the baseline's bits on an order-sensitive float loop.
    #[test]
    fn every_unit_gives_the_baselines_bits() {
        let x: Vec<f32> = (0..1003).map(|i| (i as f32 * 0.37).sin()).collect();
        let body = || {
            let mut acc = vec![0f32; x.len()];
            for (t, w) in [0.3f32, -1.7, 2.9].iter().enumerate() {
                for (a, v) in acc.iter_mut().zip(&x[t..]) {
                    *a += w * v;
                }
            }
            acc.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        let want = body();
        assert_eq!(widest(body), want);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                // SAFETY: the features were just detected.
                assert_eq!(unsafe { avx2(body) }, want);
            }
            if unit() == Unit::Avx512 {
                // SAFETY: `unit()` detected them.
                assert_eq!(unsafe { avx512(body) }, want);
            }
        }
    }
}
