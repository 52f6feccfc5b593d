//! The run loop: each step of the plan in order, a node's inputs taken from the values
//! alive (the last reader takes the buffer itself), its output checked against its facts and
//! the memory limit, folded, fused and passed-through nodes served as the compile step
//! marked them, and the Assigns' values stored in the state once the whole run succeeded.

use std::sync::Arc;

use irun_graph::NodeId;
use irun_ops::{Fact, Value};
use irun_tensor::Tensor;

use crate::plan::{self, Source};
use crate::{Executable, Profile, RunError, RunErrorKind, State};

impl Executable {
    /// Evaluates the plan with `state`'s variables; on success, stores what the Assigns
    /// received. Runs inside the pool.
    pub(crate) fn execute(
        &self,
        inputs: Vec<Value>,
        facts: &[Vec<Fact>],
        state: &mut State,
        profile: Option<&mut Profile>,
    ) -> Result<Vec<Value>, RunError> {
        let holds: Vec<bool> = state.values.iter().map(Option::is_some).collect();
        let schedule = self.plan.schedule(&holds);
        // Variables whose stored value this run took over (to update it in place), and what
        // the Assigns stored.
        let mut taken: Vec<usize> = Vec::new();
        let mut stored: Vec<Option<Value>> = vec![None; self.variables.len()];
        let result = self.execute_steps(
            inputs,
            facts,
            state,
            &schedule,
            (&mut taken, &mut stored),
            profile,
        );
        match result {
            Ok(outputs) => {
                for (v, value) in stored.into_iter().enumerate() {
                    if let Some(value) = value {
                        state.values[v] = Some(value);
                    }
                }
                Ok(outputs)
            }
            Err(mut e) if !taken.is_empty() => {
                let ids: Vec<String> = taken
                    .iter()
                    .map(|&v| format!("`{}`", self.variables[v].id))
                    .collect();
                e.message = format!(
                    "{}; the run had taken over variable(s) {} to update in place, so they are now unset (the next run starts them from their initial values)",
                    e.message,
                    ids.join(", ")
                );
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    fn execute_steps(
        &self,
        inputs: Vec<Value>,
        facts: &[Vec<Fact>],
        state: &mut State,
        schedule: &plan::Schedule,
        (taken, stored): (&mut Vec<usize>, &mut [Option<Value>]),
        mut profile: Option<&mut Profile>,
    ) -> Result<Vec<Value>, RunError> {
        let mut inputs: Vec<Option<Value>> = inputs.into_iter().map(Some).collect();
        let mut values: Vec<Option<Value>> = vec![None; self.plan.outlet_count];
        let mut remaining = schedule.readers.clone();
        let mut outputs: Vec<Option<Value>> = vec![None; self.outputs.len()];
        // The shape inputs of the Broadcasts whose readers take their data before them.
        let mut held: Vec<(NodeId, Vec<Value>)> = Vec::new();
        // The variables' values are in use all along: held by the state, then by the run.
        let mut live_bytes: u64 = self.prepared_bytes
            + state.byte_size()
            + inputs
                .iter()
                .flatten()
                .map(|v| v.byte_size() as u64)
                .sum::<u64>();
        for (step, _) in self
            .plan
            .steps
            .iter()
            .zip(&schedule.runs)
            .filter(|(_, &runs)| runs)
        {
            let n = step.node;
            let started = profile.is_some().then(std::time::Instant::now);
            // A value already counted in `live_bytes` (a model input, a variable's value).
            let mut counted = false;
            let produced: Vec<Value> = match &step.source {
                Source::Input(i) => {
                    counted = true;
                    vec![inputs[*i].take().expect("each input is read once")]
                }
                Source::ReadValue(v) if state.values[*v].is_some() => {
                    counted = true;
                    let value = if self.plan.written[*v] {
                        // Handed over, so that the only reference reaches the op that
                        // updates the cache for the Assign.
                        taken.push(*v);
                        state.values[*v].take()
                    } else {
                        state.values[*v].clone()
                    };
                    vec![value.expect("checked: the variable holds a value")]
                }
                Source::ReadValue(_) if step.inputs.is_empty() => {
                    let need = self.output_bytes(n, &facts[n])?;
                    self.check_memory(n, need, live_bytes)?;
                    let f = &facts[n][0];
                    let shape = f.shape.to_static().unwrap_or_default();
                    let zeros = Tensor::zeros(f.ty, shape).map_err(|e| {
                        self.layer_error(n, RunErrorKind::Op, format!("initial value: {e}"))
                    })?;
                    vec![Arc::new(zeros)]
                }
                Source::ReadValue(v) => {
                    let (value, last) = read_outlet(&mut values, &mut remaining, step.inputs[0]);
                    if last {
                        live_bytes = live_bytes.saturating_sub(value.byte_size() as u64);
                    }
                    state.check(*v, &value).map_err(|m| {
                        self.layer_error(
                            n,
                            RunErrorKind::Op,
                            format!("the initial value does not fit: {m}"),
                        )
                    })?;
                    vec![value]
                }
                Source::Assign(v) => {
                    // The value stays alive as the state's: no bytes freed.
                    let (value, _) = read_outlet(&mut values, &mut remaining, step.inputs[0]);
                    state.check(*v, &value).map_err(|m| {
                        self.layer_error(
                            n,
                            RunErrorKind::Op,
                            format!("cannot store the value: {m}"),
                        )
                    })?;
                    stored[*v] = Some(value);
                    continue;
                }
                Source::Const => {
                    vec![self.constant(n, self.memory_limit.saturating_sub(live_bytes))?]
                }
                Source::Op if self.folded[n].is_some() => {
                    for &o in &step.inputs {
                        remaining[o] -= 1;
                        if remaining[o] == 0 {
                            if let Some(v) = values[o].take() {
                                live_bytes = live_bytes.saturating_sub(v.byte_size() as u64);
                            }
                        }
                    }
                    self.folded[n].clone().expect("checked")
                }
                Source::Op => {
                    let need = match self.fused[n] {
                        Some(_) => 0,
                        None if self.flows[n].is_some() => self.output_bytes(n, &facts[n])?,
                        None => self.op_output_bytes(n, facts, &step.inputs, &values)?,
                    };
                    self.check_memory(n, need, live_bytes)?;
                    let args: Vec<Value> = step
                        .inputs
                        .iter()
                        .map(|&o| {
                            let (v, last) = read_outlet(&mut values, &mut remaining, o);
                            if last {
                                live_bytes = live_bytes.saturating_sub(v.byte_size() as u64);
                            }
                            v
                        })
                        .collect();
                    if let Some(flow) = &self.flows[n] {
                        // A Loop, TensorIterator or If: its bodies run here, not an op kernel.
                        let produced = self.run_flow(n, flow, args)?;
                        self.check_outputs(n, &produced, &facts[n], |_| true)?;
                        produced
                    } else {
                        let op = self.graph.ops[n]
                            .as_ref()
                            .expect("plan has only resolved ops");
                        let outlets = self.plan.outlets(n);
                        let result = match (&self.prepared[n], self.fused[n]) {
                            // Applied by the kernel that produced the input, or by the one that
                            // reads the output: passed through.
                            (_, Some(slot)) => {
                                if self.keeps_inputs[n] {
                                    held.push((n, args[1..].to_vec()));
                                }
                                Ok(args.into_iter().skip(slot).take(1).collect())
                            }
                            (Some(kernel), None) => kernel.eval(args),
                            (None, None) => {
                                // What the memory limit leaves a broadcast made after all.
                                let left = self
                                    .memory_limit
                                    .saturating_sub(live_bytes.saturating_add(need));
                                match (&self.index_broadcasts[n], &self.shared_heads[n]) {
                                    (Some(fused), _) => {
                                        self.run_index_broadcast(n, fused, args, &held, left)
                                    }
                                    (None, Some(shared)) => {
                                        self.run_shared_heads(n, shared, args, &held, left)
                                    }
                                    (None, None) if outlets.len() > 1 => {
                                        let read: Vec<bool> =
                                            outlets.clone().map(|o| remaining[o] > 0).collect();
                                        op.eval_reading(args, &read)
                                    }
                                    (None, None) => op.eval(args),
                                }
                            }
                        };
                        let produced = result.map_err(|e| {
                            self.layer_error(n, RunErrorKind::Op, e.message)
                                .with_code(e.code)
                        })?;
                        // A passed-through value is what its reader expects, not the node's fact;
                        // an output nothing reads may be a placeholder (`Op::eval_reading`).
                        if self.fused[n].is_none() {
                            let read = |slot: usize| {
                                let o = outlets.start + slot;
                                !outlets.contains(&o) || remaining[o] > 0
                            };
                            let moved: Vec<Fact>;
                            let expected = if self.channels_last_out[n] {
                                moved = facts[n].iter().map(Fact::channels_last).collect();
                                &moved[..]
                            } else {
                                &facts[self.reduced_into[n].unwrap_or(n)][..]
                            };
                            self.check_outputs(n, &produced, expected, read)?;
                        }
                        produced
                    }
                }
            };
            if let (Some(p), Some(t)) = (profile.as_deref_mut(), started) {
                p.add(n, t.elapsed());
            }
            if let Some(k) = step.output_index {
                outputs[k] = produced.into_iter().next();
                continue;
            }
            // Inputs and variables were counted from the start; everything else from when it
            // is produced.
            for (slot, v) in produced.into_iter().enumerate() {
                let o = self.plan.outlet(n, slot);
                let bytes = v.byte_size() as u64;
                if remaining[o] > 0 {
                    if !counted {
                        live_bytes = live_bytes.saturating_add(bytes);
                    }
                    values[o] = Some(v);
                } else if counted {
                    live_bytes = live_bytes.saturating_sub(bytes);
                }
            }
        }
        Ok(outputs
            .into_iter()
            .map(|o| o.expect("every Result runs"))
            .collect())
    }
}

/// Reads outlet `o` once: its value, taken by its last reader (then `true`) and shared with
/// the others.
fn read_outlet(values: &mut [Option<Value>], remaining: &mut [u32], o: usize) -> (Value, bool) {
    remaining[o] -= 1;
    match remaining[o] == 0 {
        true => (values[o].take().expect("produced before read"), true),
        false => (values[o].clone().expect("produced before read"), false),
    }
}
