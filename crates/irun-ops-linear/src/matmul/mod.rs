//! MatMul-1: numpy `matmul` with `transpose_a`/`transpose_b` (swap an operand's last two dims).
//! A 1-D A is `[1,K]`, a 1-D B `[K,1]` (their transpose flags are ignored) and the added dim is
//! dropped from the result; batch dims broadcast numpy-style: (2,1,3,4)·(5,4,2) -> (2,5,3,2).
//! Both inputs share one numeric type. Integers are exact and wrap (OpenVINO CPU computes i32
//! through f32 and i64 as i32).

use std::sync::Arc;

use irun_tensor::{with_int, Dim, ElementType, PartialShape, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::broadcast::{broadcast_or_error, Broadcast};
use crate::conv::{narrow, widen};
use crate::fact::Fact;
use crate::gemm::{reach, Mul};
use crate::kernel::try_zeroed;
use crate::op::{
    codes, expect_inputs, same_element_type, take_inputs, Op, OpError, Prepared, Value,
};
use crate::par;

#[derive(Debug)]
pub struct MatMul {
    pub transpose_a: bool,
    pub transpose_b: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(MatMul {
        transpose_a: a.bool_or("transpose_a", false)?,
        transpose_b: a.bool_or("transpose_b", false)?,
    }))
}

/// The operands as batched matrices: batch dims, rows, columns (after the transpose flag),
/// and whether a unit dim was added to a 1-D operand.
struct Operand<T> {
    batch: Vec<T>,
    rows: T,
    cols: T,
    added: bool,
}

fn operand<T: Copy>(dims: &[T], one: T, transpose: bool, is_a: bool) -> Operand<T> {
    if dims.len() == 1 {
        let (rows, cols) = if is_a { (one, dims[0]) } else { (dims[0], one) };
        return Operand {
            batch: Vec::new(),
            rows,
            cols,
            added: true,
        };
    }
    let (r, c) = (dims[dims.len() - 2], dims[dims.len() - 1]);
    let (rows, cols) = if transpose { (c, r) } else { (r, c) };
    Operand {
        batch: dims[..dims.len() - 2].to_vec(),
        rows,
        cols,
        added: false,
    }
}

