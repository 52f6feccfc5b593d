//! What compiling did to a model, counted for `irun bench`'s report and for the tests that
//! check a compile-time change engaged: folded layers, prepared kernels and the memory they
//! hold, fused epilogues, channel-last hand-overs, hoisted loop parts.

use std::sync::OnceLock;

use irun_ops::Value;

use crate::Executable;

impl Executable {
    /// How many layers inference computed from constants, so that they never run.
    pub fn folded(&self) -> usize {
        self.folded.iter().flatten().count()
    }

    /// How many layers run a kernel prepared for their constant inputs, and the bytes those
    /// preparations hold.
    pub fn prepared(&self) -> (usize, u64) {
        (self.prepared.iter().flatten().count(), self.prepared_bytes)
    }

    /// Bytes of memory the executable holds for the model's constants beyond the weights
    /// file: decoded Consts (those borrowed from the file count nothing), folded values and
    /// prepared kernels. Grows as runs decode Consts for the first time.
    pub fn held_bytes(&self) -> u64 {
        let owned = |v: &Value| {
            if v.is_borrowed() {
                0
            } else {
                v.byte_size() as u64
            }
        };
        let consts: u64 = self
            .consts
            .iter()
            .filter_map(OnceLock::get)
            .map(owned)
            .sum();
        let folded: u64 = self.folded.iter().flatten().flatten().map(owned).sum();
        consts + folded + self.prepared_bytes
    }

    /// How many layers a prepared kernel before them applies (an Add of a bias, a ReLU).
    pub fn fused(&self) -> usize {
        self.fused.iter().flatten().count()
    }

    /// How many kernels write their output channel-last for the kernel that reads it.
    pub fn channels_last_handovers(&self) -> usize {
        self.channels_last_out.iter().filter(|&&b| b).count()
    }

    /// How many kernels and MaxPools write u8 levels for readers that take them
    /// (`levels.rs`) in place of the f32 values the graph says.
    pub fn levels_handovers(&self) -> usize {
        self.levels_out.iter().filter(|&&b| b).count()
    }

    /// How many Loop and TensorIterator bodies (nested ones included) run their
    /// loop-invariant part before the loop (`hoist.rs`).
    pub fn hoisted_loops(&self) -> usize {
        self.flows
            .iter()
            .flatten()
            .map(|f| {
                usize::from(f.hoisted.is_ok())
                    + f.bodies
                        .iter()
                        .map(Executable::hoisted_loops)
                        .sum::<usize>()
            })
            .sum()
    }
}
