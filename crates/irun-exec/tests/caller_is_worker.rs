//! `Options::caller_is_worker`: a model compiled with it runs on its compiling thread, and its
//! outputs are those of a model whose runs are handed to the pool, whichever thread calls and
//! however many models that thread has compiled.

use irun_exec::{Executable, Options};
use irun_tensor::Tensor;

const MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/real/segmenter");

fn compile(options: &Options) -> Executable {
    let graph = irun_graph::load(format!("{MODEL}/model.xml").as_ref(), None).unwrap();
    Executable::compile(graph, options).unwrap()
}

fn run(exe: &Executable) -> Vec<(String, Tensor)> {
    let inputs =
        irun_tensor::read_npz(std::fs::File::open(format!("{MODEL}/inputs.npz")).unwrap()).unwrap();
    exe.run(inputs).unwrap()
}

fn assert_same(got: &[(String, Tensor)], want: &[(String, Tensor)]) {
    assert_eq!(got.len(), want.len());
    for ((gk, g), (wk, w)) in got.iter().zip(want) {
        assert_eq!(gk, wk);
        assert_eq!(g.shape(), w.shape(), "{gk}");
        assert!(g.storage() == w.storage(), "{gk}: values differ");
    }
}

#[test]
fn runs_on_the_compiling_thread_equal_runs_handed_to_the_pool() {
    let want = run(&compile(&Options::new().threads(2)));
    // A thread of the test's own: the harness may have put its thread in a pool.
    std::thread::scope(|s| {
        s.spawn(|| {
            let options = Options::new()
                .threads(2)
                .keep_workers_awake(true)
                .caller_is_worker(true);
            let first = compile(&options);
            assert!(format!("{first:?}").contains("caller_is_worker: true"));
            // The thread belongs to `first`'s pool now: a second model gets its own.
            let second = compile(&options);
            assert!(format!("{second:?}").contains("caller_is_worker: false"));
            for _ in 0..5 {
                assert_same(&run(&first), &want);
                assert_same(&run(&second), &want);
            }
            // Runs from another thread: `first`'s other worker runs them.
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..5 {
                        assert_same(&run(&first), &want);
                    }
                });
            });
            // With `first` and its pool gone, the thread still runs the second model.
            drop(first);
            assert_same(&run(&second), &want);
            let third = compile(&options);
            assert_same(&run(&third), &want);
        });
    });
}