impl Op for MatMul {
    fn name(&self) -> &'static str {
        "MatMul-1"
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs(inputs, 2, self.name())?;
        let ty = same_element_type(inputs, &[0, 1], self.name())?;
        if ty == ElementType::Boolean {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                "MatMul-1: boolean inputs",
            ));
        }
        let (Some(a), Some(b)) = (inputs[0].shape.dims(), inputs[1].shape.dims()) else {
            return Ok(vec![Fact::new(ty, PartialShape::dynamic_rank())]);
        };
        for (slot, d) in [(0, a), (1, b)] {
            if d.is_empty() {
                return Err(OpError::input(
                    slot,
                    codes::RANK,
                    "MatMul-1: scalar inputs are not allowed",
                ));
            }
        }
        let one = Dim::fixed(1);
        let (pa, pb) = (
            operand(a, one, self.transpose_a, true),
            operand(b, one, self.transpose_b, false),
        );
        if !pa.cols.compatible(pb.rows) {
            return Err(OpError::input(
                1,
                codes::SHAPE,
                format!(
                    "MatMul-1: inner dimensions differ: A {} (transpose_a={}) has {} columns, B {} (transpose_b={}) has {} rows",
                    inputs[0].shape, self.transpose_a, pa.cols, inputs[1].shape, self.transpose_b, pb.rows
                ),
            ));
        }
        let batch = broadcast_or_error(&[
            &PartialShape::new(pa.batch.clone()),
            &PartialShape::new(pb.batch.clone()),
        ])?;
        let mut out = batch.dims().expect("static ranks").to_vec();
        if !pa.added {
            out.push(pa.rows);
        }
        if !pb.added {
            out.push(pb.cols);
        }
        Ok(vec![Fact::new(ty, PartialShape::new(out))])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let [a, b] = take_inputs::<2>(inputs, self.name())?;
        let ty = a.element_type();
        if b.element_type() != ty || a.shape().is_empty() || b.shape().is_empty() {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                "MatMul-1: inputs of different types, or a scalar",
            ));
        }
        let pa = operand(a.shape(), 1, self.transpose_a, true);
        let pb = operand(b.shape(), 1, self.transpose_b, false);
        if pa.cols != pb.rows {
            return Err(OpError::new(
                codes::RUN_SHAPE,
                format!(
                    "MatMul-1: inner dimensions differ: {:?} and {:?}",
                    a.shape(),
                    b.shape()
                ),
            ));
        }
        let bc = Broadcast::<2>::new([&pa.batch, &pb.batch])?;
        let g = Gemm {
            m: pa.rows,
            k: pa.cols,
            n: pb.cols,
            // A 1-D operand is one row (A) or one column (B), never transposed.
            ta: self.transpose_a && !pa.added,
            tb: self.transpose_b && !pb.added,
        };
        let mut shape = bc.out_shape().to_vec();
        if !pa.added {
            shape.push(g.m);
        }
        if !pb.added {
            shape.push(g.n);
        }
        let out = match ty {
            ElementType::F32 => g.batched::<f32>(&bc, &a, &b, ty, shape),
            ElementType::F64 => g.batched::<f64>(&bc, &a, &b, ty, shape),
            ElementType::F16 | ElementType::Bf16 => {
                let (wa, wb) = (widen(&a)?, widen(&b)?);
                let wide = g.batched::<f32>(&bc, &wa, &wb, ElementType::F32, shape)?;
                narrow(&wide, ty)
            }
            ty => with_int!(ty, T => g.batched::<T>(&bc, &a, &b, ty, shape),
                else Err(OpError::new(codes::UNSUPPORTED_TYPE, format!("MatMul-1 on {ty}")))),
        }?;
        Ok(vec![Arc::new(out)])
    }

    fn prepare(&self, _: &[Fact], constants: &[Option<Value>]) -> Option<Box<dyn Prepared>> {
        prepared::PreparedMatMul::new(self, constants).map(|p| Box::new(p) as Box<dyn Prepared>)
    }
}

/// One product's geometry: `[m,k] x [k,n]`, operands stored transposed when `ta`/`tb`.
struct Gemm {
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
}

impl Gemm {
    /// Element strides (row, column) of an operand stored `[r, c]`, read transposed or not.
    fn strides(rows_stored: usize, cols_stored: usize, transposed: bool) -> (isize, isize) {
        let _ = rows_stored;
        if transposed {
            (1, cols_stored as isize)
        } else {
            (cols_stored as isize, 1)
        }
    }

    fn batched<T: Mul>(
        &self,
        bc: &Broadcast<2>,
        a: &Tensor,
        b: &Tensor,
        ty: ElementType,
        shape: Vec<usize>,
    ) -> Result<Tensor, OpError> {
        let (av, bv) = (values::<T>(a)?, values::<T>(b)?);
        let (am, bm, cm) = (self.m * self.k, self.k * self.n, self.m * self.n);
        let sa = if self.ta {
            Self::strides(self.k, self.m, true)
        } else {
            Self::strides(self.m, self.k, false)
        };
        let sb = if self.tb {
            Self::strides(self.n, self.k, true)
        } else {
            Self::strides(self.k, self.n, false)
        };
        let batches = bc.out_len();
        let mut out = try_zeroed::<T>(batches * cm)?;
        // Operand offsets of each batch, from the broadcast walk.
        let mut pairs = Vec::with_capacity(batches);
        bc.rows(0..batches, |_, s, st, len| {
            for i in 0..len {
                pairs.push(((s[0] + i * st[0]) * am, (s[1] + i * st[1]) * bm));
            }
        });
        // Tasks: whole batches, or row blocks of one big product.
        let row_blocks = if batches == 1 {
            par::threads().min(self.m.max(1))
        } else {
            1
        };
        let mut rows_per = self.m.div_ceil(row_blocks.max(1)).max(1);
        // No block of a single row unless the product has one: a row alone is a vector
        // product, summed in another order than the rows multiplied with it (a [2, 352] x
        // [10, 352]ᵀ Linear gave other bits on 2 threads than on 1).
        while self.m > 1 && (rows_per == 1 || self.m % rows_per == 1) {
            rows_per += 1;
        }
        let mut chunks: Vec<&mut [T]> = out.chunks_mut((rows_per * self.n).max(1)).collect();
        let per_batch = cm.div_ceil((rows_per * self.n).max(1)).max(1);
        par::for_each_mut(&mut chunks, &|i, c| {
            let (batch, block) = (i / per_batch, i % per_batch);
            let (ao, bo) = pairs[batch];
            let r0 = block * rows_per;
            let rows = c.len() / self.n.max(1);
            let a_start = ao + r0 * sa.0 as usize;
            let a_blk = &av[a_start..a_start + reach(rows, self.k, sa)];
            T::gemm(rows, self.k, self.n, a_blk, sa, &bv[bo..bo + bm], sb, c);
        });
        Tensor::new(ty, shape, T::wrap(out))
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }
}

