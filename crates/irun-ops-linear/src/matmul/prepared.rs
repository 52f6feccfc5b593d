//! The prepared MatMul: a constant f32 B made ready once at compile time (rten-gemm's
//! packed B, or the short-k kernel's rows), the product written in blocks of rows straight
//! into the output, each finished by the epilogue while in cache, and a ReduceMax over each
//! matrix's rows folded in when the executor hands it over (`row_max.rs`).

use std::sync::Arc;

use irun_tensor::Tensor;

use super::MatMul;
use crate::gemm::{view, F32_GEMM};
use crate::kernel::try_zeroed;
use crate::op::{codes, take_inputs, Op, OpError, Prepared, Value};
use crate::par;
use irun_opkit::epilogue::{Channels, Epilogue};
use rten_gemm::{GemmInputA, GemmInputB, GemmUninitOptions};

/// A MatMul whose B is a constant f32 matrix (the weights of a linear layer), packed once
/// at compile time. A (not transposed) of any batch shape is one `[rows, k]` matrix times the
/// packed B. Anything else, or another B than the packed one, runs as the op does.
#[derive(Debug)]
pub(super) struct PreparedMatMul {
    op: MatMul,
    b: Value,
    /// B as the covered product's kernel takes it.
    kernel: BKernel,
    k: usize,
    n: usize,
    /// Ops after it that it applies to its output ([`Prepared::set_epilogue`]).
    epilogue: Option<Epilogue>,
    /// A ReduceMax over dim -2 after them, with its `keep_dims` ([`Prepared::set_row_max`]).
    row_max: Option<bool>,
}

/// rten-gemm's packed B, or B for the kernel of a short inner dim (`small_k.rs`), which
/// runs instead where it can: B is made ready once, for the one kernel that uses it. A B of
/// a few columns given transposed is read as it is stored, by the kernel the op itself runs
/// on it (`narrow.rs`), so prepared or not, the bits are the same.
enum BKernel {
    /// Written straight into the output's uninitialised capacity by rten-gemm.
    Packed(rten_gemm::PackedBMatrix<f32>),
    /// Computed into a block in cache, finished there and copied out.
    Unpacked(Unpacked),
}

/// The kernels that read B as they hold it, row block by row block.
enum Unpacked {
    Small(crate::small_k::SmallK),
    /// B `[n, k]` as given: the rows are the product's columns.
    Narrow(Vec<f32>),
}

impl Unpacked {
    /// The product's rows for the rows of `a` (`[rows, k]`) into `out` (`[rows, n]`).
    fn rows(&self, (k, n): (usize, usize), a: &[f32], out: &mut [f32]) {
        match self {
            Unpacked::Small(small) => small.rows(a, out),
            Unpacked::Narrow(b) => crate::narrow::product(k, n, a, k, b, k, out),
        }
    }
}

impl std::fmt::Debug for BKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BKernel::Packed(_) => write!(f, "PackedB"),
            BKernel::Unpacked(Unpacked::Small(s)) => write!(f, "{s:?}"),
            BKernel::Unpacked(Unpacked::Narrow(_)) => write!(f, "Narrow"),
        }
    }
}

impl PreparedMatMul {
    pub(super) fn new(op: &MatMul, constants: &[Option<Value>]) -> Option<PreparedMatMul> {
        let b = constants.get(1)?.clone()?;
        let bv = b.values::<f32>()?;
        let &[rows, cols] = b.shape() else {
            return None;
        };
        let (k, n, strides) = if op.transpose_b {
            (cols, rows, (1, cols as isize))
        } else {
            (rows, cols, (cols as isize, 1))
        };
        if k == 0 || n == 0 {
            return None;
        }
        let kernel = match crate::small_k::SmallK::new(bv, k, n, op.transpose_b) {
            Some(small) => BKernel::Unpacked(Unpacked::Small(small)),
            // A's rows are contiguous on the covered path (not transposed).
            None if crate::narrow::suits(n, (k as isize, 1), strides) => {
                BKernel::Unpacked(Unpacked::Narrow(bv.to_vec()))
            }
            None => BKernel::Packed(F32_GEMM.with(|e| e.prepack_b(view(k, n, bv, strides)))),
        };
        Some(PreparedMatMul {
            op: MatMul {
                transpose_a: op.transpose_a,
                transpose_b: op.transpose_b,
            },
            b,
            kernel,
            k,
            n,
            epilogue: None,
            row_max: None,
        })
    }
}

