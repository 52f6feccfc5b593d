//! The recurrent ops: LSTMSequence-5, GRUSequence-5, RNNSequence-5 and their one-step cells
//! LSTMCell-4, GRUCell-3, RNNCell-0. One file per op holds its attributes, arity and tests;
//! this module holds what they share: the attributes every cell has, the shape rules, and the
//! one kernel that runs every kind of cell over a sequence (a cell is a sequence of length one
//! without the direction and time dims).
//!
//! Semantics (OpenVINO's specification and reference, which its CPU plugin follows):
//! - gates are `x W^T + h R^T + B`, in the order f, i, c, o (LSTM), z, r, h (GRU);
//! - `clip` > 0 clamps every gate's input to `[-clip, clip]` before its activation (not the
//!   LSTM cell state before `h`);
//! - `activations` name `f` (gates), `g` (candidate) and `h` (LSTM output): sigmoid, tanh or
//!   relu, the three OpenVINO implements (`activations_alpha`/`_beta` are read and unused,
//!   as there);
//! - batch element `b` runs `lengths[b]` steps: forward over positions `0..len`, reverse over
//!   `len-1..=0`; `Y` is zero at the positions it does not reach, and the final state is the
//!   state after its last step, zero when its length is 0 (OpenVINO's reference and CPU).
//!
//! Floats only; f16/bf16 are computed in f32 and rounded once. `pass.rs` runs one direction
//! (the two of a bidirectional op side by side), `product.rs` its products with W and R,
//! prepared once (constant weights when the model is compiled); every output of a product
//! is summed by one task in one order, so results do not depend on the thread count.

pub mod gru_cell;
pub mod gru_sequence;
pub mod lstm_cell;
pub mod lstm_sequence;
mod pass;
mod product;
pub mod rnn_cell;
pub mod rnn_sequence;

use std::sync::Arc;

use irun_tensor::{element_count, Dim, ElementType, PartialShape, Tensor};

use crate::attrs::AttrReader;
use crate::conv::{narrow, widen};
use crate::fact::Fact;
use crate::kernel::try_zeroed;
use crate::op::{codes, expect_inputs, same_element_type, Op, OpError, Prepared, Value};
use crate::par;
use crate::util::{expect_int_type, ints};
use pass::{Pass, Real, Weights};

/// A gate's activation function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    Sigmoid,
    Tanh,
    Relu,
}

/// Which cell, with what makes one kind differ from another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Lstm,
    /// `linear_before_reset`: the reset gate multiplies `h R_h^T + Rb_h` rather than `h`.
    Gru {
        linear_before_reset: bool,
    },
    Rnn,
}

impl Kind {
    /// Gates stacked in W and R.
    fn gates(self) -> usize {
        match self {
            Kind::Lstm => 4,
            Kind::Gru { .. } => 3,
            Kind::Rnn => 1,
        }
    }

    /// Blocks of `hidden_size` in B: GRU with `linear_before_reset` keeps the candidate's
    /// recurrent bias apart.
    fn bias_blocks(self) -> usize {
        match self {
            Kind::Gru {
                linear_before_reset: true,
            } => 4,
            k => k.gates(),
        }
    }

    fn default_activations(self) -> &'static [Activation] {
        use Activation::*;
        match self {
            Kind::Lstm => &[Sigmoid, Tanh, Tanh],
            Kind::Gru { .. } => &[Sigmoid, Tanh],
            Kind::Rnn => &[Tanh],
        }
    }

    fn has_cell_state(self) -> bool {
        self == Kind::Lstm
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
    Bidirectional,
}

impl Direction {
    fn count(self) -> usize {
        if self == Direction::Bidirectional {
            2
        } else {
            1
        }
    }
}

/// Everything an op of this family knows besides its inputs.
#[derive(Clone, Debug)]
pub struct Recurrent {
    pub name: &'static str,
    pub kind: Kind,
    pub hidden_size: usize,
    pub activations: Vec<Activation>,
    /// 0: no clipping.
    pub clip: f64,
    pub direction: Direction,
    /// A cell: no direction or time dims, one step, no lengths input.
    pub cell: bool,
}

