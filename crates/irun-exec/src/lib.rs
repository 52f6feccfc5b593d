//! irun-exec: runs a validated [`Graph`].
//!
//! [`Executable::compile`] builds the plan once: the topological order, how many readers each
//! node output has (so a buffer is freed, or handed over, as soon as its last reader runs), the
//! model's inputs and outputs, and a rayon pool of `threads` workers. [`Executable::run`] checks
//! the inputs against the model, re-infers shapes when they are more concrete than declared,
//! checks every output size against the memory limit before it is allocated, and evaluates the
//! nodes in order.
//!
//! Architecture invariant: the executor never looks inside a tensor and a kernel never sees the
//! graph. In-place reuse is the ops' business: the executor only guarantees that the input an
//! op names in `inplace_input` reaches `eval` as the only reference when nothing else reads it.

#![forbid(unsafe_code)]

mod awake;
mod checks;
mod compiled;
mod compressed;
mod error;
mod execute;
mod flow;
mod fold;
mod fuse;
mod fuse_heads;
mod fuse_index;
pub mod generate;
mod hoist;
mod inputs;
mod int8;
mod levels;
mod memory;
mod options;
mod plan;
mod profile;
mod run_facts;
mod state;

use std::sync::{Arc, Mutex, OnceLock};

use irun_graph::{Graph, NodeId};
use irun_ops::{Fact, Prepared, Value};
use irun_tensor::{ElementType, PartialShape, Tensor};

use awake::Awake;
pub use error::{RunError, RunErrorKind};
use memory::physical_memory;
pub use options::Options;
use plan::{Plan, Source};
pub use profile::Profile;
pub use state::{State, VariableInfo};

/// A model input as the caller sees it.
#[derive(Clone, Debug)]
pub struct InputInfo {
    /// The Parameter layer's name.
    pub layer_name: String,
    /// The tensor names of its output port, sorted.
    pub tensor_names: Vec<String>,
    pub element_type: ElementType,
    pub shape: PartialShape,
}

/// A model output: its key in output files (`get_any_name`, else `output_<i>`) and its facts.
#[derive(Clone, Debug)]
pub struct OutputInfo {
    pub key: String,
    pub element_type: ElementType,
    pub shape: PartialShape,
}

/// A compiled model: graph, plan, thread pool and decoded-constant cache.
pub struct Executable {
    graph: Arc<Graph>,
    plan: Plan,
    /// Shared with the executables of the model's bodies, which run inside it.
    pool: Arc<rayon::ThreadPool>,
    /// [`Options::keep_workers_awake`].
    keep_workers_awake: bool,
    /// The compiling thread is the pool's worker 0 ([`Options::caller_is_worker`]). Never
    /// for a body's executable, which runs inside its model's run.
    caller_is_worker: bool,
    memory_limit: u64,
    inputs: Vec<InputInfo>,
    outputs: Vec<OutputInfo>,
    /// Decoded Consts, filled on first use and shared by every run.
    consts: Vec<OnceLock<Value>>,
    /// Outputs that inference computed from constants (folded): such a node never runs.
    folded: Vec<Option<Vec<Value>>>,
    /// Kernels that ops prepared for their constant inputs ([`irun_ops::Op::prepare`]).
    prepared: Vec<Option<Box<dyn Prepared>>>,
    /// Bytes held by `prepared`; counted as in use by every run.
    prepared_bytes: u64,
    /// Ops whose work a prepared kernel before them does (see `fuse.rs`): the input slot they
    /// pass through.
    fused: Vec<Option<usize>>,
    /// For a kernel that took over the ReduceMax after it (`fuse.rs`): that node, whose
    /// facts its output has.
    reduced_into: Vec<Option<NodeId>>,
    /// Kernels that write their output channel-last for the one kernel that reads it
    /// (`fuse.rs`): the output has the node's facts so moved ([`irun_ops::Fact::channels_last`]).
    channels_last_out: Vec<bool>,
    /// Kernels (and MaxPools) whose one output may be u8 levels where the graph says f32
    /// (see `levels.rs`).
    levels_out: Vec<bool>,
    /// Ops that read an input as it was before a Broadcast (see `fuse_index.rs`).
    index_broadcasts: Vec<Option<fuse_index::IndexBroadcast>>,
    /// Attentions that read their keys and values before each head's repeat (see
    /// `fuse_heads.rs`).
    shared_heads: Vec<Option<fuse_heads::SharedHeads>>,
    /// Passed-through nodes whose other inputs the run keeps for their reader.
    keeps_inputs: Vec<bool>,
    /// The state variables (ReadValue/Assign), as [`State`]s of this model carry them.
    variables: Arc<[VariableInfo]>,
    /// The compiled bodies of Loop, TensorIterator and If nodes (see `flow.rs`).
    flows: Vec<Option<flow::FlowExec>>,
    /// The facts inferred for the last input shapes that differed from the declared ones
    /// (and those shapes): a model with dynamic inputs run again on inputs of the same
    /// shapes (a benchmark loop, a server) does not infer its graph again.
    recent_facts: Mutex<Option<InferredFacts>>,
}

