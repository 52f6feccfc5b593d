//! ScatterElementsUpdate-3 and -12: `out[idx with idx[axis] = indices[idx]] (op)= updates[idx]`
//! for every position `idx` of indices/updates.
//!
//! Inputs: data (rank r), indices (rank r, integer), updates (indices' shape), axis (rank 0 or
//! 1, element 0 used). v12 adds `reduction` (none, sum, prod, min, max, mean; default none) and
//! `use_init_val` (default true). Output: data's shape, merged data/updates type.
//!
//! Files: this one has the op (attributes, inference, `eval`, `prepare`); `strategy` which
//! way a run goes and why (the one place to read first); `runtime` the run's entries and
//! `execute`, which runs the chosen strategy; `kernel` the state every strategy shares;
//! `geometry` the addressing the kernel and the compile-time plan share; then one file per
//! strategy family: `rows`, `plan`, `lean` (with `local` and `monotone` for local
//! indices), `private`, `split`, and `partition` / `buckets` / `two_way` / `fused` for the
//! bucketed rounds.

mod buckets;
mod fused;
mod geometry;
mod kernel;
mod lean;
mod local;
mod monotone;
mod partition;
mod plan;
mod private;
mod rows;
mod runtime;
mod split;
mod strategy;
#[cfg(test)]
mod tests_broadcast;
#[cfg(test)]
mod tests_eval;
#[cfg(test)]
mod tests_halves;
#[cfg(test)]
mod tests_index_types;
#[cfg(test)]
mod tests_infer;
#[cfg(test)]
mod tests_kit;
#[cfg(test)]
mod tests_local;
#[cfg(test)]
mod tests_prepared;
#[cfg(test)]
mod tests_private;
#[cfg(test)]
mod tests_runs;
#[cfg(test)]
mod tests_split;
mod two_way;

use std::sync::{Arc, OnceLock};

use irun_tensor::ElementType;

use self::geometry::Geometry;
use self::kernel::ElementsKernel;
use self::plan::ElementsPlan;
use self::strategy::Tuning;
use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::op::{codes, expect_inputs, take_inputs, Op, OpError, Prepared, Value};
use crate::par;
use crate::reduce::{dispatch_from, MinMaxRule};
use crate::{
    axis_value, check_same_type, is_index_type, merge_data_updates, normalize_axis, product,
    runtime_axis, runtime_indices, Reduction,
};

#[derive(Debug, Clone, PartialEq)]
pub struct ScatterElementsUpdate {
    /// 3 or 12.
    pub version: u32,
    pub reduction: Reduction,
    pub use_init_val: bool,
}

pub fn build_v3(_: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(ScatterElementsUpdate {
        version: 3,
        reduction: Reduction::None,
        use_init_val: true,
    }))
}

pub fn build_v12(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let reduction = Reduction::parse(a.enum_or(
        "reduction",
        &["none", "sum", "prod", "min", "max", "mean"],
        "none",
    )?)?;
    let use_init_val = a.bool_or("use_init_val", true)?;
    Ok(Box::new(ScatterElementsUpdate {
        version: 12,
        reduction,
        use_init_val,
    }))
}