impl Recurrent {
    /// Reads the attributes every cell and sequence has; `direction` for sequences only.
    pub fn read(
        a: &AttrReader,
        name: &'static str,
        kind: Kind,
        cell: bool,
    ) -> Result<Recurrent, OpError> {
        let hidden = a.i64_or("hidden_size", None)?;
        let hidden_size = usize::try_from(hidden)
            .ok()
            .filter(|&h| h > 0)
            .ok_or_else(|| {
                OpError::attribute(
                    "hidden_size",
                    format!("`hidden_size=\"{hidden}\"` must be positive"),
                )
            })?;
        let defaults = kind.default_activations();
        let activations = match a.get("activations") {
            None => defaults.to_vec(),
            Some(attr) => {
                let names: Vec<&str> = attr
                    .value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect();
                if names.len() != defaults.len() {
                    return Err(OpError::attribute(
                        "activations",
                        format!(
                            "`activations=\"{}\"` must name {} function(s)",
                            attr.value,
                            defaults.len()
                        ),
                    ));
                }
                names
                    .iter()
                    .map(|n| match n.to_ascii_lowercase().as_str() {
                        "sigmoid" => Ok(Activation::Sigmoid),
                        "tanh" => Ok(Activation::Tanh),
                        "relu" => Ok(Activation::Relu),
                        _ => Err(OpError::attribute(
                            "activations",
                            format!(
                                "activation `{n}` is not one of sigmoid, tanh, relu \
                                 (the ones OpenVINO implements)"
                            ),
                        )),
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        for list in ["activations_alpha", "activations_beta"] {
            if let Some(attr) = a.get(list) {
                let bad = attr
                    .value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .any(|s| s.parse::<f64>().is_err());
                if bad {
                    return Err(OpError::attribute(
                        list,
                        format!("`{list}=\"{}\"` is not a list of numbers", attr.value),
                    ));
                }
            }
        }
        let clip = a.f64_or("clip", 0.0)?;
        if !(clip >= 0.0 && clip.is_finite()) {
            return Err(OpError::attribute(
                "clip",
                format!("`clip=\"{clip}\"` must be a finite number >= 0"),
            ));
        }
        let direction = if cell {
            Direction::Forward
        } else {
            match a.enum_or(
                "direction",
                &["forward", "reverse", "bidirectional"],
                "forward",
            )? {
                "reverse" => Direction::Reverse,
                "bidirectional" => Direction::Bidirectional,
                _ => Direction::Forward,
            }
        };
        Ok(Recurrent {
            name,
            kind,
            hidden_size,
            activations,
            clip,
            direction,
            cell,
        })
    }

    /// Rows of R that multiply the state before the gates are known: all, but for a GRU
    /// whose reset gate multiplies the state itself (z and r; the candidate's rows follow).
    fn early_rows(&self) -> usize {
        match self.kind {
            Kind::Gru {
                linear_before_reset: false,
            } => 2 * self.hidden_size,
            _ => self.kind.gates() * self.hidden_size,
        }
    }

    /// Input slots: X, H, C (LSTM), lengths (sequences), W, R, B.
    fn slots(&self) -> Slots {
        let c = self.kind.has_cell_state().then_some(2);
        let after_states = if c.is_some() { 3 } else { 2 };
        let lengths = (!self.cell).then_some(after_states);
        let w = after_states + usize::from(!self.cell);
        Slots {
            c,
            lengths,
            w,
            count: w + 3,
        }
    }

    /// What each dim of input `slot` is: `[batch, steps, input]` for a sequence's X,
    /// `[dirs, gates x hidden, input]` for its W, and so on; a cell has neither `Dirs` nor
    /// `Steps`.
    fn layout(&self, slot: usize) -> Vec<Role> {
        use Role::*;
        let s = self.slots();
        let dims: &[Role] = match slot {
            0 => &[Batch, Steps, Input],
            _ if slot == 1 || Some(slot) == s.c => &[Batch, Dirs, Hidden],
            _ if Some(slot) == s.lengths => &[Batch],
            _ if slot == s.w => &[Dirs, Gates, Input],
            _ if slot == s.w + 1 => &[Dirs, Gates, Hidden],
            _ => &[Dirs, Bias],
        };
        dims.iter()
            .copied()
            .filter(|r| !(self.cell && matches!(r, Dirs | Steps)))
            .collect()
    }

    /// The size a dim of this role must have, for the roles the attributes fix.
    fn fixed(&self, role: Role) -> Option<u64> {
        let hs = self.hidden_size as u64;
        match role {
            Role::Dirs => Some(self.direction.count() as u64),
            Role::Hidden => Some(hs),
            // Saturated: a hidden_size too large for any tensor then matches no dim.
            Role::Gates => Some(hs.saturating_mul(self.kind.gates() as u64)),
            Role::Bias => Some(hs.saturating_mul(self.kind.bias_blocks() as u64)),
            Role::Batch | Role::Steps | Role::Input => None,
        }
    }

    /// The shape input `slot` must have for these batch, steps and input sizes.
    fn shape_of(&self, slot: usize, batch: usize, steps: usize, input: usize) -> Vec<usize> {
        self.layout(slot)
            .iter()
            .map(|&role| match role {
                Role::Batch => batch,
                Role::Steps => steps,
                Role::Input => input,
                fixed => self
                    .fixed(fixed)
                    .expect("the attributes fix the other roles") as usize,
            })
            .collect()
    }

    /// Direction `d`'s weights out of all of W and R, prepared for `steps` x `batch`.
    fn weights_of<T: Real>(
        &self,
        d: usize,
        w: &[T],
        r: &[T],
        input: usize,
        steps: usize,
        batch: usize,
    ) -> Weights<T> {
        let rows = self.kind.gates() * self.hidden_size;
        Weights::new(
            self,
            per_direction(w, d, rows * input),
            per_direction(r, d, rows * self.hidden_size),
            input,
            steps,
            batch,
        )
    }

    /// Where the size of a fixed role comes from, for messages.
    fn why(&self, role: Role) -> String {
        let hs = self.hidden_size;
        match role {
            Role::Dirs => format!(" (direction {:?})", self.direction),
            Role::Gates => format!(" ({} x {hs})", self.kind.gates()),
            Role::Bias => format!(" ({} x {hs})", self.kind.bias_blocks()),
            _ => String::new(),
        }
    }

    /// The output shapes, `Y` (sequences), `H` and (LSTM) `C`, from the batch and steps.
    fn output_shapes<D: Copy>(&self, batch: D, steps: D, size: impl Fn(u64) -> D) -> Vec<Vec<D>> {
        let (dirs, hs) = (
            size(self.direction.count() as u64),
            size(self.hidden_size as u64),
        );
        let state = if self.cell {
            vec![batch, hs]
        } else {
            vec![batch, dirs, hs]
        };
        let mut out = Vec::new();
        if !self.cell {
            out.push(vec![batch, dirs, steps, hs]);
        }
        out.push(state.clone());
        if self.kind.has_cell_state() {
            out.push(state);
        }
        out
    }

    /// Checks the inputs' types and shapes and gives the outputs' facts.
    fn facts(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let name = self.name;
        let s = self.slots();
        expect_inputs(inputs, s.count, name)?;
        let floats: Vec<usize> = (0..s.count).filter(|&j| Some(j) != s.lengths).collect();
        let ty = same_element_type(inputs, &floats, name)?;
        if !ty.is_real() && ty != ElementType::Dynamic {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("{name}: X must be a floating-point type, got {ty}"),
            ));
        }
        if let Some(l) = s.lengths {
            expect_int_type(inputs, l, name)?;
        }
        // Batch, Steps and Input as the inputs that have them agree on them.
        let mut shared = [Role::Batch, Role::Steps, Role::Input].map(|role| (role, Dim::DYNAMIC));
        for (slot, input) in inputs.iter().enumerate() {
            let layout = self.layout(slot);
            let Some(dims) = input.shape.dims() else {
                continue;
            };
            if dims.len() != layout.len() {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    format!(
                        "{name}: input {slot} must have rank {}, got {}",
                        layout.len(),
                        input.shape
                    ),
                ));
            }
            for (&role, &d) in layout.iter().zip(dims) {
                let shape_error = |rule: String| {
                    OpError::input(
                        slot,
                        codes::SHAPE,
                        format!("{name}: input {slot} {} {rule}", input.shape),
                    )
                };
                if let Some(want) = self.fixed(role) {
                    if !d.contains(want) {
                        return Err(shape_error(format!(
                            "must have {} = {want}{}",
                            role.what(),
                            self.why(role)
                        )));
                    }
                } else if let Some((_, merged)) = shared.iter_mut().find(|(r, _)| *r == role) {
                    *merged = merged.intersect(d).ok_or_else(|| {
                        shape_error(format!(
                            "has {} {d}, which the inputs before it contradict",
                            role.what()
                        ))
                    })?;
                }
            }
        }
        let [(_, batch), (_, steps), _] = shared;
        Ok(self
            .output_shapes(batch, steps, Dim::fixed)
            .into_iter()
            .map(|dims| Fact::new(ty, PartialShape::new(dims)))
            .collect())
    }