/// Per-run facts inferred for some input (and variable) shapes.
type InferredFacts = (Vec<(NodeId, Fact)>, Arc<Vec<Vec<Fact>>>);

/// The facts a run uses: the compiled ones, or ones inferred for its input shapes.
enum RunFacts<'a> {
    Declared(&'a [Vec<Fact>]),
    Inferred(Arc<Vec<Vec<Fact>>>),
}

impl std::ops::Deref for RunFacts<'_> {
    type Target = [Vec<Fact>];

    fn deref(&self) -> &[Vec<Fact>] {
        match self {
            RunFacts::Declared(f) => f,
            RunFacts::Inferred(f) => f,
        }
    }
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executable")
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("threads", &self.pool.current_num_threads())
            .field("caller_is_worker", &self.caller_is_worker)
            .finish()
    }
}

impl Executable {
    /// Plans `graph`. Fails if the graph has errors or a layer that must run has no kernel.
    pub fn compile(graph: Graph, options: &Options) -> Result<Executable, RunError> {
        Executable::compile_in(Arc::new(graph), options, None)
    }

    /// Plans a graph to run in `pool` (a body, inside its model's pool), or in a pool of its
    /// own when `pool` is `None`.
    fn compile_in(
        graph: Arc<Graph>,
        options: &Options,
        pool: Option<Arc<rayon::ThreadPool>>,
    ) -> Result<Executable, RunError> {
        Executable::compile_given(graph, options, pool, &[])
    }

