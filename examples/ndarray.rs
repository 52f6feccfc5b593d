//! Run the bundled graph convolution (torch_geometric's GCNConv, converted by OpenVINO) on
//! ndarray arrays, and get its output back as one.
//!
//! ```sh
//! cargo run --release --features ndarray --example ndarray
//! ```

use irun::{Model, Options, Tensor};
use ndarray::{Array2, ArrayD, Axis};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/converted/torch_gcn/model.xml"
    );
    let exe = Model::open(path)?.compile(&Options::new().threads(2))?;

    // 10 nodes with 16 features each; 40 directed edges of a ring where each node links to
    // its two neighbours on both sides.
    let x = Array2::<f32>::from_shape_fn((10, 16), |(n, f)| ((n * 16 + f) % 7) as f32 - 3.0);
    let edge_index = Array2::<i64>::from_shape_fn((2, 40), |(row, e)| {
        let (node, step) = ((e / 4) as i64, [1, 2, -1, -2][e % 4]);
        if row == 0 {
            node
        } else {
            (node + step).rem_euclid(10)
        }
    });
    // Arrays in standard layout become tensors without a copy.
    let outputs = exe.run([
        ("x", Tensor::from(x)),
        ("edge_index", Tensor::from(edge_index)),
    ])?;

    for (name, tensor) in outputs {
        let out: ArrayD<f32> = tensor
            .into_array::<f32>()
            .map_err(|t| format!("{name} is {}, not f32", t.element_type()))?;
        let first = out.index_axis(Axis(0), 0);
        println!("{name}: shape {:?}, first row {first:.3}", out.shape());
    }
    Ok(())
}
