#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| irun_fuzzing::npy(data));