    /// As [`Executable::compile_in`], but the nodes in `given` (one-output ops) do not run:
    /// each run receives their values after the Parameters' ([`Plan::give`]).
    fn compile_given(
        graph: Arc<Graph>,
        options: &Options,
        pool: Option<Arc<rayon::ThreadPool>>,
        given: &[NodeId],
    ) -> Result<Executable, RunError> {
        if graph.has_errors() {
            let errors: Vec<String> = graph
                .errors()
                .map(|d| format!("{}: {}", d.code, d.message))
                .collect();
            return Err(RunError::new(
                RunErrorKind::InvalidModel,
                format!(
                    "the model is invalid ({} error(s); `irun check` shows them): {}",
                    errors.len(),
                    errors.join("; ")
                ),
            ));
        }
        let mut plan = Plan::build(&graph)?;
        if !given.is_empty() {
            plan.give(given, graph.parameters.len());
        }
        let (pool, caller_is_worker) = match pool {
            Some(pool) => (pool, false),
            None => {
                let (pool, joined) = new_pool(options)?;
                (Arc::new(pool), joined)
            }
        };
        let flows = flow::compile_bodies(&graph, options, &pool)?;
        let inputs = graph
            .parameters
            .iter()
            .map(|&p| {
                let f = graph.facts[p]
                    .first()
                    .cloned()
                    .unwrap_or_else(Fact::unknown);
                InputInfo {
                    layer_name: graph.layer(p).name.clone(),
                    tensor_names: graph.input_names(p),
                    element_type: f.ty,
                    shape: f.shape,
                }
            })
            .collect();
        let outputs = (0..graph.results.len())
            .map(|i| {
                let f = graph.facts[graph.results[i]]
                    .first()
                    .cloned()
                    .unwrap_or_else(Fact::unknown);
                OutputInfo {
                    key: graph.output_key(i),
                    element_type: f.ty,
                    shape: f.shape,
                }
            })
            .collect();
        let variables: Arc<[VariableInfo]> = graph
            .variables
            .iter()
            .map(|v| {
                // The ReadValue declares the variable; a variable only written takes what the
                // Assign stores.
                let f = match (v.read, v.write) {
                    (Some(r), _) => graph.facts[r].first().cloned(),
                    (None, Some(w)) => graph.facts[w].first().cloned(),
                    (None, None) => None,
                }
                .unwrap_or_else(Fact::unknown);
                VariableInfo {
                    id: v.id.clone(),
                    element_type: f.ty,
                    shape: f.shape,
                }
            })
            .collect();
        let folded = graph
            .facts
            .iter()
            .enumerate()
            .map(|(n, facts)| {
                let derived = !graph.nodes[n].inputs.is_empty() && !facts.is_empty();
                derived
                    .then(|| {
                        facts
                            .iter()
                            .map(|f| f.value.clone())
                            .collect::<Option<Vec<_>>>()
                    })
                    .flatten()
            })
            .collect();
        let mut exe = Executable {
            folded,
            consts: (0..graph.nodes.len()).map(|_| OnceLock::new()).collect(),
            prepared: (0..graph.nodes.len()).map(|_| None).collect(),
            prepared_bytes: 0,
            fused: vec![None; graph.nodes.len()],
            reduced_into: vec![None; graph.nodes.len()],
            channels_last_out: vec![false; graph.nodes.len()],
            levels_out: vec![false; graph.nodes.len()],
            index_broadcasts: (0..graph.nodes.len()).map(|_| None).collect(),
            shared_heads: (0..graph.nodes.len()).map(|_| None).collect(),
            keeps_inputs: vec![false; graph.nodes.len()],
            variables,
            recent_facts: Mutex::new(None),
            memory_limit: options.memory_limit.unwrap_or_else(physical_memory),
            flows,
            plan,
            pool,
            keep_workers_awake: options.keep_workers_awake,
            caller_is_worker,
            inputs,
            outputs,
            graph,
        };
        // Not an optimisation only: the packed kernels decompress in f32 as OpenVINO does,
        // so every run uses them, prepared or not.
        exe.use_compressed_weights()?;
        if options.prepare_constants {
            exe.fold_constants()?;
            exe.use_int8_convolutions()?;
            exe.prepare()?;
            exe.fuse_epilogues()?;
            exe.use_levels_between_layers()?;
        }
        if options.fuse_broadcasts {
            exe.fuse_index_broadcasts()?;
            exe.fuse_shared_heads();
        }
        Ok(exe)
    }

    /// Runs this executable as a body inside its model's run (already in the pool): the
    /// values of its Parameters in order (then those of the nodes it was compiled to be
    /// given, [`Executable::compile_given`]), its Results' values in order.
    pub(crate) fn run_body(&self, inputs: Vec<Value>) -> Result<Vec<Value>, RunError> {
        for (i, (info, v)) in self.inputs.iter().zip(&inputs).enumerate() {
            let type_ok =
                info.element_type == ElementType::Dynamic || v.element_type() == info.element_type;
            if !type_ok || !info.shape.accepts(v.shape()) {
                return Err(RunError::new(
                    RunErrorKind::Op,
                    format!(
                        "body Parameter {i} (\"{}\") is declared {} {}, but receives {} {}",
                        info.layer_name,
                        info.element_type,
                        info.shape,
                        v.element_type(),
                        irun_tensor::fmt_shape(v.shape())
                    ),
                )
                .with_code(irun_ops::codes::RUN_SHAPE));
            }
        }
        let facts = self.concrete_facts(&inputs, &[])?;
        self.execute(inputs, &facts, &mut self.new_state(), None)
    }

