//! Helpers for op unit tests: facts from shape strings, constant axes, half-precision
//! tensors.

use half::{bf16, f16};
use irun_tensor::{ElementType, PartialShape, Scalar, Tensor};

use crate::fact::Fact;
use crate::op::{Op, OpError, Prepared, Value};

/// A fact of type `ty` and partial shape `shape` (OpenVINO syntax: `2,?,1..4`, `...`, ``).
pub fn fact(ty: ElementType, shape: &str) -> Fact {
    Fact::new(ty, PartialShape::parse(shape).expect("test shape"))
}

/// A known scalar i64 (an axis Const).
pub fn scalar_i64(v: i64) -> Fact {
    Fact::of_static(ElementType::I64, &[]).with_value(Tensor::from_i64(vec![], vec![v]).unwrap())
}

/// The single output fact.
pub fn infer1(op: &dyn Op, inputs: &[Fact]) -> Result<Fact, OpError> {
    op.infer(inputs).map(|mut v| v.remove(0))
}

#[track_caller]
pub fn err(r: Result<Fact, OpError>) -> OpError {
    match r {
        Ok(f) => panic!("expected an error, inferred {f}"),
        Err(e) => e,
    }
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool")
}

/// `f` on a pool of `threads` workers (for kernels tested below the op level).
pub fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    pool(threads).install(f)
}

/// Runs `op` on `inputs` on a pool of `threads` workers; the single output.
pub fn eval_with(op: &dyn Op, inputs: Vec<Tensor>, threads: usize) -> Result<Tensor, OpError> {
    let pool = pool(threads);
    let values = inputs.into_iter().map(std::sync::Arc::new).collect();
    pool.install(|| op.eval(values))
        .map(|mut v| std::sync::Arc::unwrap_or_clone(v.remove(0)))
}

/// Runs `op` on one thread and on two; asserts both agree bit for bit; the single output.
pub fn eval1(op: &dyn Op, inputs: Vec<Tensor>) -> Result<Tensor, OpError> {
    let one = eval_with(op, inputs.clone(), 1);
    let two = eval_with(op, inputs, 2);
    assert_eq!(format!("{one:?}"), format!("{two:?}"), "threads 1 vs 2");
    one
}

