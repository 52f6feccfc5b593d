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
//! Why this cannot deadlock: a spinner never holds its frame for longer than a slice
//! ([`SLICE`]). It polls for a slice, then queues its continuation as a new job on its own
//! worker and returns, so whatever waits in the frames under it goes on. Spinners do end up
//! above such frames: a worker may take a piece of the run's work before its spinner, and
//! meet the spinner while that piece waits for a join's other half; a spinner of the previous
//! run, not yet aware its run ended, may take a piece of the next run, which meets the next
//! run's spinner the same way. A spinner that polled until its run ended would there stop
//! the piece under it, and so the run, for good (seen in `irun bench`: a lone MaxPool after
//! thousands of runs, a lone depthwise convolution after a few). Where a frame waits under a
//! spinner, the slice is the most it waits. The worker running the run's job needs no
//! spinner: the job marks its worker first thing ([`Awake::mark_runner`]), and a spinner
//! there returns for good. Runs that start on a worker of the pool itself (a nested run) get
//! no spinners: the caller's frame would be under them. The one exception is a caller that
//! is worker 0 of a pool built around it (`Options::caller_is_worker`): it runs the run
//! itself, outside any other (ops never start runs), and the spinners go to the other
//! workers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a spinner polls before it queues its continuation and returns: the most a frame
/// under it waits (a join whose other half is done, say). Far longer than a poll, far
/// shorter than a run.
const SLICE: Duration = Duration::from_micros(50);

/// Polls between two looks at the clock.
const POLLS_PER_CLOCK: u32 = 64;

/// The spinners of one run; dropping it (at the end of the run, or while a panic unwinds)
/// stops them.
pub(crate) struct Awake {
    shared: Arc<Shared>,
}

struct Shared {
    done: AtomicBool,
    /// The index of the worker running the run's job; `usize::MAX` until it is known.
    runner: AtomicUsize,
    /// Spinners polling now (for the tests).
    spinning: AtomicUsize,
}

impl Awake {
    /// Starts a spinner on every worker of `pool` but the run's; `None` when the pool has
    /// one worker or the caller is one of them, except for a caller that is worker 0 of a
    /// pool built around it (`caller_is_worker`: no op starts a run, so that caller is
    /// outside any run).
    pub(crate) fn start(pool: &rayon::ThreadPool, caller_is_worker: bool) -> Option<Awake> {
        let workers = pool.current_num_threads();
        if workers < 2 {
            return None;
        }
        let shared = Arc::new(Shared {
            done: AtomicBool::new(false),
            runner: AtomicUsize::new(usize::MAX),
            spinning: AtomicUsize::new(0),
        });
        match (pool.current_thread_index(), caller_is_worker) {
            (None, false) => {
                let mine = shared.clone();
                pool.spawn_broadcast(move |_| mine.clone().spin());
            }
            // Worker 0 takes pool work only when it waits inside a run: a broadcast would
            // leave its copy queued there, one more each run when the runs come from another
            // thread. One spinner per other worker instead, queued where those look: on
            // worker 0's own deque when it calls, on the pool's queue otherwise.
            (None, true) | (Some(0), true) => {
                for _ in 1..workers {
                    let mine = shared.clone();
                    pool.spawn(move || mine.spin());
                }
            }
            (Some(_), _) => return None,
        }
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
    /// Whether a spinner of this run has nothing more to do on the calling worker.
    fn over(&self) -> bool {
        self.done.load(Ordering::Acquire)
            || rayon::current_thread_index() == Some(self.runner.load(Ordering::Acquire))
    }

    /// Polls for work of this run for one slice, then, unless the run is over, queues the
    /// next slice on this worker ([`rayon::spawn`] from a worker pushes onto its own deque)
    /// and returns.
    fn spin(self: Arc<Self>) {
        if self.over() {
            return;
        }
        self.spinning.fetch_add(1, Ordering::AcqRel);
        let started = Instant::now();
        let mut polls = 0u32;
        let over = loop {
            if self.over() {
                break true;
            }
            match rayon::yield_now() {
                Some(rayon::Yield::Executed) => {}
                _ => std::hint::spin_loop(),
            }
            polls += 1;
            if polls.is_multiple_of(POLLS_PER_CLOCK) && started.elapsed() >= SLICE {
                break false;
            }
        };
        self.spinning.fetch_sub(1, Ordering::AcqRel);
        if !over {
            rayon::spawn(move || self.spin());
        }
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
            let awake = Awake::start(&p, false).expect("three workers, caller outside");
            assert_eq!(run(&p, Some(&awake)), 5 * (0..2000u64).sum::<u64>());
            let watch = Awake {
                shared: awake.shared.clone(),
            };
            drop(awake);
            assert!(wait_until_stopped(&watch), "a spinner kept polling");
            // `watch` sets `done` again on drop: harmless.
        }
    }