    /// Offers every op its `prepare` (most prepare for constant inputs; some, such as
    /// ROIAlign, to read an input in another layout), the ops in parallel (packing a
    /// ResNet's filters one layer after another was nearly all of its load time); then keeps
    /// the preparations, in model order, while they hold at most half the memory limit
    /// together.
    fn prepare(&mut self) -> Result<(), RunError> {
        type Offer = (NodeId, Vec<Fact>, Vec<Option<Value>>);
        let mut offers: Vec<Offer> = Vec::new();
        for step in &self.plan.steps {
            if !matches!(step.source, Source::Op) {
                continue;
            }
            let n = step.node;
            if self.prepared[n].is_some() {
                continue;
            }
            let mut facts = Vec::new();
            let mut constants = Vec::new();
            for o in self.graph.nodes[n].inputs.iter().flatten() {
                facts.push(
                    self.graph.facts[o.node]
                        .get(o.slot)
                        .cloned()
                        .unwrap_or_else(Fact::unknown),
                );
                constants.push(self.constant_input(o.node, o.slot)?);
            }
            offers.push((n, facts, constants));
        }
        let mut kernels: Vec<Option<Box<dyn Prepared>>> = (0..offers.len()).map(|_| None).collect();
        let ops = &self.graph.ops;
        self.pool.install(|| {
            irun_ops::par::for_each_mut(&mut kernels, &|i, slot| {
                let (n, facts, constants) = &offers[i];
                let op = ops[*n].as_ref().expect("plan has only resolved ops");
                *slot = op.prepare(facts, constants);
            })
        });
        let mut total: u64 = self.prepared_bytes;
        for ((n, _, _), kernel) in offers.iter().zip(kernels) {
            let Some(kernel) = kernel else { continue };
            let bytes = kernel.byte_size() as u64;
            if total.saturating_add(bytes) <= self.memory_limit / 2 {
                total += bytes;
                self.prepared[*n] = Some(kernel);
            }
        }
        self.prepared_bytes = total;
        Ok(())
    }

