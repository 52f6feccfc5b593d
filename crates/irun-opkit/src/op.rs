//! The op trait; the error every op reports through lives in [`crate::error`].

use std::fmt::Debug;
use std::sync::Arc;

use irun_tensor::{ElementType, Tensor};

pub use crate::error::{codes, OpError};
use crate::fact::Fact;

/// A tensor flowing between nodes at run time. Shared, so that a value read by several
/// consumers is not copied; an op that owns the only reference may reuse its buffer.
pub type Value = Arc<Tensor>;

/// An op of a graph node, built from a layer's attributes by the registry.
///
/// `infer` is required: every op validates its inputs and computes its output facts. It may
/// read the values of exactly the inputs listed in `value_inputs` (the axis of the scatter
/// ops, the target shape of Reshape); the graph pass supplies those when they are constant.
///
/// `eval` computes output tensors from input tensors. The executor calls it only after `infer`
/// accepted the concrete input facts, but `eval` still checks everything that only values can
/// show (index ranges) and never trusts shapes to index memory.
pub trait Op: Debug + Send + Sync {
    /// `Type-vN` of the C++ class, e.g. `ScatterElementsUpdate-12` (used in messages).
    fn name(&self) -> &'static str;

    /// Input facts -> output facts, or the first rule the inputs break.
    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError>;

    /// Inputs whose values `infer` reads when they are known.
    fn value_inputs(&self) -> &'static [usize] {
        &[]
    }

    /// Input tensors -> output tensors. Runs inside the executor's thread pool, so rayon's
    /// parallel iterators use `--threads` workers. The default is for the source ops (Parameter,
    /// Const) whose values the executor supplies itself.
    fn eval(&self, _inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        Err(OpError::new(
            codes::NOT_EXECUTABLE,
            format!("{} has no kernel", self.name()),
        ))
    }

    /// [`Op::eval`] in a graph that reads output `slot` only where `read[slot]` is true: an
    /// op may skip the work of an unread output and return an empty tensor (shape `[0]`, its
    /// element type) in its place; the executor drops it unchecked. The default computes
    /// everything.
    fn eval_reading(&self, inputs: Vec<Value>, read: &[bool]) -> Result<Vec<Value>, OpError> {
        let _ = read;
        self.eval(inputs)
    }

    /// Whether inference may evaluate the op when all its inputs are known (constant folding).
    /// Ops with state or side effects (ReadValue, Assign, random generators without a fixed
    /// seed) return false.
    fn may_fold(&self) -> bool {
        true
    }

    /// The state variable this node reads (ReadValue) or writes (Assign); `None` for every
    /// other op. The executor serves these nodes itself: it keeps the variables' values
    /// between runs, so the ops only infer.
    fn variable(&self) -> Option<VariableAccess<'_>> {
        None
    }

    /// The input whose buffer the output may take over when nothing else reads it (the data
    /// input of the scatter ops). The executor then hands `eval` the only reference.
    fn inplace_input(&self) -> Option<usize> {
        None
    }

    /// Compile-time work on constant inputs. The executor calls this once per node with the
    /// facts of its inputs (as inferred for the declared model inputs) and the value of every
    /// input that a Const feeds (`None` for the others). An op may return a [`Prepared`]
    /// kernel that did part of the work once (validated indices grouped by output region, say);
    /// the executor then runs that instead of `eval` on every run. `None`, the default, when
    /// there is nothing to gain or the constants are not valid (so that the run reports them).
    fn prepare(&self, _inputs: &[Fact], _constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        None
    }

    /// The input that [`Op::eval_broadcast`] can take before a broadcast; `None`, the
    /// default, for ops that cannot.
    fn broadcast_input(&self) -> Option<usize> {
        None
    }

    /// [`Op::eval`] with input [`Op::broadcast_input`] as it was before a broadcast (numpy or
    /// bidirectional rules) to shape `to`: the op reads each value where the broadcast would
    /// have copied it, and must give what `eval` gives on the broadcast input. It takes the
    /// inputs out of `inputs` only when it runs; `Ok(None)`, with `inputs` untouched, when it
    /// does not serve these shapes (the caller then broadcasts and calls `eval`).
    fn eval_broadcast(
        &self,
        _inputs: &mut Vec<Value>,
        _to: &[usize],
    ) -> Result<Option<Vec<Value>>, OpError> {
        Ok(None)
    }

    /// [`Op::eval`] with inputs 1 and 2 (an attention's keys and values, `[..., heads, S,
    /// E]`) as they were before each of their heads was repeated `groups` times in a row
    /// (grouped-query attention: query head `h` reads key head `h / groups`): the op reads
    /// the shared heads where the repeat would have copied them, and must give what `eval`
    /// gives on the repeated inputs. `Ok(None)`, with `inputs` untouched, when it does not
    /// serve these inputs (the caller then repeats the heads and calls `eval`).
    fn eval_shared_heads(
        &self,
        _inputs: &mut Vec<Value>,
        _groups: usize,
    ) -> Result<Option<Vec<Value>>, OpError> {
        Ok(None)
    }
}

