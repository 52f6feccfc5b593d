//! The bodies of the fuzz targets (`fuzz/`, run by `tools/fuzz.sh`) and of the test that replays
//! every input they ever found (`tests/fuzz_regressions.rs`), in one place so that both run the
//! same code. Not part of the `irun` library: it drives the internal crates directly.
//!
//! Each takes arbitrary bytes and must return: whatever the bytes, irun reports an error value,
//! never a panic, an abort, a hang or an allocation beyond [`MEMORY_LIMIT`]. The mutating
//! targets start from the models committed under `models/` and change them the way a broken
//! exporter or a hand edit would (attribute values, dims, ids, edges, offsets, element types,
//! whole lines), so that most inputs get past the XML parser into validation and execution.

#![forbid(unsafe_code)]

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use irun_graph::Graph;
use irun_ir::Weights;
use irun_tensor::{read_npy_from, read_npz, read_npz_within, write_npy, Tensor};

use irun_exec::{Executable, Options};
use irun_graph::ModelInfo;

/// What one fuzz input may make irun hold: far below the fuzzer's 2 GiB RSS limit.
pub const MEMORY_LIMIT: u64 = 512 << 20;

/// Reads bytes as a model: a little-endian u32 gives the length of the `.xml` part, the rest
/// is the `.bin`. A model that reads and validates is compiled as `irun run` would.
pub fn ir_reader(data: &[u8]) {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let split = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (xml, bin) = rest.split_at(split);
    let weights = Weights::from_vec(Path::new("model.bin"), bin.to_vec());
    if let Some(graph) = valid_graph(xml, weights) {
        let _ = Executable::compile(graph, &options(1));
    }
}

/// The graph of a model that reads and has no errors: what `irun run` would compile.
fn valid_graph(xml: &[u8], weights: Weights) -> Option<Graph> {
    let graph = irun_graph::from_bytes(xml, weights).ok()?;
    (!graph.has_errors()).then_some(graph)
}

/// Reads bytes as an `.npy` and as an `.npz`. What reads must write and read back to the same
/// bytes.
pub fn npy(data: &[u8]) {
    let mut budget = MEMORY_LIMIT;
    if let Ok(t) = read_npy_from(&mut &data[..], &mut budget) {
        let written = npy_bytes(&t);
        let again = irun_tensor::read_npy(&written).expect("irun reads what it writes");
        assert_eq!(
            npy_bytes(&again),
            written,
            "an .npy round trip changed the array"
        );
    }
    let mut budget = MEMORY_LIMIT;
    let _ = read_npz_within(Cursor::new(data), &mut budget);
}

fn npy_bytes(t: &Tensor) -> Vec<u8> {
    let mut out = Vec::new();
    write_npy(t, &mut out).expect("writing to memory");
    out
}

/// Mutates a committed model (any of them, the real ones included), validates it and prints
/// what `irun check` and `irun info` print (text and JSON), and compiles it as `irun run` does.
pub fn check_mutated(data: &[u8]) {
    let seeds = &seeds().check;
    let mut input = Bytes(data);
    // Two bytes: with one, only the first 256 of the 307 committed models were ever mutated.
    let seed = &seeds[input.next_u16() % seeds.len()];
    let xml = mutate(&seed.xml, &mut input);
    let graph = match irun_graph::from_bytes(xml.as_bytes(), seed.weights.clone()) {
        Ok(g) => g,
        Err(d) => {
            d.render("model.xml");
            return;
        }
    };
    let info = ModelInfo::of(&graph);
    info.render("model.xml");
    serde_json::to_string(&info).expect("ModelInfo serializes");
    for d in graph.all_diagnostics() {
        d.render("model.xml");
    }
    serde_json::to_string(&graph.all_diagnostics().collect::<Vec<_>>())
        .expect("diagnostics serialize");
    if !graph.has_errors() {
        let _ = Executable::compile(graph, &options(1));
    }
}