    pub fn inputs(&self) -> &[InputInfo] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[OutputInfo] {
        &self.outputs
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The model's state variables (ReadValue/Assign pairs), in XML order of first use.
    pub fn variables(&self) -> &[VariableInfo] {
        &self.variables
    }

    /// A state for this model with every variable unset: its first run reads the initial
    /// values. Runs with the same state carry the variables over, as one OpenVINO infer
    /// request does.
    pub fn new_state(&self) -> State {
        State::new(self.variables.clone())
    }

    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The most bytes of tensors a run may hold at once (`Options::memory_limit`, by default
    /// the physical memory); what reading the inputs may take as well.
    pub fn memory_limit(&self) -> u64 {
        self.memory_limit
    }

    /// Runs the model on named inputs (a tensor name of a model input, or the Parameter's
    /// layer name); the outputs in model order, each with its key. Owned inputs let a scatter
    /// op update its data input in place. A model with state variables runs as on its first
    /// run (initial values), and what its Assigns store is dropped: use
    /// [`Executable::run_with_state`] to carry it over.
    pub fn run(&self, inputs: Vec<(String, Tensor)>) -> Result<Vec<(String, Tensor)>, RunError> {
        self.run_with_state(&mut self.new_state(), inputs)
    }

    /// As [`Executable::run`], with inputs the caller keeps (a benchmark loop): an op that would
    /// update such an input in place works on a copy.
    pub fn run_values(
        &self,
        inputs: Vec<(String, Value)>,
    ) -> Result<Vec<(String, Tensor)>, RunError> {
        self.run_values_with_state(&mut self.new_state(), inputs)
    }

    /// Runs the model with `state`: each ReadValue gives its variable's stored value (the
    /// initial value while unset) and, when the run succeeds, each Assign's input becomes its
    /// variable's value. A variable's value is handed to the run, not copied, so a scatter
    /// that updates the cache for its Assign updates it in place; if such a run fails, those
    /// variables are unset (the error says which) rather than left half-updated.
    pub fn run_with_state(
        &self,
        state: &mut State,
        inputs: Vec<(String, Tensor)>,
    ) -> Result<Vec<(String, Tensor)>, RunError> {
        self.run_values_with_state(
            state,
            inputs.into_iter().map(|(k, t)| (k, Arc::new(t))).collect(),
        )
    }

    /// As [`Executable::run_with_state`], with inputs the caller keeps.
    pub fn run_values_with_state(
        &self,
        state: &mut State,
        inputs: Vec<(String, Value)>,
    ) -> Result<Vec<(String, Tensor)>, RunError> {
        self.run_inner(state, inputs, None)
    }

    /// As [`Executable::run_values_with_state`], adding each layer's time (and the run's
    /// shape inference) to `profile`.
    pub fn run_profiled(
        &self,
        state: &mut State,
        inputs: Vec<(String, Value)>,
        profile: &mut Profile,
    ) -> Result<Vec<(String, Tensor)>, RunError> {
        let outputs = self.run_inner(state, inputs, Some(&mut *profile))?;
        profile.runs += 1;
        Ok(outputs)
    }

    fn run_inner(
        &self,
        state: &mut State,
        inputs: Vec<(String, Value)>,
        mut profile: Option<&mut Profile>,
    ) -> Result<Vec<(String, Tensor)>, RunError> {
        if state.variables[..] != self.variables[..] {
            return Err(RunError::new(
                RunErrorKind::Input,
                "the state is another model's: its variables differ from this model's".into(),
            ));
        }
        let bound = self.bind_inputs(inputs)?;
        let reads = self.variable_reads(state);
        let started = std::time::Instant::now();
        let facts = self.concrete_facts(&bound, &reads)?;
        if let Some(p) = profile.as_deref_mut() {
            p.inference += started.elapsed();
        }
        let awake = self
            .keep_workers_awake
            .then(|| Awake::start(&self.pool, self.caller_is_worker))
            .flatten();
        let outputs = self.pool.install(|| {
            Awake::mark_runner(awake.as_ref());
            self.execute(bound, &facts, state, profile)
        });
        drop(awake);
        let outputs = outputs?;
        Ok(self
            .outputs
            .iter()
            .zip(outputs)
            .map(|(info, v)| (info.key.clone(), Arc::unwrap_or_clone(v)))
            .collect())
    }
}

/// A pool of `options.threads` workers (every core by default); with
/// [`Options::caller_is_worker`], the calling thread is worker 0 where it can be, and the
/// flag says whether it is.
fn new_pool(options: &Options) -> Result<(rayon::ThreadPool, bool), RunError> {
    let threads = options
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let builder = || {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("irun-{i}"))
    };
    // rayon refuses a thread that already belongs to a pool; that one gets a pool of its own
    // workers. (A pool joined this way outlives its `ThreadPool` as the thread's registry:
    // one per thread at most.)
    if options.caller_is_worker && rayon::current_thread_index().is_none() {
        if let Ok(pool) = builder().use_current_thread().build() {
            return Ok((pool, true));
        }
    }
    builder().build().map(|pool| (pool, false)).map_err(|e| {
        RunError::new(
            RunErrorKind::Resources,
            format!("cannot start {threads} threads: {e}"),
        )
    })
}
