//! Keeps the pool's other workers awake for the length of a run.
//!
//! A run executes on one worker, and most of its ops are small enough to stay there; between
//! two parallel ops the idle workers go to sleep, and waking one costs tens of microseconds
//! on these VMs: more than a whole parallel MatMul of a small transformer. (GPT-2 of the
//! model set: 0.34 ms a run with sleeping workers, 0.23 ms with spinning ones; OpenVINO's
//! latency mode keeps its threads spinning too.) So for the length of a run every worker
//! runs a spinner that takes each piece of parallel work the moment it appears
//! ([`rayon::yield_now`]) and stops when the run is over.
//!
//! Why this cannot deadlock: a spinner polls only at the bottom of its worker's stack, where
//! no frame waits for it to return. A spinner that starts anywhere else returns at once: on
//! a worker that already runs a spinner (a thread-local flag says so; it leaves its run to
//! that one, which polls for it once back at the bottom) or on the worker that runs the
//! run's job. Both cases happen. A spinner of the previous run that has not yet seen
//! its run end can take a piece of the next run, and that piece, waiting for a join's other
//! half, can take the next run's spinner; had that spinner polled until its run ended, the
//! piece under it would never finish and neither would the run (seen once in `irun bench`
//! of a lone MaxPool after thousands of runs). And a worker that took the run's job first
//! may meet its own spinner while it waits inside the run; the run's job marks its worker
//! before anything else ([`Awake::mark_runner`]). Runs that start on a worker of the pool
//! itself (a nested run) get no spinners: the caller's frame would be under them.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

thread_local! {
    /// Whether a spinner polls on this thread, lower in its stack.
    static SPINNING: Cell<bool> = const { Cell::new(false) };
    /// A later run's spinner that met the one polling here, for that one to take over.
    static HANDOVER: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
}

/// Clears [`SPINNING`] (and any handover) when its spinner returns, a panic included.
struct SpinningHere;

impl SpinningHere {
    fn claim() -> Option<SpinningHere> {
        // Made only when claimed: dropping one clears the flag.
        if SPINNING.with(|s| s.replace(true)) {
            None
        } else {
            Some(SpinningHere)
        }
    }
}

impl Drop for SpinningHere {
    fn drop(&mut self) {
        SPINNING.with(|s| s.set(false));
        HANDOVER.with(|h| h.borrow_mut().take());
    }
}

/// The spinners of one run; dropping it (at the end of the run, or while a panic unwinds)
/// stops them.
pub(crate) struct Awake {
    shared: Arc<Shared>,
}

struct Shared {
    done: AtomicBool,
    /// The index of the worker running the run's job; `usize::MAX` until it is known.
    runner: AtomicUsize,
    /// Spinners still polling (for the tests).
    spinning: AtomicUsize,
}

impl Awake {
    /// Starts a spinner on every worker of `pool`; `None` when the pool has one worker or
    /// the caller is one of them.
    pub(crate) fn start(pool: &rayon::ThreadPool) -> Option<Awake> {
        if pool.current_num_threads() < 2 || pool.current_thread_index().is_some() {
            return None;
        }
        let shared = Arc::new(Shared {
            done: AtomicBool::new(false),
            runner: AtomicUsize::new(usize::MAX),
            spinning: AtomicUsize::new(0),
        });
        let mine = shared.clone();
        pool.spawn_broadcast(move |ctx| mine.spin(ctx.index()));
        Some(Awake { shared })
    }

    /// Marks the calling worker as the one running the run's job: called first thing in
    /// that job.
    pub(crate) fn mark_runner(awake: Option<&Awake>) {
        if let (Some(a), Some(index)) = (awake, rayon::current_thread_index()) {
            a.shared.runner.store(index, Ordering::Release);
        }
    }

    #[cfg(test)]
    fn spinning(&self) -> usize {
        self.shared.spinning.load(Ordering::Acquire)
    }
}

