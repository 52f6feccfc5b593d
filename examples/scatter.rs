//! Open a bundled ScatterElementsUpdate-12 model (reduction mean, use_init_val=false, i32),
//! compile it for two threads and run it on tensors built in Rust.
//!
//! ```sh
//! cargo run --release --example scatter
//! ```

use irun::{Model, Options, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/scatter/seu12_mean_floor_negative/model.xml"
    );
    let model = Model::open(path)?;
    let exe = model.compile(&Options::new().threads(2))?;
    for input in exe.inputs() {
        println!(
            "input  {}: {} {}",
            input.layer_name, input.element_type, input.shape
        );
    }
    // data[indices[i]] gets the mean of its updates (integer mean rounds toward -inf).
    let inputs = [
        ("data", Tensor::from_i32(vec![4], vec![0, 0, 0, 10])?),
        (
            "indices",
            Tensor::from_i64(vec![7], vec![0, 0, 1, 1, 2, 2, 2])?,
        ),
        (
            "updates",
            Tensor::from_i32(vec![7], vec![-1, -2, 1, 2, -5, -5, -6])?,
        ),
    ];
    for (name, out) in exe.run(inputs)? {
        println!("output {name}: {:?} = [{}]", out.shape(), out.preview(8));
    }
    Ok(())
}
