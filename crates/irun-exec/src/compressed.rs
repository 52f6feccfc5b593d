//! Compressed weights kept packed: a MatMul (`transpose_b`) or an embedding Gather whose
//! weight is the decompression subgraph NNCF writes,
//!
//! ```text
//! Const codes (u4 i4 nf4 f4e2m1 u8 i8 f8e4m3 f8e5m2) -> Convert
//!   [-> Subtract (zero point: Const [-> Convert])]
//!   -> Multiply (scale: Const [-> Convert], either side)
//!   [-> Reshape to [rows, cols]] [-> Convert f32]
//! ```
//!
//! with the codes `[rows, cols]` (one group per row) or `[rows, groups, group]` and the
//! scale and zero point one per (row, group), runs a kernel that reads the codes from the
//! weights file as they are stored and decodes them in f32
//! ([`irun_ops_linear::compressed`]): no widened copy of the weights is ever made, and each
//! weight is `(code - zero_point) * scale` computed in f32 as OpenVINO CPU computes it (the
//! graph read literally rounds it to f16 first). The subgraph's nodes then have no reader
//! left and leave the plan. Structure is all that is matched: NNCF marks nothing.

use std::sync::Arc;

use irun_graph::{NodeId, Outlet};
use irun_ops::linear::compressed::{
    code_width, CodeWidth, CompressedGather, CompressedMatMul, CompressedWeights,
};
use irun_ops::Prepared;
use irun_tensor::{ElementType, Storage, Tensor};

use crate::plan::Source;
use crate::{Executable, RunError};

/// A weight consumer the pass replaces: the node, its kernel, the input slots it keeps.
type Replacement = (NodeId, Box<dyn Prepared>, Vec<usize>);

impl Executable {
    /// Gives every MatMul and Gather on a compressed weight its packed kernel, and drops
    /// the decompression subgraphs nothing else reads from the plan.
    pub(crate) fn use_compressed_weights(&mut self) -> Result<(), RunError> {
        let mut replaced: Vec<Replacement> = Vec::new();
        for step in &self.plan.steps {
            let n = step.node;
            if !matches!(step.source, Source::Op) || self.graph.ops[n].is_none() {
                continue;
            }
            let layer = self.graph.layer(n);
            let attr = |name: &str| layer.data_attr(name).map(|a| a.value.as_str());
            let input = |slot: usize| self.graph.nodes[n].inputs.get(slot).copied().flatten();
            match layer.type_name.as_str() {
                "MatMul"
                    if attr("transpose_a").is_none_or(|v| v == "false")
                        && attr("transpose_b") == Some("true") =>
                {
                    let (Some(a), Some(b)) = (input(0), input(1)) else {
                        continue;
                    };
                    if self.graph.facts[a.node][a.slot].ty != ElementType::F32 {
                        continue;
                    }
                    if let Some(w) = self.compressed_weight(b)? {
                        let kernel = CompressedMatMul {
                            weights: Arc::new(w),
                        };
                        replaced.push((n, Box::new(kernel), vec![0]));
                    }
                }
                "Gather" if attr("batch_dims").is_none_or(|v| v == "0") => {
                    let (Some(data), Some(axis)) = (input(0), input(2)) else {
                        continue;
                    };
                    let axis = self.constant_input(axis.node, axis.slot)?;
                    let axis_is_0 = axis
                        .as_ref()
                        .and_then(|a| a.to_i64_vec())
                        .is_some_and(|a| a == [0]);
                    if !axis_is_0 {
                        continue;
                    }
                    if let Some(w) = self.compressed_weight(data)? {
                        let kernel = CompressedGather {
                            weights: Arc::new(w),
                        };
                        replaced.push((n, Box::new(kernel), vec![1]));
                    }
                }
                _ => {}
            }
        }
        for (n, kernel, keep) in replaced {
            self.prepared_bytes += kernel.byte_size() as u64;
            self.prepared[n] = Some(kernel);
            self.plan.keep_inputs(n, &keep);
        }
        self.plan.prune();
        Ok(())
    }

    /// The compressed weight that outlet `o` computes, if it is NNCF's decompression
    /// subgraph of an f32 `[rows, cols]` matrix.
    fn compressed_weight(&self, o: Outlet) -> Result<Option<CompressedWeights>, RunError> {
        let fact = &self.graph.facts[o.node][o.slot];
        let Some(&[rows, cols]) = fact.shape.to_static().as_deref() else {
            return Ok(None);
        };
        if fact.ty != ElementType::F32 {
            return Ok(None);
        }
        let mut at = o.node;
        if self.type_of(at) == "Convert" {
            at = self.input_node(at, 0);
        }
        if self.type_of(at) == "Reshape" {
            at = self.input_node(at, 0);
        }
        if self.type_of(at) != "Multiply" {
            return Ok(None);
        }
        let Some((codes, zero_point, scale_side)) = self.scaled_codes(at) else {
            return Ok(None);
        };
        let Some(info) = self.graph.layer(codes).constant.clone() else {
            return Ok(None);
        };
        let Some(width) = code_width(info.element_type) else {
            return Ok(None);
        };
        let shape = info.shape.clone();
        let group = match shape.as_slice() {
            [r, c] if *r == rows && *c == cols => cols,
            [r, g, s] if *r == rows && g.checked_mul(*s) == Some(cols) => *s,
            _ => return Ok(None),
        };
        let Some(scales) = self.per_group(scale_side, &shape)? else {
            return Ok(None);
        };
        let zero_points = match zero_point {
            Some(z) => match self.per_group(z, &shape)? {
                Some(z) => Some(z),
                None => return Ok(None),
            },
            None => None,
        };
        let Some(bytes) = self.graph.model.weights.raw(&info) else {
            return Ok(None);
        };
        let Some(lut) = code_values(info.element_type, width) else {
            return Ok(None);
        };
        Ok(
            CompressedWeights::new(bytes, width, lut, (rows, cols), group, scales, zero_points)
                .ok(),
        )
    }