impl Shared {
    /// Polls for `self`'s run; above another spinner, hands the run to that one instead
    /// (which then polls for it at the bottom of the stack, once what is above it returns).
    fn spin(self: &Arc<Self>, worker: usize) {
        let Some(_here) = SpinningHere::claim() else {
            HANDOVER.with(|h| *h.borrow_mut() = Some(self.clone()));
            return;
        };
        let mut run = self.clone();
        run.spinning.fetch_add(1, Ordering::AcqRel);
        loop {
            if let Some(next) = HANDOVER.with(|h| h.borrow_mut().take()) {
                run.spinning.fetch_sub(1, Ordering::AcqRel);
                run = next;
                run.spinning.fetch_add(1, Ordering::AcqRel);
            }
            if run.done.load(Ordering::Acquire) || run.runner.load(Ordering::Acquire) == worker {
                break;
            }
            match rayon::yield_now() {
                Some(rayon::Yield::Executed) => {}
                _ => std::hint::spin_loop(),
            }
        }
        run.spinning.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Parallel work inside a run with spinners: many joins, as the ops' loops make.
    fn run(pool: &rayon::ThreadPool, awake: Option<&Awake>) -> u64 {
        pool.install(|| {
            Awake::mark_runner(awake);
            (0..2000u64)
                .map(|i| {
                    let (a, b) = rayon::join(|| i * 2, || i * 3);
                    a + b
                })
                .sum()
        })
    }

    fn wait_until_stopped(a: &Awake) -> bool {
        let until = Instant::now() + Duration::from_secs(10);
        while a.spinning() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        a.spinning() == 0
    }

    #[test]
    fn spinners_take_work_and_stop_when_the_run_is_done() {
        let p = pool(3);
        for _ in 0..50 {
            let awake = Awake::start(&p).expect("three workers, caller outside");
            assert_eq!(run(&p, Some(&awake)), 5 * (0..2000u64).sum::<u64>());
            let watch = Awake {
                shared: awake.shared.clone(),
            };
            drop(awake);
            assert!(wait_until_stopped(&watch), "a spinner kept polling");
            // `watch` sets `done` again on drop: harmless.
        }
    }

    #[test]
    fn concurrent_runs_each_finish() {
        let p = pool(2);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let awake = Awake::start(&p);
                        assert_eq!(run(&p, awake.as_ref()), 5 * (0..2000u64).sum::<u64>());
                    }
                });
            }
        });
    }

    #[test]
    fn no_spinners_for_one_worker_or_a_caller_inside_the_pool() {
        assert!(Awake::start(&pool(1)).is_none());
        let p = pool(2);
        assert!(p.install(|| Awake::start(&p)).is_none());
    }

    #[test]
    fn a_panicking_run_still_stops_its_spinners() {
        let p = pool(2);
        let awake = Awake::start(&p).unwrap();
        let watch = Awake {
            shared: awake.shared.clone(),
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _awake = awake;
            p.install(|| {
                Awake::mark_runner(Some(&watch));
                panic!("an op panicked");
            })
        }));
        assert!(result.is_err());
        assert!(wait_until_stopped(&watch));
    }

    /// The hang of the module doc, made certain: a piece of one run's work, taken by a
    /// spinner that is still polling, waits on a join and meets its worker's spinner of the
    /// run it belongs to. That spinner must return, or the piece and its run never end.
    #[test]
    fn a_spinner_met_above_another_returns_at_once() {
        let p = pool(2);
        let older = Awake::start(&p).unwrap();
        let newer = Awake::start(&p).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let shared = newer.shared.clone();
        p.spawn(move || {
            // On a worker, inside its older spinner: the newer run's spinner would poll here
            // until the newer run ended, which it cannot while this job waits.
            shared.spin(rayon::current_thread_index().unwrap());
            tx.send(()).unwrap();
        });
        let met = rx.recv_timeout(Duration::from_secs(10));
        assert!(met.is_ok(), "the nested spinner kept polling");
        // The older run ends; the spinner under the job, back at the bottom of its stack,
        // polls for the newer run it was handed, until that one ends too.
        let older_watch = Awake {
            shared: older.shared.clone(),
        };
        drop(older);
        let until = Instant::now() + Duration::from_secs(10);
        while older_watch.spinning() > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(older_watch.spinning(), 0);
        assert!(newer.spinning() >= 1, "the handed-over run has no spinner");
        let newer_watch = Awake {
            shared: newer.shared.clone(),
        };
        drop(newer);
        assert!(wait_until_stopped(&newer_watch));
    }
}