impl Op for ScatterElementsUpdate {
    fn name(&self) -> &'static str {
        if self.version == 3 {
            "ScatterElementsUpdate-3"
        } else {
            "ScatterElementsUpdate-12"
        }
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[3]
    }

    fn inplace_input(&self) -> Option<usize> {
        Some(0)
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.eval_with(inputs, None)
    }

    fn broadcast_input(&self) -> Option<usize> {
        Some(1)
    }

    /// Indices broadcast along every dim after the axis (torch's
    /// `index.unsqueeze(1).expand(-1, d)`) hold one index per line of inner columns: the row
    /// path reads that one, where the broadcast would have written it `d` times.
    fn eval_broadcast(
        &self,
        inputs: &mut Vec<Value>,
        to: &[usize],
    ) -> Result<Option<Vec<Value>>, OpError> {
        if !self.line_indices_fit(inputs, to) {
            return Ok(None);
        }
        self.eval_lines(std::mem::take(inputs), None, true)
            .map(Some)
    }

    /// With constant indices (and axis), the indices' offsets are computed and grouped by
    /// output bucket once (`ElementsPlan`), at the first run that gets them; with constant
    /// updates too, the updates are stored in that order. Only for static data and enough
    /// indices to be worth the memory.
    fn prepare(&self, inputs: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        let ([data_fact, indices_fact, updates_fact, _], [_, Some(indices), updates, Some(axis)]) =
            (inputs, constants)
        else {
            return None;
        };
        let (indices, axis, updates) = (indices.clone(), axis.clone(), updates.clone());
        let data_shape = data_fact.shape.to_static()?;
        if indices.len() < Tuning::PLAN_MIN_INDICES
            || indices_fact.shape.to_static().as_deref() != Some(indices.shape())
            || updates_fact.shape.to_static().as_deref() != Some(indices.shape())
            || updates_fact.ty != data_fact.ty
        {
            return None;
        }
        let axis_index = runtime_axis(&axis, data_shape.len(), 3).ok()?;
        let geometry =
            Geometry::new(&data_shape, indices.shape(), indices.shape(), axis_index).ok()?;
        let elem_bytes = data_fact.ty.bit_width().div_ceil(8).max(1) as usize;
        Some(Box::new(PreparedElementsUpdate {
            op: self.clone(),
            plan: OnceLock::new(),
            geometry,
            elem_bytes,
            data_shape,
            indices,
            axis,
            updates,
        }))
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 4, self.name())?;
        let (data, indices, updates, axis) = (&inputs[0], &inputs[1], &inputs[2], &inputs[3]);
        // Stricter than OpenVINO, whose is_integral() also admits boolean/u1/nf4/string indices.
        if !is_index_type(indices.ty) {
            return Err(OpError::input(
                1,
                codes::ELEMENT_TYPE,
                format!(
                    "Indices element type must be an integer type, but is: {}",
                    indices.ty
                ),
            ));
        }
        if !axis.ty.is_integral() || !is_index_type(axis.ty) {
            return Err(OpError::input(
                3,
                codes::ELEMENT_TYPE,
                format!(
                    "Axis element type must be an integer type, but is: {}",
                    axis.ty
                ),
            ));
        }
        let ty = merge_data_updates(
            data,
            updates,
            2,
            "Data type and updates type are required to be the same",
        )?;
        if self.reduction == Reduction::Mean && ty == ElementType::Boolean {
            return Err(OpError::attribute(
                "reduction",
                "The 'mean' reduction type is not supported for boolean tensors",
            ));
        }
        if axis.rank().is_some_and(|r| r > 1) {
            return Err(OpError::input(
                3,
                codes::RANK,
                format!(
                    "Axis input shape are required to be scalar or 1D tensor. Got: {}",
                    axis.shape
                ),
            ));
        }
        if let (Some(r), Some(q)) = (data.rank(), indices.rank()) {
            if r != q {
                return Err(OpError::input(
                    1,
                    codes::RANK,
                    format!(
                        "Indices rank and data rank are required to be equal. Got: {q} and: {r}"
                    ),
                ));
            }
        }
        if !indices.shape.compatible(&updates.shape) {
            return Err(OpError::input(
                2,
                codes::SHAPE,
                format!(
                    "Indices and updates input shapes are required to be equal. Got: {} and: {}",
                    indices.shape, updates.shape
                ),
            ));
        }
        let out = Fact::new(ty, data.shape.clone());
        let (Some(r), Some(a)) = (data.rank(), axis_value(axis)) else {
            return Ok(vec![out]);
        };
        let a = normalize_axis(a, r, 3)?;
        // Stricter than OpenVINO: an indices dim larger than data's outside the axis makes
        // OpenVINO write out of bounds; irun rejects it.
        if let (Some(dd), Some(id)) = (data.shape.dims(), indices.shape.dims()) {
            for (i, (d, x)) in dd.iter().zip(id).enumerate() {
                if i != a && d.max().is_some_and(|dmax| x.min() > dmax) {
                    return Err(OpError::input(
                        1,
                        codes::SHAPE,
                        format!(
                            "indices dim {i} ({x}) is larger than data dim {i} ({d}); only the axis dim ({a}) may be larger. Got indices {} for data {}",
                            indices.shape, data.shape
                        ),
                    ));
                }
            }
        }
        Ok(vec![out])
    }
}

impl ScatterElementsUpdate {
    /// The op's kernel; with `plan`, the indices' work done at compile time (the caller has
    /// checked that the plan was made for these indices, axis and data shape, and that
    /// `sorted_updates`, if any, are these updates in plan order).
    fn eval_with(
        &self,
        inputs: Vec<Value>,
        plan: Option<&ElementsPlan>,
    ) -> Result<Vec<Value>, OpError> {
        self.eval_lines(inputs, plan, false)
    }

