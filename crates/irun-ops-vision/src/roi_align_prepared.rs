//! ROIAlign prepared: f32 `avg`, the one form that reads its image channel-last anyway,
//! takes it so from a kernel that can write it so (a convolution before it), and the copy
//! never happens ([`Prepared::set_channels_last_input`]).

use irun_tensor::ElementType;

use crate::fact::Fact;
use crate::op::{OpError, Prepared, Value};
use crate::roi_align::RoiAlign;

impl RoiAlign {
    /// [`crate::op::Op::prepare`]: the f32 `avg` op, ready to read its image channel-last.
    pub(crate) fn prepared(&self, inputs: &[Fact]) -> Option<Box<dyn Prepared>> {
        (!self.max && inputs.first()?.ty == ElementType::F32).then(|| {
            Box::new(ChannelsLastRoiAlign {
                op: self.clone(),
                channels_last: false,
            }) as Box<dyn Prepared>
        })
    }
}

/// ROIAlign as prepared: the op itself, or with its image `[N, H, W, C]`.
#[derive(Debug)]
struct ChannelsLastRoiAlign {
    op: RoiAlign,
    channels_last: bool,
}

impl Prepared for ChannelsLastRoiAlign {
    fn eval(&self, inputs: Vec<Value>) -> Result<Vec<Value>, OpError> {
        self.op.eval_laid_out(inputs, self.channels_last)
    }

    fn byte_size(&self) -> usize {
        0
    }

    /// The image (input 0) only.
    fn set_channels_last_input(&mut self, slot: usize) -> bool {
        if slot != 0 {
            return false;
        }
        self.channels_last = true;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use irun_opkit::testing::eval1;
    use irun_opkit::testing::prelude::*;
    use irun_tensor::Tensor;

    use crate::op::codes;
    use crate::op::Value;
    use crate::roi_align::tests::op;
    use crate::roi_align::{Aligned, RoiAlign};

    /// Prepared and told its image comes channel-last, f32 `avg` gives the op's bits on the
    /// planar image (37 channels: two groups and 5 alone; boxes across the edge, both batch
    /// items, 1 and 2 threads); untold, the op's output; `max` and other types are not
    /// prepared, and a channel-last image of another type is an error, not a misreading.
    #[test]
    fn reads_a_channel_last_image_as_the_planar_one() {
        let (n, c, h, w) = (2, 37, 7, 10);
        let values: Vec<f32> = (0..n * c * h * w)
            .map(|i| ((i * 31 % 89) as f32 - 44.0) * 0.21)
            .collect();
        let last = irun_opkit::testing::moved_channels_last(&values, c, h * w);
        let boxes = f32s(
            &[3, 4],
            &[
                1.0, 1.0, 6.5, 5.0, -3.0, 2.0, 14.0, 12.0, 2.25, 0.5, 2.75, 8.0,
            ],
        );
        let batch = i64s(&[3], &[1, 0, 1]);
        let avg = RoiAlign {
            sampling_ratio: 0,
            spatial_scale: 0.75,
            ..op(false, Aligned::HalfPixel)
        };
        let planar = vec![f32s(&[n, c, h, w], &values), boxes.clone(), batch.clone()];
        let want = eval1(&avg, planar.clone()).unwrap();
        let planar: Vec<Value> = planar.into_iter().map(Arc::new).collect();
        let mut kernel =
            irun_opkit::testing::prepare(&avg, &planar, &[false; 3]).expect("prepared");
        let as_op = kernel.eval(planar.clone()).unwrap().remove(0);
        assert_eq!(format!("{as_op:?}"), format!("{want:?}"));
        assert!(!kernel.set_channels_last_input(1));
        assert!(kernel.set_channels_last_input(0));
        // Refused for another input, and the image's hand-over kept.
        assert!(!kernel.set_channels_last_input(1));
        let moved: Vec<Value> = vec![
            Arc::new(f32s(&[n, h, w, c], &last)),
            Arc::new(boxes),
            Arc::new(batch),
        ];
        for threads in [1, 2] {
            let got = irun_opkit::testing::on_threads(threads, || kernel.eval(moved.clone()));
            let got = got.unwrap().remove(0);
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{threads} threads");
        }
        let f64s = planar
            .iter()
            .map(|v| Arc::new(v.as_ref().clone()))
            .collect::<Vec<_>>();
        let wide = Arc::new(Tensor::from_f64(vec![n, h, w, c], vec![0.5; last.len()]).unwrap());
        let err = kernel
            .eval(vec![wide, f64s[1].clone(), f64s[2].clone()])
            .unwrap_err();
        assert_eq!(err.code, codes::INTERNAL);
        let maxima = op(true, Aligned::HalfPixel);
        assert!(irun_opkit::testing::prepare(&maxima, &planar, &[false; 3]).is_none());
    }
}
