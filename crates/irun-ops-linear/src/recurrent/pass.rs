//! One direction's pass over a sequence: the input product for every position at once, then
//! per step the recurrent product and the gates.

use super::product::Product;
use super::{Activation, Kind, Recurrent};
use crate::gemm::Mul;
use crate::kernel::try_zeroed;
use crate::op::OpError;

/// One direction's weights, prepared for its products: W, and the rows of R that multiply
/// the state before the gates are known (all, but for a GRU whose reset gate multiplies
/// the state itself: z and r) and after (that GRU's candidate rows).
#[derive(Debug)]
pub(super) struct Weights<T: Product> {
    w: T::Prepared,
    early: T::Prepared,
    candidate: T::Prepared,
}

impl<T: Real> Weights<T> {
    /// `w [gates x hidden, input]` and `r [gates x hidden, hidden]` for `steps` x `batch`.
    pub fn new(op: &Recurrent, w: &[T], r: &[T], input: usize, steps: usize, batch: usize) -> Self {
        let hs = op.hidden_size;
        let width = op.kind.gates() * hs;
        let early = op.early_rows();
        Weights {
            w: T::prepare(w, width, input, steps * batch),
            early: T::prepare(&r[..early * hs], early, hs, batch),
            candidate: T::prepare(&r[early * hs..width * hs], width - early, hs, batch),
        }
    }

    /// Whether these serve `steps` x `batch` (each product serves the rows it was prepared
    /// for, and maybe others).
    pub fn serves(&self, steps: usize, batch: usize) -> bool {
        T::serves(&self.w, steps * batch)
            && T::serves(&self.early, batch)
            && T::serves(&self.candidate, batch)
    }

    pub fn byte_size(&self) -> usize {
        T::byte_size(&self.w) + T::byte_size(&self.early) + T::byte_size(&self.candidate)
    }
}

pub(super) struct Pass<'a, T: Real> {
    pub op: &'a Recurrent,
    pub batch: usize,
    pub steps: usize,
    pub lengths: &'a [usize],
    pub reverse: bool,
    /// `[batch, steps, input]`.
    pub x: &'a [T],
    pub weights: &'a Weights<T>,
    /// This direction's bias blocks.
    pub bias: &'a [T],
}