/// Mutates a small committed model and its inputs, and runs it on 1 or 2 threads.
pub fn run_mutated(data: &[u8]) {
    let seeds = &seeds().run;
    let mut input = Bytes(data);
    let seed = &seeds[input.next_u16() % seeds.len()];
    let threads = 1 + (input.next() & 1) as usize;
    let mutate_model = input.next() & 1 == 1;
    let xml = if mutate_model {
        mutate(&seed.xml, &mut input)
    } else {
        seed.xml.clone()
    };
    let Some(graph) = valid_graph(xml.as_bytes(), seed.weights.clone()) else {
        return;
    };
    let Ok(exe) = Executable::compile(graph, &options(threads)) else {
        return;
    };
    let inputs = seed
        .inputs
        .iter()
        .map(|(k, t)| (k.clone(), mutate_tensor(t, &mut input)))
        .collect();
    let _ = exe.run(inputs);
}

fn options(threads: usize) -> Options {
    Options::new()
        .threads(threads)
        .memory_limit(MEMORY_LIMIT)
        .prepare_constants(threads == 2)
        .fuse_broadcasts(threads == 2)
        .keep_workers_awake(threads == 2)
}

/// The fuzz input, read a byte at a time; zeros once it is used up.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn next_u16(&mut self) -> usize {
        usize::from(self.next()) | usize::from(self.next()) << 8
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Values that exercise the validation of IR attributes and dims: boundaries, overflow,
/// non-numbers, every element type and precision spelling, and enum values of the ops.
const INTERESTING: &[&str] = &[
    "-1",
    "0",
    "1",
    "2",
    "3",
    "-2",
    "7",
    "64",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "1e38",
    "nan",
    "",
    " ",
    "?",
    "1..3",
    "-1..5",
    "abc",
    "0x10",
    "1,2",
    "0,0",
    "-1,1",
    "1, 2, 3",
    "3,,4",
    "f32",
    "f16",
    "bf16",
    "f64",
    "i64",
    "i32",
    "i8",
    "u8",
    "u1",
    "u4",
    "i4",
    "nf4",
    "f8e4m3",
    "boolean",
    "string",
    "dynamic",
    "undefined",
    "FP32",
    "FP16",
    "I64",
    "I32",
    "U8",
    "BOOL",
    "opset1",
    "opset3",
    "opset8",
    "opset12",
    "opset15",
    "opset99",
    "extension",
    "none",
    "sum",
    "prod",
    "mean",
    "max",
    "min",
    "true",
    "false",
    "numpy",
    "pdpd",
    "explicit",
    "same_upper",
    "same_lower",
    "valid",
    "floor",
    "ceil",
    "Const",
    "Parameter",
    "Result",
    "Add",
    "ScatterUpdate",
    "ScatterElementsUpdate",
    "ScatterNDUpdate",
    "Gather",
    "Reshape",
    "Concat",
    "MatMul",
    "Convolution",
];

/// Where a value can be replaced: the inside of `="..."` and of `<dim>...</dim>`.
fn value_spans(xml: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let b = xml.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'=' && b[i + 1] == b'"' {
            if let Some(len) = xml[i + 2..].find('"') {
                spans.push((i + 2, i + 2 + len));
                i += 2 + len;
            }
        } else if xml[i..].starts_with("<dim>") {
            if let Some(len) = xml[i + 5..].find('<') {
                spans.push((i + 5, i + 5 + len));
            }
        }
        i += 1;
    }
    spans
}

