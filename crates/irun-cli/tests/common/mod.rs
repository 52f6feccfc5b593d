//! Helpers shared by the tests that drive the `irun` binary.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What one run of the binary did.
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `irun` with `args` from the repository root; asserts it did not panic or die on a
/// signal, whatever the input.
pub fn irun(args: &[&str]) -> Outcome {
    let out = Command::new(env!("CARGO_BIN_EXE_irun"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .args(args)
        .output()
        .unwrap();
    let o = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        o.code != 101 && o.code != -1 && !o.stderr.contains("panicked"),
        "irun crashed on {args:?}: {}",
        o.stderr
    );
    o
}

/// A fresh directory under the system's temp dir, unique per process and call.
pub fn scratch_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "irun-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}
