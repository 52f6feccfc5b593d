//! `Options`: how to compile a model, with a builder so that fields can be added without
//! breaking callers.

/// How to compile a model: `Options::new().threads(2)`, or [`Options::default`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Worker threads; `None` uses every core.
    pub threads: Option<usize>,
    /// The most bytes of tensors alive at once; `None` uses the machine's physical memory.
    pub memory_limit: Option<u64>,
    /// Let ops do compile-time work on their constant inputs ([`irun_ops::Op::prepare`]):
    /// a slower compile for faster runs, so worth it when the model runs more than once.
    /// Outputs are the same either way. Default: true.
    pub prepare_constants: bool,
    /// Let an op read an input as it was before the Broadcast that feeds it
    /// ([`irun_ops::Op::eval_broadcast`]; costs nothing at compile time). Outputs are the
    /// same either way. Default: true.
    pub fuse_broadcasts: bool,
    /// Keep the other workers spinning for the length of a run, so that parallel loops do
    /// not wait for them to wake (`awake.rs`); they burn their cores meanwhile, as
    /// OpenVINO's do. Outputs are the same either way. Default: false, so that a library
    /// never spins its host's cores unasked; the `irun` command turns it on.
    pub keep_workers_awake: bool,
    /// Make the compiling thread worker 0 of the pool, so that a run called from that
    /// thread executes on it directly instead of being handed to a worker and its result
    /// handed back: two cross-thread wake-ups less per run, 5-20 us on small VMs, which is
    /// a tenth of a small model's run. The price: the compiling thread takes pool work only
    /// while it runs the model, so runs called from any other thread have one worker fewer.
    /// A thread belongs to one pool at most, for as long as the process lives; when the
    /// compiling thread already belongs to one (a model compiled on it before with this
    /// option), the model gets a pool of its own workers, as without it. Outputs are the
    /// same either way. Default: false; the `irun` command, which compiles and runs on its
    /// main thread, turns it on.
    pub caller_is_worker: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            threads: None,
            memory_limit: None,
            prepare_constants: true,
            fuse_broadcasts: true,
            keep_workers_awake: false,
            caller_is_worker: false,
        }
    }
}

impl Options {
    /// The defaults: every core, the physical memory as the limit, constants prepared,
    /// workers sleeping between parallel loops.
    pub fn new() -> Options {
        Options::default()
    }

    /// Worker threads (at least 1).
    pub fn threads(mut self, threads: usize) -> Options {
        self.threads = Some(threads.max(1));
        self
    }

    /// The most bytes of tensors alive at once.
    pub fn memory_limit(mut self, bytes: u64) -> Options {
        self.memory_limit = Some(bytes);
        self
    }

    /// See [`Options::prepare_constants`](#structfield.prepare_constants).
    pub fn prepare_constants(mut self, on: bool) -> Options {
        self.prepare_constants = on;
        self
    }

    /// See [`Options::fuse_broadcasts`](#structfield.fuse_broadcasts).
    pub fn fuse_broadcasts(mut self, on: bool) -> Options {
        self.fuse_broadcasts = on;
        self
    }

    /// See [`Options::keep_workers_awake`](#structfield.keep_workers_awake).
    pub fn keep_workers_awake(mut self, on: bool) -> Options {
        self.keep_workers_awake = on;
        self
    }

    /// See [`Options::caller_is_worker`](#structfield.caller_is_worker).
    pub fn caller_is_worker(mut self, on: bool) -> Options {
        self.caller_is_worker = on;
        self
    }
}