impl<T: Real> Pass<'_, T> {
    /// Runs every step, updating `h` (and `c`) `[batch, hidden]` in place for the batch
    /// elements still within their length, and hands each new hidden state to
    /// `emit(b, position, h)`.
    pub fn run(
        &self,
        h: &mut [T],
        mut c: Option<&mut [T]>,
        mut emit: impl FnMut(usize, usize, &[T]),
    ) -> Result<(), OpError> {
        let op = self.op;
        let (batch, hs) = (self.batch, op.hidden_size);
        let width = op.kind.gates() * hs;
        // x W^T + the biases that add to it, for every position at once: [batch*steps, width].
        let rows = batch * self.steps;
        let mut xw = try_zeroed::<T>(rows * width)?;
        T::times(&self.weights.w, self.x, rows, &mut xw);
        for row in xw.chunks_exact_mut(width.max(1)) {
            for (v, &b) in row.iter_mut().zip(&self.bias[..width]) {
                *v = *v + b;
            }
        }
        let early = op.early_rows();
        let reset_first = early < width;
        let mut hr = try_zeroed::<T>(batch * early)?;
        let mut reset_h = try_zeroed::<T>(if reset_first { batch * hs } else { 0 })?;
        let mut candidate = try_zeroed::<T>(reset_h.len())?;
        let mut gates = try_zeroed::<T>(width)?;
        let mut scratch = try_zeroed::<T>(hs)?;
        let act = |i: usize| op.activations[i];
        let clip = T::from_f64(op.clip);
        // Clamps to [-clip, clip] (NaN stays NaN), when clip is set.
        let clipped = |v: &mut [T]| {
            if op.clip > 0.0 {
                let low = T::default() - clip;
                for x in v {
                    if *x > clip {
                        *x = clip
                    } else if *x < low {
                        *x = low
                    }
                }
            }
        };
        let one = T::from_f64(1.0);
        for step in 0..self.steps {
            T::times(&self.weights.early, h, batch, &mut hr);
            let position = |b: usize| {
                if self.reverse {
                    self.lengths[b] - 1 - step
                } else {
                    step
                }
            };
            let active = |b: usize| step < self.lengths[b];
            let preactivation = |b: usize, gates: &mut [T], count: usize| {
                let pre = &xw[(b * self.steps + position(b)) * width..][..count];
                for ((g, &x), &r) in gates.iter_mut().zip(pre).zip(&hr[b * early..]) {
                    *g = x + r;
                }
                clipped(&mut gates[..count]);
            };
            if reset_first {
                // A GRU's reset gate before the product: (r . h) R_h^T.
                for b in (0..batch).filter(|&b| active(b)) {
                    preactivation(b, &mut gates, 2 * hs);
                    T::activate(act(0), &mut gates[hs..2 * hs]);
                    for j in 0..hs {
                        reset_h[b * hs + j] = gates[hs + j] * h[b * hs + j];
                    }
                }
                T::times(&self.weights.candidate, &reset_h, batch, &mut candidate);
            }
            for b in (0..batch).filter(|&b| active(b)) {
                let pos = position(b);
                let hb = &mut h[b * hs..(b + 1) * hs];
                match op.kind {
                    Kind::Lstm => {
                        let cb = &mut c.as_deref_mut().expect("an LSTM has a cell state")
                            [b * hs..(b + 1) * hs];
                        preactivation(b, &mut gates, width);
                        // f and i, then the candidate, then o.
                        T::activate(act(0), &mut gates[..2 * hs]);
                        T::activate(act(1), &mut gates[2 * hs..3 * hs]);
                        T::activate(act(0), &mut gates[3 * hs..]);
                        for j in 0..hs {
                            cb[j] = gates[j] * cb[j] + gates[hs + j] * gates[2 * hs + j];
                        }
                        scratch.copy_from_slice(cb);
                        T::activate(act(2), &mut scratch);
                        for j in 0..hs {
                            hb[j] = gates[3 * hs + j] * scratch[j];
                        }
                    }
                    Kind::Gru {
                        linear_before_reset,
                    } => {
                        let xh = &xw[(b * self.steps + pos) * width + 2 * hs..][..hs];
                        preactivation(b, &mut gates, 2 * hs);
                        T::activate(act(0), &mut gates[..2 * hs]);
                        for j in 0..hs {
                            let recurrent = if linear_before_reset {
                                gates[hs + j] * (hr[b * early + 2 * hs + j] + self.bias[3 * hs + j])
                            } else {
                                candidate[b * hs + j]
                            };
                            scratch[j] = xh[j] + recurrent;
                        }
                        clipped(&mut scratch);
                        T::activate(act(1), &mut scratch);
                        for j in 0..hs {
                            let z = gates[j];
                            hb[j] = (one - z) * scratch[j] + z * hb[j];
                        }
                    }
                    Kind::Rnn => {
                        preactivation(b, hb, hs);
                        T::activate(act(0), hb);
                    }
                }
                emit(b, pos, hb);
            }
        }
        Ok(())
    }
}

/// A float the recurrent kernels compute in.
pub(crate) trait Real:
    Mul
    + Product
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
{
    fn from_f64(x: f64) -> Self;
    /// `values` become `f(values)`.
    fn activate(f: Activation, values: &mut [Self]);
}

impl Real for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    /// rten-vecmath's SIMD sigmoid and tanh, as irun's Sigmoid and Tanh ops run them.
    fn activate(f: Activation, values: &mut [f32]) {
        use rten_simd::SimdUnaryOp;
        match f {
            Activation::Sigmoid => rten_vecmath::Sigmoid {}.map_mut(values),
            Activation::Tanh => rten_vecmath::Tanh {}.map_mut(values),
            // NaN stays NaN, as irun's ReLU keeps it.
            Activation::Relu => values.iter_mut().for_each(|x| {
                if *x < 0.0 {
                    *x = 0.0
                }
            }),
        }
    }
}

impl Real for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn activate(f: Activation, values: &mut [f64]) {
        for x in values {
            *x = match f {
                Activation::Sigmoid => 1.0 / (1.0 + (-*x).exp()),
                Activation::Tanh => x.tanh(),
                Activation::Relu if *x < 0.0 => 0.0,
                Activation::Relu => *x,
            };
        }
    }
}
