//! Einsum-7: `equation` (required) over inputs of one type. Labels `a-z`, `A-Z`; at most one
//! `...` per operand, whose dims broadcast numpy-style across operands. Explicit form
//! `in1,in2->out`; implicit form (no `->`): the labels that appear exactly once, in ASCII order
//! (uppercase first), after the `...` dims. A label repeated inside an operand takes its
//! diagonal; labels absent from the output are summed. Spaces are ignored.
//!
//! Two f32 operands whose summed labels both carry (every contraction converted models
//! have: batched matmuls, FNO's `bixy,ioxy->boxy`) run as batched products on the GEMM, f32
//! accumulation as MatMul. Everything else is a direct loop: each output element sums the
//! product of its operands' elements over the summed labels, in index order, on one task
//! (floats accumulated in f64; integers wrap). Both are thread-count independent.

use std::sync::Arc;

use irun_opkit::strided::Strided;
use irun_tensor::{with_number, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::gemm::Mul;
use crate::kernel::{try_zeroed, PAR_MIN_ELEMENTS};
use crate::op::{codes, same_element_type, Op, OpError, Value};
use crate::par;

#[derive(Debug)]
pub struct Einsum {
    inputs: Vec<Term>,
    /// `None`: the implicit form.
    output: Option<Term>,
    equation: String,
}

/// One operand's subscripts: labels (as bytes) and where its `...` is, if anywhere.
#[derive(Clone, Debug)]
struct Term {
    labels: Vec<u8>,
    ellipsis: Option<usize>,
}

fn bad_equation(eq: &str, why: &str) -> OpError {
    OpError::attribute("equation", format!("Einsum-7: equation \"{eq}\" {why}"))
}

fn parse_term(t: &str, eq: &str) -> Result<Term, OpError> {
    let (mut labels, mut ellipsis) = (Vec::new(), None);
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"...") {
            if ellipsis.is_some() {
                return Err(bad_equation(eq, "has two ellipses in one operand"));
            }
            ellipsis = Some(labels.len());
            i += 3;
        } else if b[i].is_ascii_alphabetic() {
            labels.push(b[i]);
            i += 1;
        } else {
            return Err(bad_equation(
                eq,
                &format!("has `{}`, which is not a label", b[i] as char),
            ));
        }
    }
    Ok(Term { labels, ellipsis })
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    let eq = a.required("equation")?.value.clone();
    let clean: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match clean.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (clean.as_str(), None),
    };
    let inputs = lhs
        .split(',')
        .map(|t| parse_term(t, &eq))
        .collect::<Result<Vec<_>, _>>()?;
    let output = rhs.map(|r| parse_term(r, &eq)).transpose()?;
    if let Some(o) = &output {
        let mut seen = o.labels.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != o.labels.len() {
            return Err(bad_equation(&eq, "repeats a label in its output"));
        }
        if let Some(l) = o
            .labels
            .iter()
            .find(|l| !inputs.iter().any(|t| t.labels.contains(l)))
        {
            return Err(bad_equation(
                &eq,
                &format!("has output label `{}` in no input", *l as char),
            ));
        }
    }
    Ok(Box::new(Einsum {
        inputs,
        output,
        equation: eq,
    }))
}

/// Where an operand's dims go: each dim's label, `...` dims as labels 0, 1, .. counted from the
/// right of the broadcast ellipsis.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
enum Label {
    Ellipsis(usize),
    Letter(u8),
}