/// Applies up to 8 mutations chosen by the input: replace a value with an interesting one,
/// with another value of the file, or with itself plus or times a small number; delete or
/// duplicate a line (an edge, a port, a dim, a whole layer's opening tag).
fn mutate(xml: &str, input: &mut Bytes) -> String {
    let mut xml = xml.to_string();
    let rounds = 1 + input.next() % 8;
    for _ in 0..rounds {
        if input.is_empty() {
            break;
        }
        let kind = input.next() % 6;
        if kind >= 4 {
            let lines: Vec<&str> = xml.split_inclusive('\n').collect();
            let k = input.next_u16() % lines.len();
            let mut out = String::with_capacity(xml.len() + lines[k].len());
            for (i, line) in lines.iter().enumerate() {
                if i != k || kind == 5 {
                    out.push_str(line);
                }
                if i == k && kind == 5 {
                    out.push_str(line);
                }
            }
            xml = out;
            continue;
        }
        let spans = value_spans(&xml);
        if spans.is_empty() {
            break;
        }
        let (start, end) = spans[input.next_u16() % spans.len()];
        let old = &xml[start..end];
        let new = match kind {
            0 | 1 => INTERESTING[input.next() as usize % INTERESTING.len()].to_string(),
            2 => {
                let (s, e) = spans[input.next_u16() % spans.len()];
                xml[s..e].to_string()
            }
            _ => {
                let delta = i64::from(input.next() as i8);
                match old.trim().parse::<i64>() {
                    Ok(v) if delta % 2 == 0 => v.wrapping_add(delta / 2).to_string(),
                    Ok(v) => v.wrapping_mul(delta).to_string(),
                    Err(_) => format!("{old}{delta}"),
                }
            }
        };
        xml.replace_range(start..end, &new);
    }
    xml
}

/// A copy of `t` with up to 8 of its bytes overwritten by the input (indices out of range,
/// NaNs, extreme values), or `t` itself.
fn mutate_tensor(t: &Tensor, input: &mut Bytes) -> Tensor {
    let changes = input.next() % 9;
    if changes == 0 {
        return t.clone();
    }
    let mut bytes = npy_bytes(t);
    let header = bytes.len() - t.byte_size();
    if t.byte_size() == 0 {
        return t.clone();
    }
    for _ in 0..changes {
        let at = header + input.next_u16() % t.byte_size();
        bytes[at] = input.next();
    }
    irun_tensor::read_npy(&bytes).unwrap_or_else(|_| t.clone())
}

/// A committed model: its XML text, weights and (for running) inputs.
struct Seed {
    /// The model's path under `models/`, `/`-separated.
    name: String,
    xml: String,
    weights: Weights,
    inputs: Vec<(String, Tensor)>,
}

struct Seeds {
    /// Every committed model.
    check: Vec<Seed>,
    /// The committed models with inputs that run in milliseconds.
    run: Vec<Seed>,
}

/// The first two bytes of an input to `check_mutated` or `run_mutated` that choose the model
/// `name` (its path under `models/`, such as `converted/torch_gcn/model.xml`) as the seed, or
/// `None` when that target has no such seed. A stored regression input names its model (the
/// index of a model shifts whenever a model that sorts before it is added) and gets these bytes
/// when it is replayed.
pub fn seed_selector(target: &str, name: &str) -> Option<[u8; 2]> {
    let list = match target {
        "check_mutated" => &seeds().check,
        "run_mutated" => &seeds().run,
        _ => return None,
    };
    let i = list.iter().position(|s| s.name == name)?;
    u16::try_from(i).ok().map(u16::to_le_bytes)
}

/// The committed models, read once per process.
fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("models");
        let mut xmls = Vec::new();
        collect_xml(&root, &mut xmls);
        xmls.sort();
        let mut seeds = Seeds {
            check: Vec::new(),
            run: Vec::new(),
        };
        for path in xmls {
            let Ok(xml) = std::fs::read_to_string(&path) else {
                continue;
            };
            let weights = Weights::open(&path.with_extension("bin"));
            let dir = path.parent().unwrap_or(&root);
            let runnable = !dir.to_string_lossy().contains("big_");
            let inputs = std::fs::File::open(dir.join("inputs.npz"))
                .ok()
                .and_then(|f| read_npz(std::io::BufReader::new(f)).ok())
                .filter(|_| runnable);
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            if let Some(inputs) = inputs {
                seeds.run.push(Seed {
                    name: name.clone(),
                    xml: xml.clone(),
                    weights: weights.clone(),
                    inputs,
                });
            }
            seeds.check.push(Seed {
                name,
                xml,
                weights,
                inputs: Vec::new(),
            });
        }
        assert!(
            !seeds.check.is_empty() && !seeds.run.is_empty(),
            "the fuzz targets need the models committed under {}",
            root.display()
        );
        seeds
    })
}

fn collect_xml(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_xml(&p, out);
        } else if p.extension().is_some_and(|x| x == "xml") {
            out.push(p);
        }
    }
}
