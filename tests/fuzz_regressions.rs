//! Replays every input the fuzz campaigns found (`fuzz/regressions/TARGET/`) and every seed
//! (`fuzz/seeds/TARGET/`) through the fuzz targets' bodies (`irun::fuzzing`): each must return,
//! whatever irun makes of it, without a panic.

use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("ir_reader", irun::fuzzing::ir_reader),
    ("npy", irun::fuzzing::npy),
    ("check_mutated", irun::fuzzing::check_mutated),
    ("run_mutated", irun::fuzzing::run_mutated),
];

fn replay(kind: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind);
    let mut count = 0;
    for (name, target) in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(name)) else {
            continue;
        };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap();
            eprintln!("{name}: {}", file.display());
            target(&data);
            count += 1;
        }
    }
    count
}

#[test]
fn every_input_the_fuzzers_found_is_handled() {
    replay("regressions");
}

#[test]
fn every_seed_is_handled() {
    assert!(replay("seeds") > 0);
}