impl Einsum {
    /// Per operand, the label of each dim (checking ranks), and the ellipsis rank.
    fn dim_labels(&self, ranks: &[usize]) -> Result<(Vec<Vec<Label>>, usize), OpError> {
        if ranks.len() != self.inputs.len() {
            return Err(OpError::new(
                codes::ARITY,
                format!(
                    "Einsum-7: equation \"{}\" names {} operands, got {} inputs",
                    self.equation,
                    self.inputs.len(),
                    ranks.len()
                ),
            ));
        }
        let mut per = Vec::new();
        let mut e_rank = 0;
        for (j, (t, &r)) in self.inputs.iter().zip(ranks).enumerate() {
            let n = t.labels.len();
            let e = match t.ellipsis {
                Some(_) if r >= n => r - n,
                None if r == n => 0,
                _ => {
                    return Err(OpError::input(
                        j,
                        codes::RANK,
                        format!(
                            "Einsum-7: input {j} has rank {r}, its subscripts need {}",
                            if t.ellipsis.is_some() {
                                format!("at least {n}")
                            } else {
                                n.to_string()
                            }
                        ),
                    ))
                }
            };
            e_rank = e_rank.max(e);
            let mut labels: Vec<Label> = t.labels.iter().map(|&l| Label::Letter(l)).collect();
            if let Some(at) = t.ellipsis {
                let dots = (0..e).map(|k| Label::Ellipsis(e - 1 - k));
                labels.splice(at..at, dots);
            }
            per.push(labels);
        }
        Ok((per, e_rank))
    }

    /// The output labels.
    fn output_labels(&self, e_rank: usize) -> Vec<Label> {
        let dots = (0..e_rank).map(|k| Label::Ellipsis(e_rank - 1 - k));
        match &self.output {
            Some(o) => {
                let mut labels: Vec<Label> = o.labels.iter().map(|&l| Label::Letter(l)).collect();
                let at = o.ellipsis.unwrap_or(labels.len());
                if o.ellipsis.is_some() {
                    labels.splice(at..at, dots);
                }
                labels
            }
            None => {
                let mut once: Vec<u8> = Vec::new();
                for t in &self.inputs {
                    for &l in &t.labels {
                        let count: usize = self
                            .inputs
                            .iter()
                            .map(|u| u.labels.iter().filter(|&&m| m == l).count())
                            .sum();
                        if count == 1 && !once.contains(&l) {
                            once.push(l);
                        }
                    }
                }
                once.sort_unstable();
                dots.chain(once.into_iter().map(Label::Letter)).collect()
            }
        }
    }

    /// Every label's size (broadcast for `...` dims, else equal), from per-operand dims.
    fn sizes<D: Copy>(
        &self,
        labels: &[Vec<Label>],
        dims: &[&[D]],
        merge: impl Fn(D, D) -> Option<D>,
    ) -> Result<Vec<(Label, D)>, OpError> {
        let mut sizes: Vec<(Label, D)> = Vec::new();
        for (j, (ls, ds)) in labels.iter().zip(dims).enumerate() {
            for (&l, &d) in ls.iter().zip(ds.iter()) {
                match sizes.iter_mut().find(|(m, _)| *m == l) {
                    Some((_, s)) => {
                        *s = merge(*s, d).ok_or_else(|| {
                            OpError::input(
                                j,
                                codes::SHAPE,
                                format!(
                                    "Einsum-7: label {l:?} has different sizes in \"{}\"",
                                    self.equation
                                ),
                            )
                        })?;
                    }
                    None => sizes.push((l, d)),
                }
            }
        }
        Ok(sizes)
    }
}

impl Op for Einsum {
    fn name(&self) -> &'static str {
        "Einsum-7"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        let slots: Vec<usize> = (0..inputs.len()).collect();
        let ty = same_element_type(inputs, &slots, self.name())?;
        let dims: Option<Vec<&[Dim]>> = inputs.iter().map(|f| f.shape.dims()).collect();
        let Some(dims) = dims else {
            return Ok(vec![Fact::new(ty, PartialShape::dynamic_rank())]);
        };
        let ranks: Vec<usize> = dims.iter().map(|d| d.len()).collect();
        let (labels, e_rank) = self.dim_labels(&ranks)?;
        let one = Dim::fixed(1);
        let sizes = self.sizes(&labels, &dims, |a, b| match (a, b) {
            (a, b) if a == one => Some(b),
            (a, b) if b == one => Some(a),
            (a, b) => a.intersect(b),
        })?;
        let out = self
            .output_labels(e_rank)
            .iter()
            .map(|l| sizes.iter().find(|(m, _)| m == l).map_or(one, |(_, d)| *d))
            .collect();
        Ok(vec![Fact::new(ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let ty = inputs
            .first()
            .ok_or_else(|| OpError::new(codes::ARITY, "Einsum-7 needs inputs"))?
            .element_type();
        if inputs.iter().any(|t| t.element_type() != ty) {
            return Err(OpError::new(
                codes::ELEMENT_TYPE,
                "Einsum-7: inputs of different types",
            ));
        }
        if ty == ElementType::F32 && inputs.len() == 2 {
            if let Some(out) = self.run_gemm(&inputs)? {
                return Ok(vec![Arc::new(out)]);
            }
        }
        let out = with_number!(ty, T => self.run_exact::<T>(&inputs),
            else Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("Einsum-7 on {ty}"))))?;
        Ok(vec![Arc::new(out)])
    }
}

