//! CumSum-3: running sums along one axis. Inputs data (any numeric type, rank >= 1) and an
//! optional axis (an integer scalar or one-element 1-D, negative allowed, default 0).
//! `exclusive` leaves each element out of its own sum (the first becomes 0); `reverse` sums
//! from the end. `[1, 2, 3]`: `[1, 3, 6]`, exclusive `[0, 1, 3]`, reverse `[6, 5, 3]`, both
//! `[5, 3, 0]`.
//!
//! Floats run in f64 and are rounded once per output, integers wrap in their own type. Over
//! `[outer, along, inner]` each step adds a whole inner row to a row of running sums, so a
//! non-innermost axis runs at the innermost one's per-element speed.

use irun_tensor::{with_float, with_int, ElementType, Scalar, Tensor};

use crate::attrs::AttrReader;
use crate::fact::Fact;
use crate::kernel::try_zeroed;
use crate::num::{Float, Int};
use crate::op::{codes, expect_inputs_between, Op, OpError, Value};
use crate::par;
use crate::util::{expect_int_type, ints, known_ints, norm_axis};

#[derive(Debug, Default)]
pub struct CumSum {
    pub exclusive: bool,
    pub reverse: bool,
}

pub fn build(a: &AttrReader) -> Result<Box<dyn Op>, OpError> {
    Ok(Box::new(CumSum {
        exclusive: a.bool_or("exclusive", false)?,
        reverse: a.bool_or("reverse", false)?,
    }))
}

fn one_axis(values: &[i64], rank: usize) -> Result<usize, OpError> {
    match values {
        [a] => norm_axis(*a, rank, Some(1), "CumSum-3"),
        _ => Err(OpError::input(
            1,
            codes::SHAPE,
            format!("CumSum-3: the axis must be one value, got {}", values.len()),
        )),
    }
}

impl CumSum {
    /// The running sums of `x` as `[outer, along, inner]`: `add` folds a value into an
    /// accumulator, `out` rounds one back.
    fn run<T: Copy + Default + Send + Sync, A: Copy + Send + Sync>(
        &self,
        x: &[T],
        (along, inner): (usize, usize),
        zero: A,
        add: impl Fn(A, T) -> A + Sync,
        out: impl Fn(A) -> T + Sync,
    ) -> Result<Vec<T>, OpError> {
        let mut y = try_zeroed::<T>(x.len())?;
        let block = along * inner;
        if block == 0 {
            return Ok(y);
        }
        par::for_each_split_mut(&mut y, block, &|at, blocks| {
            let mut acc = vec![zero; inner];
            for (b, dst) in blocks.chunks_mut(block).enumerate() {
                let src = &x[at + b * block..][..block];
                acc.fill(zero);
                for step in 0..along {
                    let k = if self.reverse { along - 1 - step } else { step };
                    let (s, d) = (&src[k * inner..][..inner], &mut dst[k * inner..][..inner]);
                    for ((a, &v), o) in acc.iter_mut().zip(s).zip(d) {
                        if self.exclusive {
                            *o = out(*a);
                            *a = add(*a, v);
                        } else {
                            *a = add(*a, v);
                            *o = out(*a);
                        }
                    }
                }
            }
        });
        Ok(y)
    }
}