/// Runs `op` on one thread and on two; asserts both agree bit for bit; every output.
pub fn eval_all(op: &dyn Op, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, OpError> {
    let run = |threads: usize, inputs: Vec<Tensor>| {
        let values = inputs.into_iter().map(std::sync::Arc::new).collect();
        pool(threads).install(|| op.eval(values)).map(|v| {
            v.into_iter()
                .map(std::sync::Arc::unwrap_or_clone)
                .collect::<Vec<_>>()
        })
    };
    let one = run(1, inputs.clone());
    let two = run(2, inputs);
    assert_eq!(format!("{one:?}"), format!("{two:?}"), "threads 1 vs 2");
    one
}

/// Prepares `op` on a pool of `threads` workers with the inputs marked in `constant` as
/// constants, then runs the prepared kernel on `inputs` (the constants as the same values);
/// `None` when the op declines to prepare.
pub fn eval_prepared(
    op: &dyn Op,
    inputs: Vec<Tensor>,
    constant: &[bool],
    threads: usize,
) -> Option<Result<Tensor, OpError>> {
    let pool = pool(threads);
    let values: Vec<Value> = inputs.into_iter().map(std::sync::Arc::new).collect();
    let kernel = pool.install(|| prepare(op, &values, constant))?;
    Some(
        pool.install(|| kernel.eval(values))
            .map(|mut v| std::sync::Arc::unwrap_or_clone(v.remove(0))),
    )
}

/// `op` prepared for `inputs` (their facts static), those marked in `constant` given as
/// constants; `None` when the op prepares nothing for them.
pub fn prepare(op: &dyn Op, inputs: &[Value], constant: &[bool]) -> Option<Box<dyn Prepared>> {
    let facts: Vec<Fact> = inputs
        .iter()
        .map(|v| Fact::of_static(v.element_type(), v.shape()))
        .collect();
    let constants: Vec<Option<Value>> = inputs
        .iter()
        .zip(constant)
        .map(|(v, &c)| c.then(|| v.clone()))
        .collect();
    op.prepare(&facts, &constants)
}

macro_rules! makers {
    ($($name:ident: $t:ty => $ctor:ident;)*) => {$(
        #[doc = concat!("A `", stringify!($t), "` tensor of the given shape and values.")]
        pub fn $name(shape: &[usize], v: &[$t]) -> Tensor {
            Tensor::$ctor(shape.to_vec(), v.to_vec()).expect("test tensor")
        }
    )*};
}

makers! {
    f32s: f32 => from_f32; f64s: f64 => from_f64; f16s: half::f16 => from_f16;
    i8s: i8 => from_i8; i32s: i32 => from_i32; i64s: i64 => from_i64;
    u8s: u8 => from_u8; u32s: u32 => from_u32; u64s: u64 => from_u64;
    bools: bool => from_bool;
}

/// A known 1-D i64 value input.
pub fn i64_value(v: &[i64]) -> Fact {
    Fact::of_static(ElementType::I64, &[v.len()]).with_value(i64s(&[v.len()], v))
}

/// A 16-bit float type that reductions compute in f32, for tests that run one case on both.
#[derive(Clone, Copy, Debug)]
pub enum Narrow {
    F16,
    Bf16,
}

impl Narrow {
    /// `v` rounded to this type and widened back.
    pub fn round(self, v: f32) -> f32 {
        match self {
            Narrow::F16 => f16::from_f32(v).to_f32(),
            Narrow::Bf16 => bf16::from_f32(v).to_f32(),
        }
    }

    /// Each of `v` rounded to this type and widened back.
    pub fn rounded(self, v: &[f32]) -> Vec<f32> {
        v.iter().map(|&x| self.round(x)).collect()
    }

    /// A tensor of this type of `shape` holding `v`, rounded.
    pub fn tensor(self, shape: &[usize], v: &[f32]) -> Tensor {
        let shape = shape.to_vec();
        match self {
            Narrow::F16 => Tensor::from_f16(shape, v.iter().map(|&x| f16::from_f32(x)).collect()),
            Narrow::Bf16 => {
                Tensor::from_bf16(shape, v.iter().map(|&x| bf16::from_f32(x)).collect())
            }
        }
        .expect("a shape that fits the values")
    }

    /// A tensor of this type's values, widened.
    pub fn values(self, t: &Tensor) -> Vec<f32> {
        fn widened<H: Scalar + Into<f32>>(t: &Tensor) -> Vec<f32> {
            let values = t
                .values::<H>()
                .expect("a tensor of the half type asked for");
            values.iter().map(|&h| h.into()).collect()
        }
        match self {
            Narrow::F16 => widened::<f16>(t),
            Narrow::Bf16 => widened::<bf16>(t),
        }
    }
}

/// A value whose bit pattern [`assert_same_bits`] compares: floats by their bits (NaN payloads
/// and signed zeros included), integers and booleans by value.
pub trait BitPattern: Copy + std::fmt::Debug {
    fn pattern(self) -> u64;
}

macro_rules! exact_patterns {
    ($($t:ty),*) => {$(
        impl BitPattern for $t {
            fn pattern(self) -> u64 {
                self as u64
            }
        }
    )*};
}

exact_patterns!(i32, i64, bool);

impl BitPattern for f32 {
    fn pattern(self) -> u64 {
        self.to_bits().into()
    }
}

impl BitPattern for f64 {
    fn pattern(self) -> u64 {
        self.to_bits()
    }
}

/// `planar`, items of `channels` planes of `plane` values (`[n, c, *spatial]`), moved to
/// `[n, *spatial, c]` a value at a time from the definition: the expected output of a
/// kernel that writes channel-last ([`crate::op::Prepared::set_channels_last_output`]), or
/// the input of one that reads so, independent of the kernels' block transposes.
pub fn moved_channels_last(planar: &[f32], channels: usize, plane: usize) -> Vec<f32> {
    let item = channels * plane;
    let mut moved = vec![0.0; planar.len()];
    for (i, &v) in planar.iter().enumerate() {
        let (n, c, p) = (i / item, i / plane % channels, i % plane);
        moved[n * item + p * channels + c] = v;
    }
    moved
}

/// Asserts that `got` is `want` bit for bit (NaN payloads and signed zeros included), or
/// panics with `what`, the first element that differs and both values. The lengths are
/// compared too: a bitwise test over a zip of the two would pass a short result.
#[track_caller]
pub fn assert_same_bits<T: BitPattern>(got: &[T], want: &[T], what: impl std::fmt::Display) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let first = got
        .iter()
        .zip(want)
        .position(|(g, w)| g.pattern() != w.pattern());
    if let Some(i) = first {
        panic!(
            "{what}: element {i} is {:?}, expected {:?} (bits {:#x} against {:#x})",
            got[i],
            want[i],
            got[i].pattern(),
            want[i].pattern()
        );
    }
}

/// What every op family's unit tests start from: element types by name, tensors and facts,
/// and the makers above. Each family's `testing.rs` re-exports it beside its own helpers.
pub mod prelude {
    pub use irun_tensor::ElementType::*;
    pub use irun_tensor::Tensor;

    pub use super::scalar_i64 as i64_scalar;
    pub use super::{
        bools, f16s, f32s, f64s, fact, i32s, i64_value, i64s, i8s, infer1, u32s, u64s, u8s,
    };
    pub use crate::fact::Fact;
}

#[cfg(test)]
mod tests {
    use super::assert_same_bits;

    /// Equal bits pass, NaN payloads included; a flipped sign of zero, another NaN payload
    /// or a short result fails, naming the element.
    #[test]
    fn same_bits_compares_patterns_and_lengths() {
        let nan = f32::from_bits(0x7fc0_0001);
        assert_same_bits(&[1.5f32, nan, -0.0], &[1.5, nan, -0.0], "equal");
        assert_same_bits(&[2.0f64, f64::NAN], &[2.0, f64::NAN], "f64");
        let fails = |got: Vec<f32>, want: Vec<f32>| {
            std::panic::catch_unwind(|| assert_same_bits(&got, &want, "case"))
                .expect_err("a difference")
                .downcast::<String>()
                .map(|m| *m)
                .unwrap_or_default()
        };
        let m = fails(vec![1.0, 0.0], vec![1.0, -0.0]);
        assert!(
            m.starts_with("case: element 1 is 0.0, expected -0.0"),
            "{m}"
        );
        let m = fails(vec![f32::NAN], vec![nan]);
        assert!(m.starts_with("case: element 0 is NaN"), "{m}");
        let m = fails(vec![1.0], vec![1.0, 2.0]);
        assert!(m.contains("case: lengths differ"), "{m}");
    }
}