/// The loop nest of one evaluation: output and summed labels with sizes, and per operand the
/// element stride of each label (0 where the operand lacks it or broadcasts it).
struct Nest {
    out_sizes: Vec<usize>,
    sum_sizes: Vec<usize>,
    out_strides: Vec<Vec<usize>>,
    sum_strides: Vec<Vec<usize>>,
}

impl Einsum {
    fn nest(&self, inputs: &[Value]) -> Result<Nest, OpError> {
        let dims: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        let ranks: Vec<usize> = dims.iter().map(|d| d.len()).collect();
        let (labels, e_rank) = self.dim_labels(&ranks)?;
        let sizes = self.sizes(&labels, &dims, |a, b| match (a, b) {
            (1, b) => Some(b),
            (a, 1) => Some(a),
            (a, b) => (a == b).then_some(a),
        })?;
        let out_labels = self.output_labels(e_rank);
        let sum_labels: Vec<Label> = sizes
            .iter()
            .map(|(l, _)| *l)
            .filter(|l| !out_labels.contains(l))
            .collect();
        let size_of = |l: &Label| sizes.iter().find(|(m, _)| m == l).map_or(1, |(_, d)| *d);
        // Strides: a repeated label adds its dims' strides (the diagonal).
        let strides_for = |group: &[Label]| -> Vec<Vec<usize>> {
            labels
                .iter()
                .zip(&dims)
                .map(|(ls, ds)| {
                    let row: Vec<usize> = {
                        let mut st = vec![0usize; ds.len()];
                        let mut acc = 1;
                        for k in (0..ds.len()).rev() {
                            st[k] = acc;
                            acc *= ds[k];
                        }
                        st
                    };
                    group
                        .iter()
                        .map(|g| {
                            ls.iter()
                                .zip(ds.iter())
                                .zip(&row)
                                .filter(|((l, &d), _)| *l == g && d != 1)
                                .map(|(_, &s)| s)
                                .sum()
                        })
                        .collect()
                })
                .collect()
        };
        Ok(Nest {
            out_sizes: out_labels.iter().map(size_of).collect(),
            sum_sizes: sum_labels.iter().map(size_of).collect(),
            out_strides: strides_for(&out_labels),
            sum_strides: strides_for(&sum_labels),
        })
    }