impl Prepared for PreparedMatMul {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        // Matrices of one row of A (a batch of them included: `[3, 1, k]` took the packed
        // kernel and gave other bits than `irun run`), or one column of B, are vector
        // products, which the op's path runs on the unpacked B (`gemm::vector_product`):
        // packing gains nothing there, and the packed kernel sums in another order, so
        // prepared or not, both take the op's path.
        let covered = inputs.len() == 2
            && Arc::ptr_eq(&inputs[1], &self.b)
            && !self.op.transpose_a
            && inputs[0].shape().len() >= 2
            && inputs[0].shape().last() == Some(&self.k)
            && inputs[0].shape()[inputs[0].shape().len() - 2] != 1
            && self.n != 1;
        let Some(av) = inputs[0].values::<f32>().filter(|_| covered) else {
            let out = self.op.eval(inputs)?;
            if self.epilogue.is_none() && self.row_max.is_none() {
                return Ok(out);
            }
            // In place: the op's output is fresh, so nothing else holds it.
            let [t] = take_inputs::<1>(out, self.op.name())?;
            let mut t = crate::kernel::take_or_copy(t);
            if let Some(e) = &self.epilogue {
                e.apply_to(&mut t, Channels::Inner(self.n))?;
            }
            let t = match self.row_max {
                Some(keep_dims) => self.max_over_rows(&t, keep_dims)?,
                None => t,
            };
            return Ok(vec![Arc::new(t)]);
        };
        if let Some(keep_dims) = self.row_max {
            let shape = inputs[0].shape();
            let (m, rank) = (shape[shape.len() - 2], shape.len());
            let groups: usize = shape[..rank - 2].iter().product();
            let out = match &self.kernel {
                // All in registers: each row's sums finished and folded as they are made.
                BKernel::Unpacked(Unpacked::Small(small)) if m > 0 => {
                    let mut out = try_zeroed::<f32>(groups * self.n)?;
                    let finish = Epilogue::parts(self.epilogue.as_ref());
                    let grain = (crate::kernel::PAR_MIN_ELEMENTS / (m * self.k)).max(1) * self.n;
                    par::for_each_split_mut(&mut out, grain, &|start, chunk| {
                        let a = &av[start / self.n * m * self.k..];
                        small.row_maxima(a, m, finish, chunk);
                    });
                    out
                }
                _ => crate::row_max::fold_groups(groups, m, self.n, &|first, rows, scratch| {
                    self.rows_into(&av[first * self.k..][..rows * self.k], first, scratch)
                })?,
            };
            let mut full = shape.to_vec();
            full[rank - 1] = self.n;
            let t = Tensor::from_f32(crate::row_max::reduced_shape(&full, keep_dims), out)
                .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
            return Ok(vec![Arc::new(t)]);
        }
        let rows = av.len() / self.k;
        let len = rows * self.n;
        let mut out: Vec<f32> = crate::kernel::try_with_capacity(len)?;
        // Blocks of rows written straight into the output's capacity (zero-filling 98 MB
        // first, on one thread, took longer than PointPillars' whole product), each finished
        // by the epilogue while it is still in cache.
        // A product of few rows is shared between the threads too (BERT's [32, 512] x [512,
        // 128] was one block, on one thread: 0.044 ms against OpenVINO's 0.022), down to
        // PAR_MIN_ELEMENTS multiply-adds a block. Each output's sum does not depend on the
        // rows computed with it (rten-gemm's depth blocks follow k alone; the short-k kernel
        // goes row by row), so neither do the bits on the thread count.
        let cache_rows = EPILOGUE_BLOCK_ELEMENTS.div_ceil(self.n).max(1);
        let share = rows.div_ceil(par::threads().max(1));
        let least = crate::kernel::PAR_MIN_ELEMENTS
            .div_ceil(self.k * self.n)
            .max(1);
        let block = cache_rows.min(share.max(least)) * self.n;
        let written = std::sync::atomic::AtomicUsize::new(0);
        par::for_each_split_mut(
            &mut out.spare_capacity_mut()[..len],
            block,
            &|start, chunk| {
                let mut scratch = Vec::new();
                let finish = |c: &mut [f32], at: usize| {
                    if let Some(e) = &self.epilogue {
                        e.apply_at(c, at, Channels::Inner(self.n));
                    }
                };
                for (i, c) in chunk.chunks_mut(block).enumerate() {
                    let at = start + i * block;
                    let first_row = at / self.n;
                    let c_rows = c.len() / self.n;
                    let a = &av[first_row * self.k..];
                    let c = match &self.kernel {
                        // Computed and finished in a block that stays in cache, then copied
                        // into the output once (finishing the copy instead cost 1.4% of
                        // PointPillars).
                        BKernel::Unpacked(kernel) => {
                            scratch.resize(c.len(), 0.0);
                            kernel.rows((self.k, self.n), a, &mut scratch);
                            finish(&mut scratch, at);
                            c.write_copy_of_slice(&scratch)
                        }
                        BKernel::Packed(packed) => {
                            let c = F32_GEMM.with(|e| {
                                e.gemm_uninit(
                                    c,
                                    GemmInputA::Unpacked(view(
                                        c_rows,
                                        self.k,
                                        a,
                                        (self.k as isize, 1),
                                    )),
                                    GemmInputB::Packed(packed),
                                    GemmUninitOptions::default(),
                                )
                                .expect("shapes agree by construction")
                            });
                            finish(c, at);
                            c
                        }
                    };
                    written.fetch_add(c.len(), std::sync::atomic::Ordering::Relaxed);
                }
            },
        );
        if written.into_inner() != len {
            return Err(OpError::new(
                codes::INTERNAL,
                "internal error: a block of the product was left unwritten",
            ));
        }
        // SAFETY: `for_each_split_mut` cuts `0..len` of the capacity into consecutive chunks
        // and runs the closure on each (or panics, and then this line is never reached); the
        // closure cuts its chunk into consecutive blocks and writes each whole, by
        // `write_copy_of_slice` or by `gemm_uninit`, whose safe signature returns that block as
        // `&mut [f32]`, so initialised; the
        // check above saw blocks of `len` elements in all come back. `f32: Copy`.
        unsafe { out.set_len(len) };
        let mut shape = inputs[0].shape().to_vec();
        *shape.last_mut().expect("rank 2 or more") = self.n;
        let t = Tensor::from_f32(shape, out)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![Arc::new(t)])
    }

    fn byte_size(&self) -> usize {
        self.k * self.n * 4
    }

    /// A bias of one value per output column, and/or a ReLU.
    fn set_epilogue(&mut self, e: &Epilogue) -> bool {
        e.keep_if_fits(&mut self.epilogue, self.n, 0)
    }

    /// The maxima over each matrix's rows (`row_max.rs`), on every path: the covered product
    /// folds its blocks as it computes them, the op's fold its output.
    fn set_row_max(&mut self, keep_dims: bool) -> bool {
        self.row_max = Some(keep_dims);
        true
    }
}

