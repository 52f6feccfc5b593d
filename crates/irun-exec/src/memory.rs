//! What the executor checks before it allocates: each node's outputs and each decoded
//! constant against the memory limit, in bytes computed from the facts.

use std::sync::Arc;

use irun_graph::NodeId;
use irun_ops::{Fact, Value};
use irun_tensor::{ElementType, PartialShape, Tensor};

use crate::{Executable, RunError, RunErrorKind};

impl Executable {
    /// Whether `need` more bytes fit in the memory limit with `live` in use.
    pub(crate) fn check_memory(&self, n: NodeId, need: u64, live: u64) -> Result<(), RunError> {
        if live.saturating_add(need) <= self.memory_limit {
            return Ok(());
        }
        Err(self
            .layer_error(
                n,
                RunErrorKind::Resources,
                format!(
                    "its outputs need {need} bytes with {live} already in use, over the memory limit of {} bytes",
                    self.memory_limit
                ),
            )
            .with_code(irun_ops::codes::MEMORY))
    }

    /// The decoded value of Const node `n`, decoded once. Its decoded size (a packed type such
    /// as u1 or nf4 expands up to 32 times) is checked against the `available` bytes before
    /// anything is allocated.
    pub(crate) fn constant(&self, n: NodeId, available: u64) -> Result<Value, RunError> {
        if let Some(v) = self.consts[n].get() {
            return Ok(v.clone());
        }
        let v = Arc::new(self.decode_constant(n, available)?);
        Ok(self.consts[n].get_or_init(|| v).clone())
    }

    /// Const node `n` decoded now and not kept: for values a compile-time pass reads once
    /// into a form of its own (the scales of compressed weights).
    pub(crate) fn decode_constant(&self, n: NodeId, available: u64) -> Result<Tensor, RunError> {
        let layer = self.graph.layer(n);
        let info = layer.constant.as_ref().ok_or_else(|| {
            self.layer_error(
                n,
                RunErrorKind::InvalidModel,
                "a Const without element_type, shape, offset and size".into(),
            )
        })?;
        let need = (info.element_count() as u64)
            .saturating_mul(storage_bytes(info.element_type))
            .saturating_add(if info.element_type == ElementType::String {
                info.size
            } else {
                0
            });
        if need > available {
            return Err(self
                .layer_error(
                    n,
                    RunErrorKind::Resources,
                    format!(
                        "its value of shape {} {} needs {need} bytes, more than the memory limit of {} bytes leaves ({available})",
                        info.element_type,
                        irun_tensor::fmt_shape(&info.shape),
                        self.memory_limit
                    ),
                )
                .with_code(irun_ops::codes::MEMORY));
        }
        self.graph
            .model
            .weights
            .decode(info)
            .map_err(|e| self.layer_error(n, RunErrorKind::InvalidModel, e))
    }

    /// Bytes of op node `n`'s outputs, from their facts, or, where a fact's shape is still not
    /// static (a shape computed at run time: RandomUniform's, Broadcast's target), from its
    /// op's inference redone on its actual inputs (`values`, by outlet; shapes, types and the
    /// values the op reads), so that an output of a value-dependent shape is checked against
    /// the memory limit before its kernel allocates it. An input handed over channel-last
    /// (`fuse.rs`) is laid out in another shape than the op infers from: its own fact (`facts`
    /// of every node, for this run) gives its shape. An inference that fails leaves the
    /// error to the kernel, which reports it with its own words.
    pub(crate) fn op_output_bytes(
        &self,
        n: NodeId,
        facts: &[Vec<Fact>],
        inputs: &[usize],
        values: &[Option<Value>],
    ) -> Result<u64, RunError> {
        let op = self.graph.ops[n].as_ref();
        let (Some(op), false) = (op, facts[n].iter().all(|f| f.shape.is_static())) else {
            return self.output_bytes(n, &facts[n]);
        };
        let reads = op.value_inputs();
        let producers = &self.graph.nodes[n].inputs;
        let actual: Option<Vec<Fact>> = inputs
            .iter()
            .zip(producers)
            .enumerate()
            .map(|(slot, (&o, producer))| {
                let v = values[o].as_ref()?;
                let shape = match producer {
                    Some(p) if self.channels_last_out[p.node] => {
                        facts[p.node].get(p.slot)?.shape.clone()
                    }
                    _ => PartialShape::fixed(v.shape()),
                };
                let mut f = Fact::new(v.element_type(), shape);
                f.value = reads.contains(&slot).then(|| v.clone());
                Some(f)
            })
            .collect();
        match actual.map(|a| op.infer(&a)) {
            Some(Ok(refined)) => self.output_bytes(n, &refined),
            _ => self.output_bytes(n, &facts[n]),
        }
    }

    /// Bytes of node `n`'s outputs, from their facts (those of shapes not static count 0).
    pub(crate) fn output_bytes(&self, n: NodeId, facts: &[Fact]) -> Result<u64, RunError> {
        let mut total: u64 = 0;
        for f in facts {
            let Some(shape) = f.shape.to_static() else {
                continue;
            };
            let bytes = irun_tensor::element_count(&shape)
                .and_then(|c| (c as u64).checked_mul(storage_bytes(f.ty)))
                .ok_or_else(|| {
                    self.layer_error(
                        n,
                        RunErrorKind::Resources,
                        format!(
                            "an output of shape {} has more elements than memory can address",
                            f.shape
                        ),
                    )
                    .with_code(irun_ops::codes::MEMORY)
                })?;
            total = total.saturating_add(bytes);
        }
        Ok(total)
    }
}

/// Bytes per element in memory: packed types are stored one per byte, nf4/f4/f8 as f32;
/// strings count their `String` header (their text is not known before they exist).
pub(crate) fn storage_bytes(ty: ElementType) -> u64 {
    use irun_tensor::Storage as S;
    match irun_tensor::storage_kind(ty) {
        Some(S::Bool(_) | S::I8(_) | S::U8(_)) => 1,
        Some(S::F16(_) | S::Bf16(_) | S::I16(_) | S::U16(_)) => 2,
        Some(S::F32(_) | S::I32(_) | S::U32(_)) => 4,
        Some(S::F64(_) | S::I64(_) | S::U64(_)) => 8,
        Some(S::String(_)) => std::mem::size_of::<String>() as u64,
        None => 0,
    }
}

/// Physical memory from /proc/meminfo, or 16 GiB where that cannot be read.
pub(crate) fn physical_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(16 << 30, |kb| kb * 1024)
}
