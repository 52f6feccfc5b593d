//! Where a run's time goes: per layer and for the shape inference a run with new input shapes
//! needs, accumulated over any number of runs (`irun bench --profile`).

use std::time::Duration;

use irun_graph::NodeId;

/// Time accumulated over `runs` profiled runs of one executable.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Per node (indexed by `NodeId`): the time its step took, summed over the runs. Zero for
    /// nodes that never ran (folded constants take next to nothing and are included).
    pub steps: Vec<Duration>,
    /// Shape inference for inputs whose shapes differ from the declared ones, summed.
    pub inference: Duration,
    /// How many runs were profiled.
    pub runs: u32,
}

impl Profile {
    /// Adds `d` to node `n`'s time, growing the table as needed.
    pub(crate) fn add(&mut self, n: NodeId, d: Duration) {
        if self.steps.len() <= n {
            self.steps.resize(n + 1, Duration::ZERO);
        }
        self.steps[n] += d;
    }

    /// The time of all steps, summed over the runs.
    pub fn total(&self) -> Duration {
        self.steps.iter().sum::<Duration>() + self.inference
    }
}