    /// A pool built around its caller (`use_current_thread`) on a thread of the test's own,
    /// as `Options::caller_is_worker` builds it; `body` runs on that thread.
    fn with_caller_as_worker(threads: usize, body: impl FnOnce(&rayon::ThreadPool) + Send) {
        std::thread::scope(|s| {
            s.spawn(|| {
                let p = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .use_current_thread()
                    .build()
                    .unwrap();
                assert_eq!(p.current_thread_index(), Some(0));
                body(&p);
            });
        });
    }

    #[test]
    fn a_caller_that_is_worker_zero_runs_with_spinners_on_the_others() {
        with_caller_as_worker(3, |p| {
            for _ in 0..50 {
                let awake = Awake::start(p, true).expect("worker 0 is outside any run");
                assert_eq!(run(p, Some(&awake)), 5 * (0..2000u64).sum::<u64>());
                // The run executed on the caller itself.
                assert_eq!(awake.shared.runner.load(Ordering::Acquire), 0);
                let watch = Awake {
                    shared: awake.shared.clone(),
                };
                drop(awake);
                assert!(wait_until_stopped(&watch), "a spinner kept polling");
            }
        });
    }

    /// Runs from another thread while worker 0 never takes pool work: the other worker
    /// runs them, spinners and all.
    #[test]
    fn runs_from_another_thread_finish_while_worker_zero_is_busy_elsewhere() {
        with_caller_as_worker(2, |p| {
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..50 {
                        let awake = Awake::start(p, true).expect("caller outside the pool");
                        assert_eq!(run(p, Some(&awake)), 5 * (0..2000u64).sum::<u64>());
                        assert_eq!(awake.shared.runner.load(Ordering::Acquire), 1);
                    }
                });
            });
        });
    }

    #[test]
    fn concurrent_runs_each_finish() {
        let p = pool(2);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let awake = Awake::start(&p, false);
                        assert_eq!(run(&p, awake.as_ref()), 5 * (0..2000u64).sum::<u64>());
                    }
                });
            }
        });
    }

    #[test]
    fn no_spinners_for_one_worker_or_a_caller_inside_the_pool() {
        assert!(Awake::start(&pool(1), false).is_none());
        let p = pool(2);
        assert!(p.install(|| Awake::start(&p, false)).is_none());
    }

    #[test]
    fn a_panicking_run_still_stops_its_spinners() {
        let p = pool(2);
        let awake = Awake::start(&p, false).unwrap();
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

    /// The hangs of the module doc, made certain: a spinner called where a frame under it
    /// waits for it to return (here the test's own job, standing for a piece of the run
    /// waiting on a join), on a worker that is not the runner, while the run goes on. It
    /// returns after a slice; its continuation keeps polling until the run ends.
    #[test]
    fn a_spinner_returns_to_the_frame_under_it_while_its_run_goes_on() {
        let p = pool(2);
        // No other spinner: the one below stands alone on its worker, as one met inside a
        // piece of work taken before the worker's spinner.
        let awake = Awake {
            shared: Arc::new(Shared {
                done: AtomicBool::new(false),
                runner: AtomicUsize::new(usize::MAX),
                spinning: AtomicUsize::new(0),
            }),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let shared = awake.shared.clone();
        p.spawn(move || {
            shared.spin();
            tx.send(()).unwrap();
        });
        let met = rx.recv_timeout(Duration::from_secs(10));
        assert!(
            met.is_ok(),
            "the spinner kept its frame until its run ended"
        );
        let watch = Awake {
            shared: awake.shared.clone(),
        };
        assert!(
            !watch.shared.done.load(Ordering::Acquire),
            "the run went on meanwhile"
        );
        let until = Instant::now() + Duration::from_secs(10);
        while watch.spinning() == 0 && Instant::now() < until {
            std::thread::yield_now();
        }
        assert!(watch.spinning() > 0, "no continuation polls for the run");
        drop(awake);
        assert!(wait_until_stopped(&watch));
    }
}