impl Op for CumSum {
    fn name(&self) -> &'static str {
        "CumSum-3"
    }

    fn value_inputs(&self) -> &'static [usize] {
        &[1]
    }

    fn infer(&self, inputs: &[Fact]) -> Result<Vec<Fact>, OpError> {
        expect_inputs_between(inputs, 1, 2, self.name())?;
        let data = &inputs[0];
        if data.ty == ElementType::Boolean || data.ty == ElementType::String {
            return Err(OpError::input(
                0,
                codes::ELEMENT_TYPE,
                format!("CumSum-3: data must be numeric, got {}", data.ty),
            ));
        }
        if inputs.len() == 2 {
            expect_int_type(inputs, 1, self.name())?;
            if inputs[1].rank().is_some_and(|r| r > 1) {
                return Err(OpError::input(
                    1,
                    codes::RANK,
                    format!("CumSum-3: the axis {} must be a scalar", inputs[1].shape),
                ));
            }
            if let (Some(rank), Some(a)) = (data.rank(), known_ints(&inputs[1])) {
                one_axis(&a, rank)?;
            }
        }
        if data.rank() == Some(0) {
            return Err(OpError::input(
                0,
                codes::RANK,
                "CumSum-3: data must have rank 1 or more",
            ));
        }
        Ok(vec![Fact::new(data.ty, data.shape.clone())])
    }

    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        let x = &inputs[0];
        let dims = x.shape();
        let axis = match inputs.get(1) {
            Some(a) => one_axis(&ints(a, 1)?, dims.len())?,
            None => norm_axis(0, dims.len(), Some(0), self.name())?,
        };
        let along = dims[axis];
        let inner: usize = dims[axis + 1..].iter().product();
        let ty = x.element_type();
        let shape = dims.to_vec();
        let geometry = (along, inner);
        let bad = || OpError::new(codes::UNSUPPORTED_TYPE, format!("CumSum-3 on {ty}"));
        let y = if ty.is_real() {
            with_float!(ty, T => {
                let v = x.values::<T>().ok_or_else(bad)?;
                let y = self.run(v, geometry, 0f64, |a, v: T| a + v.to_f64(), T::from_f64);
                Tensor::new(ty, shape, T::wrap(y?))
            }, else return Err(bad()))
        } else {
            with_int!(ty, T => {
                let v = x.values::<T>().ok_or_else(bad)?;
                let y = self.run(v, geometry, T::ZERO, |a: T, v: T| a.add(v), |a| a);
                Tensor::new(ty, shape, T::wrap(y?))
            }, else return Err(bad()))
        };
        let y = y.map_err(|e| OpError::new(codes::RUN_SHAPE, e.to_string()))?;
        Ok(vec![std::sync::Arc::new(y)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn cs(exclusive: bool, reverse: bool) -> CumSum {
        CumSum { exclusive, reverse }
    }

    #[test]
    fn the_four_modes() {
        for ((e, r), want) in [
            ((false, false), [1., 3., 6.]),
            ((true, false), [0., 1., 3.]),
            ((false, true), [6., 5., 3.]),
            ((true, true), [5., 3., 0.]),
        ] {
            let out = run(&cs(e, r), vec![f32s(&[3], &[1., 2., 3.])]);
            assert_eq!(out, f32s(&[3], &want), "exclusive {e}, reverse {r}");
        }
    }

    /// Along a middle axis, each column summed on its own; integers wrap.
    #[test]
    fn along_an_inner_axis_and_integers() {
        let x = i32s(&[2, 2, 3], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
        let out = run(&cs(false, false), vec![x, i64s(&[], &[-2])]);
        assert_eq!(
            out,
            i32s(&[2, 2, 3], &[1, 2, 3, 5, 7, 9, 7, 8, 9, 17, 19, 21])
        );
        let out = run(&cs(false, false), vec![i8s(&[2], &[100, 100])]);
        assert_eq!(out, i8s(&[2], &[100, -56]));
    }

    /// f16 sums run wide: 2048 + 1 + 1 is 2050 (in f16 steps, 2048 + 1 would round back to
    /// 2048 twice).
    #[test]
    fn floats_sum_wide() {
        let h = |v: f32| half::f16::from_f32(v);
        let out = run(
            &cs(false, false),
            vec![f16s(&[3], &[h(2048.), h(1.), h(1.)])],
        );
        assert_eq!(out, f16s(&[3], &[h(2048.), h(2048.), h(2050.)]));
    }

    #[test]
    fn checks() {
        let e = cs(false, false)
            .infer(&[fact(F32, "2,3"), i64_value(&[2])])
            .unwrap_err();
        assert_eq!(e.code, codes::AXIS);
        let e = cs(false, false).infer(&[fact(Boolean, "2")]).unwrap_err();
        assert_eq!(e.code, codes::ELEMENT_TYPE);
        let f = cs(false, false)
            .infer(&[fact(F32, "?,3"), fact(I32, "")])
            .unwrap();
        assert_eq!(f[0].shape.to_string(), "[?,3]");
    }
}