    /// Runs the op on concrete inputs (checked again: shapes are never trusted to index).
    fn outputs(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let ty = inputs[0].element_type();
        let outs = match ty {
            ElementType::F32 => self.run::<f32>(&inputs, None)?,
            ElementType::F64 => self.run::<f64>(&inputs, None)?,
            ElementType::F16 | ElementType::Bf16 => {
                let lengths = self.slots().lengths;
                let mut wide = Vec::with_capacity(inputs.len());
                for (i, t) in inputs.iter().enumerate() {
                    wide.push(if Some(i) == lengths {
                        t.clone()
                    } else {
                        Arc::new(widen(t)?)
                    });
                }
                self.run::<f32>(&wide, None)?
                    .iter()
                    .map(|t| narrow(t, ty))
                    .collect::<Result<_, _>>()?
            }
            ty => {
                return Err(OpError::new(
                    codes::UNSUPPORTED_TYPE,
                    format!("{} on {ty}", self.name),
                ))
            }
        };
        Ok(outs.into_iter().map(Arc::new).collect())
    }

    /// The outputs in `T`; `prepared`: weights prepared per direction when the model was
    /// compiled, used where they serve these shapes.
    fn run<T: Real>(
        &self,
        inputs: &[Value],
        prepared: Option<&[Weights<T>]>,
    ) -> Result<Vec<Tensor>, OpError> {
        let name = self.name;
        let s = self.slots();
        if inputs.len() != s.count {
            return Err(OpError::new(
                codes::ARITY,
                format!("{name} takes {} inputs, got {}", s.count, inputs.len()),
            ));
        }
        let bad = |slot: usize| {
            OpError::input(
                slot,
                codes::RUN_SHAPE,
                format!(
                    "{name}: input {slot} {:?} has an unexpected type or shape",
                    inputs[slot].shape()
                ),
            )
        };
        let values = |slot: usize| inputs[slot].values::<T>().ok_or_else(|| bad(slot));
        let xs = inputs[0].shape();
        let seq = !self.cell;
        let (batch, steps, input_size) = match (seq, xs) {
            (true, &[b, t, i]) => (b, t, i),
            (false, &[b, i]) => (b, 1, i),
            _ => return Err(bad(0)),
        };
        let (hs, dirs) = (self.hidden_size, self.direction.count());
        for (slot, input) in inputs.iter().enumerate().skip(1) {
            if input.shape() != self.shape_of(slot, batch, steps, input_size) {
                return Err(bad(slot));
            }
        }
        let lengths: Vec<usize> = match s.lengths {
            None => vec![1; batch],
            Some(l) => ints(&inputs[l], l)?
                .iter()
                .enumerate()
                .map(|(b, &n)| {
                    usize::try_from(n)
                        .ok()
                        .filter(|&n| n <= steps)
                        .ok_or_else(|| {
                            OpError::input(
                                l,
                                codes::RUN_VALUE,
                                format!(
                                    "{name}: sequence length {n} of batch element {b} is \
                                         outside [0, {steps}]"
                                ),
                            )
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        let x = values(0)?;
        let h0 = values(1)?;
        let c0 = match s.c {
            Some(c) => Some(values(c)?),
            None => None,
        };
        let (w, r, bias) = (values(s.w)?, values(s.w + 1)?, values(s.w + 2)?);
        // Every count below is that of an input (the states, W) or at most Y's.
        let y_len = element_count(&[batch, dirs, steps, hs]).ok_or_else(|| {
            OpError::new(
                codes::MEMORY,
                format!("{name}: Y [{batch}, {dirs}, {steps}, {hs}] has too many elements"),
            )
        })?;
        // One direction: its Y `[batch, steps, hs]` and final states `[batch, hs]`. The two
        // of a bidirectional op run side by side (each step's products are too small to
        // keep two threads busy: 14% slower than OpenVINO one after the other).
        let direction = |d: usize| -> Result<DirectionOutputs<T>, OpError> {
            let fresh;
            let weights = match prepared.and_then(|p| p.get(d)) {
                Some(p) if p.serves(steps, batch) => p,
                _ => {
                    fresh = self.weights_of(d, w, r, input_size, steps, batch);
                    &fresh
                }
            };
            let pass = Pass {
                op: self,
                batch,
                steps,
                lengths: &lengths,
                reverse: self.direction == Direction::Reverse || d == 1,
                x,
                weights,
                bias: per_direction(bias, d, self.kind.bias_blocks() * hs),
            };
            // The states of this direction, gathered from [batch, dirs, hs].
            let gather = |v: &[T]| -> Vec<T> {
                (0..batch)
                    .flat_map(|b| v[(b * dirs + d) * hs..][..hs].iter().copied())
                    .collect()
            };
            let mut h = gather(h0);
            let mut c = c0.map(gather);
            let mut y = try_zeroed::<T>(y_len / dirs)?;
            pass.run(&mut h, c.as_deref_mut(), |b, pos, hb| {
                y[(b * steps + pos) * hs..][..hs].copy_from_slice(hb);
            })?;
            // A length of 0 leaves zero states.
            for (b, _) in lengths.iter().enumerate().filter(|(_, &n)| n == 0) {
                h[b * hs..][..hs].fill(T::default());
                if let Some(c) = &mut c {
                    c[b * hs..][..hs].fill(T::default());
                }
            }
            Ok((y, h, c))
        };
        let passes = par::try_map_tasks(dirs, &|d| direction(d).map_err(|e| (d, e)))?;
        // One direction's outputs are already [batch, 1, ...]; two are interleaved.
        let (y, h_out, c_out) = match <[DirectionOutputs<T>; 1]>::try_from(passes) {
            Ok([only]) => only,
            Err(passes) => interleave(&passes, batch, steps * hs, hs)?,
        };
        let mut values = vec![h_out];
        values.extend(c_out);
        if seq {
            values.insert(0, y);
        }
        let ty = inputs[0].element_type();
        self.output_shapes(batch, steps, |n| n as usize)
            .into_iter()
            .zip(values)
            .map(|(shape, v)| {
                Tensor::new(ty, shape, T::wrap(v))
                    .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
            })
            .collect()
    }
}

impl Op for Recurrent {
    fn name(&self) -> &'static str {
        self.name
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        self.facts(inputs)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.outputs(inputs)
    }

    /// Constant f32 W and R prepared for their products once (R^T in panels for one batch
    /// row, packed for several; W packed): a batch-1 LSTM step is a pass over R, and
    /// preparing it every run cost a tenth of the run.
    fn prepare(&self, inputs: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        let s = self.slots();
        let (w, r) = (
            constants.get(s.w)?.as_ref()?,
            constants.get(s.w + 1)?.as_ref()?,
        );
        let (wv, rv) = (w.values::<f32>()?, r.values::<f32>()?);
        let x = inputs.first()?.shape.dims()?;
        let known = |i: usize| x.get(i).and_then(|d| d.get_static()).map(|n| n as usize);
        let input = known(x.len().checked_sub(1)?)?;
        // Unknown batch or steps: prepared for several rows, which the run re-prepares for
        // one if that is what comes.
        let batch = known(0).unwrap_or(2);
        let steps = if self.cell { Some(1) } else { known(1) }.unwrap_or(2);
        if w.shape() != self.shape_of(s.w, batch, steps, input)
            || r.shape() != self.shape_of(s.w + 1, batch, steps, input)
        {
            return None; // the run reports them
        }
        let weights = (0..self.direction.count())
            .map(|d| self.weights_of(d, wv, rv, input, steps, batch))
            .collect();
        Some(Box::new(PreparedWeights {
            op: self.clone(),
            weights,
        }))
    }
}

/// A recurrent op with its constant f32 weights prepared.
#[derive(Debug)]
struct PreparedWeights {
    op: Recurrent,
    weights: Vec<Weights<f32>>,
}

impl Prepared for PreparedWeights {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        if inputs.first().map(|x| x.element_type()) != Some(ElementType::F32) {
            return self.op.outputs(inputs);
        }
        let outs = self.op.run::<f32>(&inputs, Some(&self.weights))?;
        Ok(outs.into_iter().map(Arc::new).collect())
    }

    fn byte_size(&self) -> usize {
        self.weights.iter().map(Weights::byte_size).sum()
    }
}

/// One direction's Y `[batch, steps, hidden]`, final H and (LSTM) C `[batch, hidden]`.
type DirectionOutputs<T> = (Vec<T>, Vec<T>, Option<Vec<T>>);

/// The directions' outputs interleaved into `[batch, dirs, ...]`: Y by runs of
/// `y_run` values, the states by `hs`.
fn interleave<T: Copy + Default>(
    passes: &[DirectionOutputs<T>],
    batch: usize,
    y_run: usize,
    hs: usize,
) -> Result<DirectionOutputs<T>, OpError> {
    let dirs = passes.len();
    let mut y = try_zeroed::<T>(batch * dirs * y_run)?;
    let mut h = try_zeroed::<T>(batch * dirs * hs)?;
    let mut c = if passes.first().is_some_and(|p| p.2.is_some()) {
        Some(try_zeroed::<T>(batch * dirs * hs)?)
    } else {
        None
    };
    for (d, (yd, hd, cd)) in passes.iter().enumerate() {
        for b in 0..batch {
            let at = b * dirs + d;
            y[at * y_run..][..y_run].copy_from_slice(&yd[b * y_run..][..y_run]);
            h[at * hs..][..hs].copy_from_slice(&hd[b * hs..][..hs]);
            if let (Some(c), Some(cd)) = (&mut c, cd) {
                c[at * hs..][..hs].copy_from_slice(&cd[b * hs..][..hs]);
            }
        }
    }
    Ok((y, h, c))
}

/// Where an op's inputs are.
struct Slots {
    c: Option<usize>,
    lengths: Option<usize>,
    /// W; R and B follow it.
    w: usize,
    count: usize,
}

/// Direction `d`'s block of `n` values.
fn per_direction<T>(v: &[T], d: usize, n: usize) -> &[T] {
    &v[d * n..(d + 1) * n]
}

/// What a dim of an input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Batch,
    Steps,
    Input,
    Dirs,
    Hidden,
    /// The gates stacked: gates x hidden.
    Gates,
    /// The bias blocks stacked: blocks x hidden.
    Bias,
}

impl Role {
    fn what(self) -> &'static str {
        match self {
            Role::Batch => "batch size",
            Role::Steps => "sequence length",
            Role::Input => "input size",
            Role::Dirs => "directions",
            Role::Hidden => "hidden_size",
            Role::Gates => "gates x hidden_size",
            Role::Bias => "bias blocks x hidden_size",
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