    /// The output: for each element, `finish(sum over the summed labels of term(offsets))`,
    /// the terms added in index order.
    fn contract<A: Copy + Sync, O: Scalar>(
        &self,
        inputs: &[Value],
        ty: irun_tensor::ElementType,
        zero: A,
        term: impl Fn(&[usize]) -> A + Sync,
        add: impl Fn(A, A) -> A + Sync,
        finish: impl Fn(A) -> O + Sync,
    ) -> Result<Tensor, OpError> {
        let nest = self.nest(inputs)?;
        let n_out: usize = nest.out_sizes.iter().product();
        let n_sum: usize = nest.sum_sizes.iter().product();
        let ops = nest.out_strides.len();
        let mut out = try_zeroed::<O>(n_out)?;
        let grain = (PAR_MIN_ELEMENTS / n_sum.max(1)).max(1);
        par::for_each_split_mut(&mut out, grain, &|start, chunk| {
            let (mut base, mut off) = (vec![0usize; ops], vec![0usize; ops]);
            let mut coords = vec![0usize; nest.sum_sizes.len()];
            for (k, d) in chunk.iter_mut().enumerate() {
                let mut rest = start + k;
                base.iter_mut().for_each(|b| *b = 0);
                for (a, &size) in nest.out_sizes.iter().enumerate().rev() {
                    let c = rest % size;
                    rest /= size;
                    for (j, b) in base.iter_mut().enumerate() {
                        *b += c * nest.out_strides[j][a];
                    }
                }
                let mut acc = zero;
                coords.iter_mut().for_each(|c| *c = 0);
                for _ in 0..n_sum {
                    off.copy_from_slice(&base);
                    for (s, &c) in coords.iter().enumerate() {
                        for (j, o) in off.iter_mut().enumerate() {
                            *o += c * nest.sum_strides[j][s];
                        }
                    }
                    acc = add(acc, term(&off));
                    for s in (0..coords.len()).rev() {
                        coords[s] += 1;
                        if coords[s] < nest.sum_sizes[s] {
                            break;
                        }
                        coords[s] = 0;
                    }
                }
                *d = finish(acc);
            }
        });
        Tensor::new(ty, nest.out_sizes.clone(), O::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// A two-operand f32 contraction as batched matrix products: the output labels both
    /// operands have are the batch, those of one operand only are M (first) or N (second),
    /// the summed labels both have are K. Each operand is gathered once into `[batch, M, K]`
    /// and `[batch, K, N]` (a repeated label's diagonal and broadcast dims come with the
    /// strides), each batch runs on the GEMM, and the `[batch, M, N]` results are laid out in
    /// the output's order. `None` when a summed label belongs to one operand only (a sum
    /// before the product; the direct loop does that).
    fn run_gemm(&self, inputs: &[Value]) -> Result<Option<Tensor>, OpError> {
        let nest = self.nest(inputs)?;
        let (a_out, b_out) = (&nest.out_strides[0], &nest.out_strides[1]);
        let (a_sum, b_sum) = (&nest.sum_strides[0], &nest.sum_strides[1]);
        let mut k_dims = Vec::new();
        for (s, &size) in nest.sum_sizes.iter().enumerate() {
            match (a_sum[s], b_sum[s]) {
                _ if size == 1 => {}
                (0, _) | (_, 0) => return Ok(None),
                _ => k_dims.push(s),
            }
        }
        let (mut batch, mut m_dims, mut n_dims) = (Vec::new(), Vec::new(), Vec::new());
        for a in 0..nest.out_sizes.len() {
            match (a_out[a], b_out[a]) {
                (0, 0) => batch.push(a),
                (_, 0) => m_dims.push(a),
                (0, _) => n_dims.push(a),
                _ => batch.push(a),
            }
        }
        let size = |dims: &[usize], sizes: &[usize]| dims.iter().map(|&d| sizes[d]).product();
        let (nb, m, n): (usize, usize, usize) = (
            size(&batch, &nest.out_sizes),
            size(&m_dims, &nest.out_sizes),
            size(&n_dims, &nest.out_sizes),
        );
        let k: usize = size(&k_dims, &nest.sum_sizes);
        // Gathers `[group 1, group 2, group 3]` of one operand into a contiguous f32 vector.
        let gather = |x: &Value, groups: [(&[usize], &[usize], &[usize]); 3]| {
            let mut layout = Strided {
                out_shape: Vec::new(),
                base: 0,
                strides: Vec::new(),
            };
            for (dims, sizes, strides) in groups {
                for &d in dims {
                    layout.out_shape.push(sizes[d]);
                    layout.strides.push(strides[d] as isize);
                }
            }
            let shape = layout.out_shape.clone();
            let words = layout.apply(x, self.name())?;
            Tensor::from_words(ElementType::F32, shape, words)
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
        };
        let (o, s) = (&nest.out_sizes[..], &nest.sum_sizes[..]);
        let a = gather(
            &inputs[0],
            [(&batch, o, a_out), (&m_dims, o, a_out), (&k_dims, s, a_sum)],
        )?;
        let b = gather(
            &inputs[1],
            [(&batch, o, b_out), (&k_dims, s, b_sum), (&n_dims, o, b_out)],
        )?;
        let (a, b) = (
            a.values::<f32>().unwrap_or(&[]),
            b.values::<f32>().unwrap_or(&[]),
        );
        let mut c = try_zeroed::<f32>(nb * m * n)?;
        if m * n > 0 {
            par::for_each_chunk_mut(&mut c, m * n, &|start, c| {
                let i = start / (m * n);
                let (a, b) = (
                    &a[i * m * k..(i + 1) * m * k],
                    &b[i * k * n..(i + 1) * k * n],
                );
                f32::gemm(m, k, n, a, (k as isize, 1), b, (n as isize, 1), c);
            });
        }
        // Each output label's stride in `[batch, M, N]`: row-major within its group, the
        // group's stride outside.
        let mut c_strides = vec![0isize; o.len()];
        for (dims, outer) in [(&batch, m * n), (&m_dims, n), (&n_dims, 1)] {
            let mut acc = outer;
            for &d in dims.iter().rev() {
                c_strides[d] = acc as isize;
                acc *= o[d];
            }
        }
        let c = Tensor::from_f32(vec![c.len()], c)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        let layout = Strided {
            out_shape: o.to_vec(),
            base: 0,
            strides: c_strides,
        };
        let words = layout.apply(&c, self.name())?;
        Tensor::from_words(ElementType::F32, o.to_vec(), words)
            .map(Some)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }

    /// Every numeric type: integers exact and wrapping, floats accumulated in f64.
    fn run_exact<T: Scalar + Exact>(&self, inputs: &[Value]) -> Result<Tensor, OpError> {
        let vals: Vec<&[T]> = inputs
            .iter()
            .map(|t| t.values::<T>().unwrap_or(&[]))
            .collect();
        self.contract(
            inputs,
            inputs[0].element_type(),
            T::Acc::default(),
            |off| {
                vals.iter()
                    .zip(off)
                    .fold(T::one(), |p, (v, &o)| T::mul(p, T::acc(v[o])))
            },
            T::add,
            T::finish,
        )
    }
}

/// How a type accumulates exactly: integers wrap in their own type, f16/bf16 in f64.
pub trait Exact: Copy {
    type Acc: Copy + Default + Send + Sync;
    fn acc(self) -> Self::Acc;
    fn one() -> Self::Acc;
    fn mul(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn add(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn finish(a: Self::Acc) -> Self;
}

macro_rules! exact_int {
    ($($t:ty),*) => {$(
        impl Exact for $t {
            type Acc = $t;
            fn acc(self) -> $t { self }
            fn one() -> $t { 1 }
            fn mul(a: $t, b: $t) -> $t { a.wrapping_mul(b) }
            fn add(a: $t, b: $t) -> $t { a.wrapping_add(b) }
            fn finish(a: $t) -> $t { a }
        }
    )*};
}
exact_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! exact_float {
    ($($t:ty: $to:expr, $from:expr;)*) => {$(
        impl Exact for $t {
            type Acc = f64;
            fn acc(self) -> f64 { $to(self) }
            fn one() -> f64 { 1.0 }
            fn mul(a: f64, b: f64) -> f64 { a * b }
            fn add(a: f64, b: f64) -> f64 { a + b }
            fn finish(a: f64) -> $t { $from(a) }
        }
    )*};
}
exact_float! {
    f32: |x: f32| x as f64, |a: f64| a as f32;
    f64: |x: f64| x, |a: f64| a;
    half::f16: half::f16::to_f64, half::f16::from_f64;
    half::bf16: half::bf16::to_f64, half::bf16::from_f64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{eval_all, fact, infer1};
    use irun_tensor::ElementType::*;

    fn einsum(eq: &str) -> Einsum {
        let clean: std::string::String = eq.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match clean.split_once("->") {
            Some((l, r)) => (l.to_string(), Some(r.to_string())),
            None => (clean.clone(), None),
        };
        Einsum {
            inputs: lhs.split(',').map(|t| parse_term(t, eq).unwrap()).collect(),
            output: rhs.map(|r| parse_term(&r, eq).unwrap()),
            equation: eq.into(),
        }
    }

    fn f32s(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor::from_f32(shape.to_vec(), v.to_vec()).unwrap()
    }

    /// The GEMM route against the direct loop on the same values in f64: batched products
    /// in any label order, permuted outputs, broadcast `...` dims, a diagonal, an outer
    /// product; and a sum over one operand's own label, which takes the direct loop.
    #[test]
    fn gemm_route_matches_the_direct_loop() {
        let cases: [(&str, &[usize], &[usize]); 8] = [
            ("bixy,ioxy->boxy", &[3, 5, 4, 6], &[5, 7, 4, 6]),
            ("bij,bjk->bik", &[4, 9, 17], &[4, 17, 5]),
            ("ij,jk->ki", &[33, 20], &[20, 40]),
            ("...ij,...jk->...ik", &[2, 1, 6, 8], &[3, 8, 5]),
            ("ii,ij->ij", &[6, 6], &[6, 4]),
            ("i,j->ij", &[7], &[9]),
            ("abc,cb->a", &[5, 6, 7], &[7, 6]),
            ("ij,jk->i", &[6, 5], &[5, 4]),
        ];
        for (eq, sa, sb) in cases {
            let values = |shape: &[usize], seed: usize| -> Vec<f32> {
                let n: usize = shape.iter().product();
                (0..n)
                    .map(|i| ((i * 7919 + seed) % 101) as f32 / 50.0 - 1.0)
                    .collect()
            };
            let (a, b) = (values(sa, 1), values(sb, 2));
            let got = eval_all(&einsum(eq), vec![f32s(sa, &a), f32s(sb, &b)]).unwrap();
            let wide = |v: &[f32], shape: &[usize]| {
                Tensor::from_f64(shape.to_vec(), v.iter().map(|&x| x as f64).collect()).unwrap()
            };
            let want = eval_all(&einsum(eq), vec![wide(&a, sa), wide(&b, sb)]).unwrap();
            assert_eq!(got[0].shape(), want[0].shape(), "{eq}");
            let (g, w) = (
                got[0].values::<f32>().unwrap(),
                want[0].values::<f64>().unwrap(),
            );
            for (i, (&g, &w)) in g.iter().zip(w).enumerate() {
                assert!(
                    (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "{eq} element {i}: {g} vs {w}"
                );
            }
        }
    }

    #[test]
    fn matmul_trace_diagonal_and_implicit() {
        let a = f32s(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
        let b = f32s(&[3, 2], &[1., 0., 0., 1., 1., 1.]);
        let out = eval_all(&einsum("ij,jk->ik"), vec![a.clone(), b.clone()]).unwrap();
        assert_eq!(out[0], f32s(&[2, 2], &[4., 5., 10., 11.]));
        let out = eval_all(&einsum("ij,jk"), vec![a.clone(), b]).unwrap();
        assert_eq!(out[0].shape(), &[2, 2], "implicit: i and k, sorted");
        let sq = f32s(&[2, 2], &[1., 2., 3., 4.]);
        assert_eq!(
            eval_all(&einsum("ii->i"), vec![sq.clone()]).unwrap()[0],
            f32s(&[2], &[1., 4.])
        );
        assert_eq!(
            eval_all(&einsum("ii->"), vec![sq.clone()]).unwrap()[0],
            f32s(&[], &[5.])
        );
        assert_eq!(
            eval_all(&einsum("ij->ji"), vec![a]).unwrap()[0].shape(),
            &[3, 2]
        );
        let i = Tensor::from_i64(vec![2, 2], vec![1 << 40, 1, 2, 3]).unwrap();
        assert_eq!(
            eval_all(&einsum("ij->i"), vec![i]).unwrap()[0],
            Tensor::from_i64(vec![2], vec![(1 << 40) + 1, 5]).unwrap()
        );
    }

    #[test]
    fn ellipsis_broadcasts() {
        let f = infer1(
            &einsum("...ij,...jk->...ik"),
            &[fact(F32, "2,1,2,3"), fact(F32, "5,3,4")],
        )
        .unwrap();
        assert_eq!(f.shape.to_string(), "[2,5,2,4]");
        let e = infer1(&einsum("ij,jk->ik"), &[fact(F32, "2,3"), fact(F32, "4,2")]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        let e = infer1(&einsum("ij->ij"), &[fact(F32, "2,3,4")]).unwrap_err();
        assert_eq!(e.code, codes::RANK);
    }
}