impl PreparedMatMul {
    /// Rows `first ..` of the covered product (`a` holds their rows of A) into `scratch`,
    /// finished by the epilogue, as the blocks of [`Prepared::eval`] compute them.
    fn rows_into(&self, a: &[f32], first: usize, scratch: &mut Vec<f32>) {
        let rows = a.len() / self.k;
        let len = rows * self.n;
        scratch.clear();
        match &self.kernel {
            BKernel::Unpacked(kernel) => {
                scratch.resize(len, 0.0);
                kernel.rows((self.k, self.n), a, scratch);
            }
            BKernel::Packed(packed) => {
                scratch.reserve(len);
                F32_GEMM.with(|e| {
                    e.gemm_uninit(
                        &mut scratch.spare_capacity_mut()[..len],
                        GemmInputA::Unpacked(view(rows, self.k, a, (self.k as isize, 1))),
                        GemmInputB::Packed(packed),
                        GemmUninitOptions::default(),
                    )
                    .expect("shapes agree by construction");
                });
                // SAFETY: `gemm_uninit` returned without error, which by its contract (a
                // safe signature handing the block back as `&mut [f32]`) initialised all
                // `len` slots of the capacity it was given. `f32: Copy`.
                unsafe { scratch.set_len(len) };
            }
        }
        if let Some(e) = &self.epilogue {
            e.apply_at(scratch, first * self.n, Channels::Inner(self.n));
        }
    }

    /// The op's own output `t` (`[..., m, n]`, f32, finished) folded over its rows.
    fn max_over_rows(&self, t: &Tensor, keep_dims: bool) -> Result<Tensor, OpError> {
        let internal = || OpError::new(codes::INTERNAL, "a fused ReduceMax on a non-f32 product");
        let v = t.values::<f32>().ok_or_else(internal)?;
        let shape = t.shape();
        if shape.len() < 2 {
            return Err(internal());
        }
        let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let groups: usize = shape[..shape.len() - 2].iter().product();
        let out = crate::row_max::fold_groups(groups, m, n, &|first, rows, s| {
            s.clear();
            s.extend_from_slice(&v[first * n..][..rows * n]);
        })?;
        Tensor::from_f32(crate::row_max::reduced_shape(shape, keep_dims), out)
            .map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))
    }
}

/// Output elements per block of rows that a prepared product with an epilogue computes and
/// finishes at a time (256 KiB of f32: the block is still in L2 when the epilogue reads it).
const EPILOGUE_BLOCK_ELEMENTS: usize = 1 << 16;
