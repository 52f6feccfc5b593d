#!/usr/bin/env bash
# A fuzz campaign: tools/fuzz.sh TARGET SECONDS [more libFuzzer flags]
#
# TARGET is one of ir_reader, npy, check_mutated, run_mutated (fuzz/fuzz_targets/; their
# bodies are in crates/irun-fuzzing/src/lib.rs). The corpus grows in fuzz/corpus/TARGET and is kept between
# campaigns (not committed); the committed seeds in fuzz/seeds/TARGET start it. A crash, a
# hang over 10 s or more than 2 GiB of memory stops the campaign with the input saved under
# fuzz/artifacts/TARGET/; once fixed, copy that input into fuzz/regressions/TARGET/ so that
# `cargo test` replays it (crates/irun-fuzzing/tests/fuzz_regressions.rs). For check_mutated and run_mutated,
# also write NAME.seed beside it with the seed model's path under models/ (the model its
# first two bytes chose when it crashed: see the target's log), so that the replay still
# mutates that model after others are committed.
#
# Leak detection is off: each input compiles a model with its own thread pool, and glibc's
# per-thread destructor list of the pool's exiting workers is reported as a 64-byte leak
# (fuzz/artifacts held only those); a growing leak would still hit the 2 GiB RSS limit.
# -len_control=0 lets inputs reach -max_len at once: the mutating targets read a few bytes per
# mutation and per tensor change.
#
# Needs cargo-fuzz (installed here if missing) and the stable toolchain with RUSTC_BOOTSTRAP=1
# for the sanitizer-coverage flags. Builds with optimisation and debug assertions, so that an
# integer overflow or a broken partition panics instead of wrapping silently.
#
# FUZZ_SANITIZER picks cargo-fuzz's sanitizer (default: address); FUZZ_CODEGEN_UNITS its
# codegen units (default 16; cargo-fuzz's own default is 1). On a 2-core machine, with one
# codegen unit, rten-gemm's instrumented build alone ran past 25 minutes in one rustc, with
# the sanitizer and without. With FUZZ_SANITIZER=none the campaign still stops on every
# panic, abort, hang and memory limit, but an out-of-bounds access inside `unsafe` code goes
# unseen, so run an address campaign where the build time allows.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
if [ $# -lt 2 ]; then
    echo "usage: tools/fuzz.sh TARGET SECONDS [libFuzzer flags]" >&2
    exit 2
fi
target=$1
seconds=$2
shift 2
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
mkdir -p "corpus/$target"
dirs=("corpus/$target")
if [ -d "seeds/$target" ]; then dirs+=("seeds/$target"); fi
if [ -d "regressions/$target" ]; then dirs+=("regressions/$target"); fi
export RUSTC_BOOTSTRAP=1
exec cargo fuzz run -O -a -s "${FUZZ_SANITIZER:-address}" \
    --codegen-units "${FUZZ_CODEGEN_UNITS:-16}" "$target" "${dirs[@]}" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -detect_leaks=0 -len_control=0 -print_final_stats=1 "$@"