/// How a stateful node uses its variable, named by `variable_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariableAccess<'a> {
    /// ReadValue: its output is the variable's value, or its initial value while unset.
    Read(&'a str),
    /// Assign: its input becomes the variable's value for the next run.
    Write(&'a str),
}

/// An op's kernel specialised by [`Op::prepare`] for its constant inputs. `eval` gets the same
/// inputs as [`Op::eval`] (the constants included) and must return the same outputs or the same
/// error for every input, so inputs the preparation does not cover (a data shape other than the
/// compiled one, after re-inference) go to the op's own kernel.
pub trait Prepared: Debug + Send + Sync {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError>;

    /// Bytes the preparation holds, for `irun bench`'s report and the memory accounting.
    fn byte_size(&self) -> usize;

    /// Takes over the ops after this one (see [`crate::epilogue`]): from now on every output
    /// of `eval` has `e` applied. `false`, and nothing changed, when the kernel cannot (the
    /// default) or the bias does not have one value per output channel.
    fn set_epilogue(&mut self, e: &crate::epilogue::Epilogue) -> bool {
        let _ = e;
        false
    }

    /// Takes over a ReduceMax-1 over dim -2 of the output (the rows of each matrix), after
    /// the epilogue if there is one: from now on `eval` returns the maxima, the output's
    /// shape without that dim (or with it 1, `keep_dims`). `false`, and nothing changed,
    /// when the kernel cannot (the default).
    fn set_row_max(&mut self, keep_dims: bool) -> bool {
        let _ = keep_dims;
        false
    }

    /// Offers the FakeQuantize-1 that reads the output after the epilogue, as the epilogue's
    /// last step: its ranges, one for all or one per output channel (dim 1); whether the
    /// kernel applies it (the graph's FakeQuantize then passes its input through).
    fn set_output_quantize(&mut self, q: &[crate::quantize::FakeQuantizeRange]) -> bool {
        let _ = q;
        false
    }

    /// Takes over the residual Add (and the ReLU and FakeQuantize after it) that reads the
    /// output after the epilogue and the output FakeQuantize: from now on `eval` takes the
    /// Add's other input as one more input, last, of the output's shape, and returns the
    /// values after `r`. `false`, and nothing changed, when the kernel cannot (the default).
    fn set_residual(&mut self, r: &crate::epilogue::Residual) -> bool {
        let _ = r;
        false
    }

    /// Writes the one output as the u8 levels of `q` (each byte the level the f32 value
    /// lands on, standing for [`crate::quantize::FakeQuantizeRange::value_of_level`]) from
    /// now on, for readers that all take levels ([`Prepared::set_levels_input`]); an output
    /// that has no level (NaN) makes the whole output f32 again, which every such reader
    /// also takes. `false`, and nothing changed, when the kernel cannot (the default) or
    /// its last FakeQuantize is not `q`.
    fn set_levels_output(&mut self, q: &crate::quantize::FakeQuantizeRange) -> bool {
        let _ = q;
        false
    }

    /// Takes input `slot` as [`Prepared::set_levels_output`] writes it for `q`, from now on,
    /// as well as f32. `false`, and nothing changed, when the kernel cannot (the default) or
    /// `q`'s levels are not what it reads.
    fn set_levels_input(&mut self, slot: usize, q: &crate::quantize::FakeQuantizeRange) -> bool {
        let _ = (slot, q);
        false
    }

    /// Writes the one output `[n, c, *spatial]` channel-last, as a tensor of shape `[n,
    /// *spatial, c]` with the same values, from now on (`on`), or as declared again (`!on`),
    /// for a reader that takes it so ([`Prepared::set_channels_last_input`]): the values
    /// then never make the trip through memory in the declared layout. `false`, and nothing
    /// changed, when the kernel cannot (the default).
    fn set_channels_last_output(&mut self, on: bool) -> bool {
        let _ = on;
        false
    }

    /// Reads input `slot` as [`Prepared::set_channels_last_output`] writes it, from now on:
    /// a tensor `[n, *spatial, c]` in place of the declared `[n, c, *spatial]`, the outputs
    /// unchanged. `false`, and nothing changed, when the kernel cannot (the default).
    fn set_channels_last_input(&mut self, slot: usize) -> bool {
        let _ = slot;
        false
    }
}

/// Checks the number of inputs.
pub fn expect_inputs(inputs: &[Fact], n: usize, op: &str) -> Result<(), OpError> {
    if inputs.len() != n {
        return Err(OpError::new(
            codes::ARITY,
            format!("{op} takes {n} inputs, got {}", inputs.len()),
        ));
    }
    Ok(())
}

/// Checks that an op with optional trailing inputs got between `min` and `max` of them.
pub fn expect_inputs_between(
    inputs: &[Fact],
    min: usize,
    max: usize,
    op: &str,
) -> Result<(), OpError> {
    if !(min..=max).contains(&inputs.len()) {
        let counts = match max - min {
            1 => format!("{min} or {max}"),
            _ => format!("{min} to {max}"),
        };
        return Err(OpError::new(
            codes::ARITY,
            format!("{op} takes {counts} inputs, got {}", inputs.len()),
        ));
    }
    Ok(())
}

/// The merged element type of inputs `slots` (dynamic merges with anything), or OpenVINO's
/// error naming the first input that differs.
pub fn same_element_type(
    inputs: &[Fact],
    slots: &[usize],
    op: &str,
) -> Result<ElementType, OpError> {
    let mut ty = ElementType::Dynamic;
    for &j in slots {
        let t = inputs[j].ty;
        if ty == ElementType::Dynamic {
            ty = t;
        } else if t != ElementType::Dynamic && t != ty {
            return Err(OpError::input(
                j,
                codes::ELEMENT_TYPE,
                format!("{op}: arguments do not have the same element type ({ty} and {t})"),
            ));
        }
    }
    Ok(ty)
}

/// The inputs of `eval` as an array of exactly `N` values.
pub fn take_inputs<const N: usize>(inputs: Vec<Value>, op: &str) -> Result<[Value; N], OpError> {
    inputs.try_into().map_err(|v: Vec<Value>| {
        OpError::new(
            codes::ARITY,
            format!("{op} takes {N} inputs, got {}", v.len()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_counts_out_of_an_optional_range_are_refused_by_name() {
        let three = vec![Fact::unknown(); 3];
        assert!(expect_inputs_between(&three, 2, 3, "RDFT-9").is_ok());
        assert!(expect_inputs_between(&three, 3, 5, "ScaledDotProductAttention-13").is_ok());
        let e = expect_inputs_between(&three[..1], 2, 3, "RDFT-9").unwrap_err();
        assert_eq!(e.code, codes::ARITY);
        assert_eq!(e.message, "RDFT-9 takes 2 or 3 inputs, got 1");
        let e = expect_inputs_between(&three[..2], 3, 5, "SDPA").unwrap_err();
        assert_eq!(e.message, "SDPA takes 3 to 5 inputs, got 2");
        let e = expect_inputs_between(&three, 1, 2, "Squeeze-1").unwrap_err();
        assert_eq!(e.message, "Squeeze-1 takes 1 or 2 inputs, got 3");
    }
}
