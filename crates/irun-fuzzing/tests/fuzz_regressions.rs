//! Replays every input the fuzz campaigns found (`fuzz/regressions/TARGET/`) and every seed
//! (`fuzz/seeds/TARGET/`) through the fuzz targets' bodies (`irun_fuzzing`): each must return,
//! whatever irun makes of it, without a panic. Every stored file is replayed (the count is
//! checked), and a regression of a mutating target is replayed on the model its `.seed` file
//! names, whatever models have been committed since.

use std::path::Path;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("ir_reader", irun_fuzzing::ir_reader),
    ("npy", irun_fuzzing::npy),
    ("check_mutated", irun_fuzzing::check_mutated),
    ("run_mutated", irun_fuzzing::run_mutated),
];

/// Replays every stored input of `kind`; the number replayed and the number stored.
fn replay(kind: &str) -> (usize, usize) {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("fuzz")
        .join(kind);
    let (mut replayed, mut stored) = (0, 0);
    for (name, target) in TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(name)) else {
            continue;
        };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            if file.extension().is_some_and(|e| e == "seed") {
                continue;
            }
            stored += 1;
            let mut data = std::fs::read(&file).unwrap();
            // A regression of a mutating target names its seed model beside it (its index
            // changes whenever a model sorting before it is committed): the input's first two
            // bytes are set to that model's index now.
            let seed = file.with_extension("seed");
            if kind == "regressions" && name.ends_with("_mutated") {
                let model = std::fs::read_to_string(&seed)
                    .unwrap_or_else(|_| panic!("{} names no seed model", seed.display()));
                let selector = irun_fuzzing::seed_selector(name, model.trim())
                    .unwrap_or_else(|| panic!("{}: no seed model {model}", file.display()));
                assert!(data.len() >= 2, "{}", file.display());
                data[..2].copy_from_slice(&selector);
            }
            eprintln!("{name}: {}", file.display());
            target(&data);
            replayed += 1;
        }
    }
    (replayed, stored)
}

#[test]
fn every_input_the_fuzzers_found_is_handled() {
    let (replayed, stored) = replay("regressions");
    assert_eq!(replayed, stored);
    assert!(replayed > 0, "no regression input was replayed");
}

#[test]
fn every_seed_is_handled() {
    let (replayed, stored) = replay("seeds");
    assert_eq!(replayed, stored);
    assert!(replayed > 0, "no seed was replayed");
}