    /// [`Self::eval_with`]; with `line_indices`, the indices hold one value per line of
    /// updates' inner columns (checked by [`Self::line_indices_fit`]).
    fn eval_lines(
        &self,
        inputs: Vec<Value>,
        plan: Option<&ElementsPlan>,
        line_indices: bool,
    ) -> Result<Vec<Value>, OpError> {
        let [data, indices, updates, axis] = take_inputs::<4>(inputs, self.name())?;
        check_same_type(&data, &updates)?;
        let axis = runtime_axis(&axis, data.shape().len(), 3)?;
        // One index per line stands for the updates-shaped indices it was broadcast to.
        let indices_shape = if line_indices {
            updates.shape()
        } else {
            indices.shape()
        };
        let geometry = Geometry::new(data.shape(), indices_shape, updates.shape(), axis)?;
        let kernel = ElementsKernel {
            indices: runtime_indices(&indices)?,
            indices_shape,
            line_indices,
            geometry,
            mean: self.reduction == Reduction::Mean,
            use_init_val: self.use_init_val,
            plan,
            track_counts: self.reduction == Reduction::Mean
                || (!self.use_init_val && self.reduction != Reduction::None),
        };
        if line_indices && !kernel.geometry.rows_apply(data.len()) {
            return Err(OpError::new(
                codes::INTERNAL,
                "one index per line on a shape the row path does not serve",
            ));
        }
        if kernel.indices.is_empty() {
            // Nothing to scatter: the output is the data, shared, not copied.
            return Ok(vec![data]);
        }
        let updates = plan
            .and_then(|p| p.sorted_updates.as_ref())
            .unwrap_or(&updates);
        let out = dispatch_from(&kernel, data, updates, self.reduction, MinMaxRule::Elements)?;
        Ok(vec![Arc::new(out)])
    }
}

impl ScatterElementsUpdate {
    /// Whether `inputs[1]`, which a broadcast would turn into `to`, holds one index per line
    /// of inner columns that the row path can take: `to` is the updates' shape, and the
    /// indices match it up to the axis and are 1 after it, on a shape the row path serves.
    fn line_indices_fit(&self, inputs: &[Value], to: &[usize]) -> bool {
        let [data, indices, updates, axis] = inputs else {
            return false;
        };
        let Ok(axis) = runtime_axis(axis, data.shape().len(), 3) else {
            return false;
        };
        let lines_fit = indices.shape().len() == to.len()
            && to == updates.shape()
            && indices
                .shape()
                .iter()
                .zip(to)
                .enumerate()
                .all(|(d, (&i, &t))| if d <= axis { i == t } else { i == 1 });
        let rows_fit =
            Geometry::new(data.shape(), to, to, axis).is_ok_and(|g| g.rows_apply(data.len()));
        lines_fit
            && rows_fit
            && runtime_indices(indices).is_ok()
            && data.element_type() == updates.element_type()
    }
}

/// A ScatterElementsUpdate prepared for its constant indices (and updates): runs on the plan
/// when the inputs are the ones it was made for, else on the op's own kernel. The plan is
/// made by the first run that gets those inputs, not at load: for 16M indices that took
/// 0.3 s, more than OpenVINO's whole read and compile of the file.
#[derive(Debug)]
struct PreparedElementsUpdate {
    op: ScatterElementsUpdate,
    /// `None` when no plan can be made (an index out of range, which every run then
    /// reports; offsets past 32 bits; no memory): the op's kernel runs.
    plan: OnceLock<Option<ElementsPlan>>,
    geometry: Geometry,
    elem_bytes: usize,
    data_shape: Vec<usize>,
    /// The constants the plan is made from, compared by identity at run time.
    indices: Value,
    axis: Value,
    updates: Option<Value>,
}

impl PreparedElementsUpdate {
    fn covers(&self, inputs: &[Value]) -> bool {
        let [data, indices, updates, axis] = inputs else {
            return false;
        };
        data.shape() == self.data_shape
            && Arc::ptr_eq(indices, &self.indices)
            && Arc::ptr_eq(axis, &self.axis)
            && updates.shape() == indices.shape()
            && self
                .updates
                .as_ref()
                .is_none_or(|u| Arc::ptr_eq(updates, u))
    }

    fn plan(&self) -> Option<&ElementsPlan> {
        self.plan
            .get_or_init(|| {
                ElementsPlan::build(
                    &self.geometry,
                    &self.indices,
                    self.updates.as_deref(),
                    product(&self.data_shape),
                    self.elem_bytes,
                    par::threads(),
                )
            })
            .as_ref()
    }
}

impl Prepared for PreparedElementsUpdate {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let plan = self.covers(&inputs).then(|| self.plan()).flatten();
        self.op.eval_with(inputs, plan)
    }

    /// What the plan holds once made, or at most will: the budget counts it before the
    /// first run makes it (an offset and a position per index, and the updates reordered).
    fn byte_size(&self) -> usize {
        match self.plan.get() {
            Some(plan) => plan.as_ref().map_or(0, ElementsPlan::byte_size),
            None => 8 * self.indices.len() + self.updates.as_ref().map_or(0, |u| u.byte_size()),
        }
    }
}

/// A ScatterElementsUpdate-12, for the tests.
#[cfg(test)]
fn seu12(reduction: Reduction, use_init_val: bool) -> ScatterElementsUpdate {
    ScatterElementsUpdate {
        version: 12,
        reduction,
        use_init_val,
    }
}
