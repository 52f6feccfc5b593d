//! Conversions between [`Tensor`] and ndarray's arrays (feature `ndarray`): the array type
//! most Rust code holds. An array in standard (row-major, contiguous) layout becomes a tensor
//! without a copy; a tensor is viewed as an array without one.

use ndarray::{Array, ArrayD, ArrayViewD, Dimension, IxDyn};

use crate::tensor::{Scalar, Tensor};

impl<T: Scalar, D: Dimension> From<Array<T, D>> for Tensor {
    /// Takes the array's buffer as it is when the array is in standard layout and starts at
    /// its buffer's start; otherwise copies its elements in logical (row-major) order.
    fn from(array: Array<T, D>) -> Tensor {
        let shape = array.shape().to_vec();
        let count = array.len();
        let values = if array.is_standard_layout() {
            match array.into_raw_vec_and_offset() {
                (v, Some(0) | None) if v.len() == count => v,
                (v, offset) => {
                    let start = offset.unwrap_or(0);
                    v[start..start + count].to_vec()
                }
            }
        } else {
            array.iter().copied().collect()
        };
        Tensor::from_values(shape, values).expect("an array's length is its shape's product")
    }
}

impl Tensor {
    /// The values as an array view, if `T` is the element of this tensor's storage (as
    /// [`Tensor::values`]).
    pub fn view<T: Scalar>(&self) -> Option<ArrayViewD<'_, T>> {
        ArrayViewD::from_shape(IxDyn(self.shape()), self.values::<T>()?).ok()
    }

    /// The values as an owned array, without a copy when the tensor owns them alone; `Err`
    /// gives the tensor back when `T` is not the element of its storage.
    pub fn into_array<T: Scalar>(self) -> Result<ArrayD<T>, Tensor> {
        if self.values::<T>().is_none() {
            return Err(self);
        }
        let (_, shape, storage) = self.into_parts();
        let values = T::unwrap(storage).unwrap_or_else(|_| unreachable!("type checked above"));
        Ok(ArrayD::from_shape_vec(IxDyn(&shape), values)
            .expect("a tensor's length is its shape's product"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{arr2, Array3, Axis, Slice};

    #[test]
    fn a_standard_layout_array_is_taken_without_a_copy() {
        let a = Array3::<f32>::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 12 + j * 4 + k) as f32);
        let ptr = a.as_ptr();
        let t = Tensor::from(a);
        assert_eq!(t.shape(), &[2, 3, 4]);
        assert_eq!(t.values::<f32>().unwrap().as_ptr(), ptr);
        assert_eq!(t.values::<f32>().unwrap()[23], 23.0);
    }

    #[test]
    fn transposed_and_sliced_arrays_are_copied_in_logical_order() {
        let a = arr2(&[[1i32, 2, 3], [4, 5, 6]]);
        let t = Tensor::from(a.clone().reversed_axes());
        assert_eq!(t.shape(), &[3, 2]);
        assert_eq!(t.values::<i32>().unwrap(), &[1, 4, 2, 5, 3, 6]);
        let row = a.slice_axis_move(Axis(0), Slice::from(1..));
        let t = Tensor::from(row);
        assert_eq!(t.shape(), &[1, 3]);
        assert_eq!(t.values::<i32>().unwrap(), &[4, 5, 6]);
    }

    #[test]
    fn views_and_owned_arrays_come_back_with_the_shape() {
        let t = Tensor::from_i64(vec![2, 2], vec![1, 2, 3, 4]).unwrap();
        let v = t.view::<i64>().unwrap();
        assert_eq!(v[[1, 0]], 3);
        assert!(t.view::<f32>().is_none());
        let a = t.clone().into_array::<i64>().unwrap();
        assert_eq!(a, arr2(&[[1i64, 2], [3, 4]]).into_dyn());
        assert!(t.into_array::<u8>().is_err());
    }
}