fn values<T: Scalar>(t: &Tensor) -> Result<&[T], OpError> {
    t.values::<T>()
        .ok_or_else(|| OpError::new(codes::UNSUPPORTED_TYPE, "unexpected element type"))
}

mod prepared;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{eval1, fact, infer1};
    use irun_tensor::ElementType::*;

    fn mm(ta: bool, tb: bool) -> MatMul {
        MatMul {
            transpose_a: ta,
            transpose_b: tb,
        }
    }

    /// Plain triple loop over row-major [m,k] x [k,n].
    fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    #[test]
    fn shapes_as_numpy_matmul() {
        let s = |a: &str, b: &str, ta, tb| {
            infer1(&mm(ta, tb), &[fact(F32, a), fact(F32, b)]).map(|f| f.shape.to_string())
        };
        assert_eq!(s("2,1,3,4", "5,4,2", false, false).unwrap(), "[2,5,3,2]");
        assert_eq!(s("4", "4", true, true).unwrap(), "[]");
        assert_eq!(s("4", "2,4,3", false, false).unwrap(), "[2,3]");
        assert_eq!(s("3,4", "3,5", true, false).unwrap(), "[4,5]");
        assert_eq!(s("?,4", "4,?", false, false).unwrap(), "[?,?]");
        let e = infer1(&mm(false, false), &[fact(F32, "3,4"), fact(F32, "5,2")]).unwrap_err();
        assert_eq!(e.code, codes::SHAPE);
        assert!(
            e.message.starts_with("MatMul-1: inner dimensions differ"),
            "{}",
            e.message
        );
        let e = infer1(&mm(false, false), &[fact(F32, ""), fact(F32, "2")]).unwrap_err();
        assert_eq!(e.code, codes::RANK);
    }

    #[test]
    fn f64_products_with_transposes_and_batches() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f64> = (0..2 * m * k).map(|i| (i % 11) as f64 - 5.0).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i % 7) as f64 * 0.5).collect();
        let out = eval1(
            &mm(false, false),
            vec![
                Tensor::from_f64(vec![2, m, k], a.clone()).unwrap(),
                Tensor::from_f64(vec![k, n], b.clone()).unwrap(),
            ],
        )
        .unwrap();
        let mut want = naive(&a[..m * k], &b, m, k, n);
        want.extend(naive(&a[m * k..], &b, m, k, n));
        assert_eq!(out.values::<f64>().unwrap(), want.as_slice());
        // B stored transposed: [n, k].
        let bt: Vec<f64> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
        let out = eval1(
            &mm(false, true),
            vec![
                Tensor::from_f64(vec![m, k], a[..m * k].to_vec()).unwrap(),
                Tensor::from_f64(vec![n, k], bt).unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(
            out.values::<f64>().unwrap(),
            naive(&a[..m * k], &b, m, k, n).as_slice()
        );
    }

    /// A constant B packed at compile time gives the run-time kernel's output bit for bit,
    /// for a batched A and both transpose_b settings; a transposed A falls back to it. The
    /// short inner dims take `small_k.rs` (9 into 64 as PointPillars' pillar layer, and the
    /// widths it stops at), the others rten-gemm's packed B, in blocks of rows that depend
    /// on the thread count.
    #[test]
    fn packed_weights_match_the_run_time_kernel() {
        for (m, k, n) in [
            (37, 70, 45),
            (37, 9, 64),
            (50, 3, 32),
            (5, 16, 128),
            (41, 1, 16),
            (9, 17, 64),
            // Matrices of one row each, which the op multiplies as vector products (in
            // another order than a GEMM's), so the prepared kernel must leave them to it.
            (1, 300, 128),
            // Few rows of a long product: blocks of rows split between the threads.
            (2, 300, 128),
            (11, 300, 128),
            // A few columns: with B transposed, dot products of rows and columns
            // (`narrow.rs`), with and without a step of 32, and rows of one.
            (100, 1568, 6),
            (7, 40, 4),
            (9, 31, 8),
            (1, 64, 5),
        ] {
            packed_matches_run_time(3, m, k, n);
        }
        // One matrix of a few rows past rten-gemm's depth block of 256, small enough for
        // the op's direct loops: a classifier's Linear over 352 pooled features; and 3 rows,
        // which 2 or 3 threads would cut into blocks of 1.
        packed_matches_run_time(1, 2, 352, 10);
        packed_matches_run_time(1, 3, 300, 40);
    }

    fn packed_matches_run_time(batch: usize, m: usize, k: usize, n: usize) {
        {
            let a: Vec<f32> = (0..batch * m * k)
                .map(|i| ((i * 7) % 19) as f32 * 0.13 - 1.0)
                .collect();
            let b: Vec<f32> = (0..k * n)
                .map(|i| ((i * 3) % 23) as f32 * 0.07 - 0.5)
                .collect();
            for (tb, bshape) in [(false, vec![k, n]), (true, vec![n, k])] {
                for ta in [false, true] {
                    let ashape = if ta {
                        vec![batch, k, m]
                    } else {
                        vec![batch, m, k]
                    };
                    let inputs = || {
                        vec![
                            Tensor::from_f32(ashape.clone(), a.clone()).unwrap(),
                            Tensor::from_f32(bshape.clone(), b.clone()).unwrap(),
                        ]
                    };
                    let op = mm(ta, tb);
                    let plain = eval1(&op, inputs()).unwrap();
                    for threads in [1, 2] {
                        let packed =
                            crate::testing::eval_prepared(&op, inputs(), &[false, true], threads)
                                .expect("prepared")
                                .unwrap();
                        assert_eq!(
                            format!("{packed:?}"),
                            format!("{plain:?}"),
                            "{m}x{k}x{n}: ta {ta} tb {tb}, {threads} threads"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn integers_are_exact_and_wrap() {
        let out = eval1(
            &mm(false, false),
            vec![
                Tensor::from_i32(vec![1, 2], vec![16_777_217, 1]).unwrap(),
                Tensor::from_i32(vec![2, 1], vec![1, 0]).unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(
            out.values::<i32>().unwrap(),
            &[16_777_217],
            "CPU goes through f32"
        );
        let out = eval1(
            &mm(false, false),
            vec![
                Tensor::from_u8(vec![2], vec![200, 100]).unwrap(),
                Tensor::from_u8(vec![2], vec![2, 1]).unwrap(),
            ],
        )
        .unwrap();
        assert_eq!(out.shape(), &[] as &[usize]);
        assert_eq!(out.values::<u8>().unwrap(), &[((400 + 100) % 256) as u8]);
    }

    #[test]
    fn f32_large_product_splits_rows_and_agrees_across_threads() {
        let (m, k, n) = (300, 64, 40);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5) % 9) as f32 * 0.25).collect();
        let out = eval1(
            &mm(false, false),
            vec![
                Tensor::from_f32(vec![m, k], a.clone()).unwrap(),
                Tensor::from_f32(vec![k, n], b.clone()).unwrap(),
            ],
        )
        .unwrap();
        let want = naive(
            &a.iter().map(|&x| x as f64).collect::<Vec<_>>(),
            &b.iter().map(|&x| x as f64).collect::<Vec<_>>(),
            m,
            k,
            n,
        );
        // Small integers and quarters: exact in f32 whatever the summation order.
        assert!(out
            .values::<f32>()
            .unwrap()
            .iter()
            .zip(&want)
            .all(|(&x, &y)| x as f64 == y));
    }
}