    /// For Multiply node `m` of codes (`codes_const`, either side) by a scale: the codes'
    /// Const, the zero point's node and the scale's node.
    pub(crate) fn scaled_codes(&self, m: NodeId) -> Option<(NodeId, Option<NodeId>, NodeId)> {
        let (lhs, rhs) = (self.input_node(m, 0), self.input_node(m, 1));
        match (self.codes_const(lhs), self.codes_const(rhs)) {
            (Some((codes, zero_point)), _) => Some((codes, zero_point, rhs)),
            (None, Some((codes, zero_point))) => Some((codes, zero_point, lhs)),
            (None, None) => None,
        }
    }

    /// For `Convert(Const codes)` or `Subtract(Convert(Const codes), zero point)`: the codes'
    /// Const and the zero point's node.
    fn codes_const(&self, n: NodeId) -> Option<(NodeId, Option<NodeId>)> {
        let (convert, zero_point) = match self.type_of(n) {
            "Subtract" => (self.input_node(n, 0), Some(self.input_node(n, 1))),
            _ => (n, None),
        };
        if self.type_of(convert) != "Convert" {
            return None;
        }
        let c = self.input_node(convert, 0);
        let info = self.graph.layer(c).constant.as_ref()?;
        code_width(info.element_type)?;
        Some((c, zero_point))
    }

    /// The values of a scale or zero point (`Const`, or `Convert(Const)`: the Const's own
    /// values, exactly, as OpenVINO CPU's kernels take them) as one f32 per (row, group) of
    /// codes shaped `codes`; `None` if it is something else or does not broadcast so.
    fn per_group(&self, n: NodeId, codes: &[usize]) -> Result<Option<Vec<f32>>, RunError> {
        let c = if self.type_of(n) == "Convert" {
            self.input_node(n, 0)
        } else {
            n
        };
        if self.type_of(c) != "Const" {
            return Ok(None);
        }
        // Decoded without being kept: the values live on as f32 in the kernel, and the Const
        // itself never runs.
        let value = self.decode_constant(c, self.memory_limit)?;
        let Some(values) = to_f32(&value) else {
            return Ok(None);
        };
        // numpy broadcasting of the value's shape against the codes', the innermost dim of
        // grouped codes (the values within a group) excepted.
        let rank = codes.len();
        let shape = value.shape();
        if shape.len() > rank {
            return Ok(None);
        }
        let padded: Vec<usize> = std::iter::repeat_n(1, rank - shape.len())
            .chain(shape.iter().copied())
            .collect();
        if padded[rank - 1] != 1 || padded.iter().zip(codes).any(|(&p, &c)| p != 1 && p != c) {
            return Ok(None);
        }
        let (rows, groups) = (codes[0], if rank == 3 { codes[1] } else { 1 });
        // Steps through the value, 0 along a broadcast dim: its groups per row (dim 1 of
        // grouped codes, else 1) for a row, 1 for a group.
        let value_groups = if rank == 3 { padded[1] } else { 1 };
        let row_step = if padded[0] == 1 { 0 } else { value_groups };
        let group_step = if value_groups == 1 { 0 } else { 1 };
        Ok(Some(
            (0..rows * groups)
                .map(|i| values[(i / groups) * row_step + (i % groups) * group_step])
                .collect(),
        ))
    }

    pub(crate) fn type_of(&self, n: NodeId) -> &str {
        &self.graph.layer(n).type_name
    }

    /// The node feeding input `slot` of `n` (`n` itself when none does, which no pattern
    /// accepts twice).
    pub(crate) fn input_node(&self, n: NodeId, slot: usize) -> NodeId {
        self.graph.nodes[n]
            .inputs
            .get(slot)
            .copied()
            .flatten()
            .map_or(n, |o| o.node)
    }
}

/// The value of each code of `ty`, decoded by the weights reader itself (one source of truth
/// for the bit layouts): codes 0..16 as nibbles, the lower one first, or bytes 0..256.
fn code_values(ty: ElementType, width: CodeWidth) -> Option<Vec<f32>> {
    let (bytes, count): (Vec<u8>, usize) = match width {
        CodeWidth::Four => ((0..8u8).map(|i| (2 * i) | ((2 * i + 1) << 4)).collect(), 16),
        CodeWidth::Eight => ((0..=255u8).collect(), 256),
    };
    let t = irun_ir::decode::decode(ty, vec![count], &bytes).ok()?;
    to_f32(&t)
}

/// Values of a numeric tensor as f32, when every one is exact there (narrow integers, f16,
/// bf16, f32, the 4- and 8-bit floats).
fn to_f32(t: &Tensor) -> Option<Vec<f32>> {
    Some(match t.storage() {
        Storage::F32(v) => v.to_vec(),
        Storage::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
        Storage::Bf16(v) => v.iter().map(|x| x.to_f32()).collect(),
        Storage::U8(v) => v.iter().map(|&x| f32::from(x)).collect(),
        Storage::I8(v) => v.iter().map(|&x| f32::from(x)).collect(),
        Storage::U16(v) => v.iter().map(|&x| f32::from(x)).collect(),
        Storage::I16(v) => v.iter().map(|&x| f32::from(x)).collect(),
        _ => return None,
    })
}
