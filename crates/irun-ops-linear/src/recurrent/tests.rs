//! What the family's ops share, tested mostly through RNN (the simplest cell): where steps
//! land, lengths, clip, empty dims, shapes, attributes, half floats.

use std::path::Path;

use irun_ir::{IrModel, Weights};

use super::*;
use crate::testing::prelude::*;
use crate::testing::{eval_all, fact};

/// The op `build` makes of a layer with these `<data>` attributes, read as irun reads IR.
pub(crate) fn built(
    build: fn(&AttrReader) -> Result<Box<dyn Op>, OpError>,
    data: &str,
) -> Result<Box<dyn Op>, OpError> {
    let xml = format!(
        "<?xml version=\"1.0\"?>\n<net name=\"t\" version=\"11\"><layers>\
         <layer id=\"0\" name=\"r\" type=\"T\" version=\"opset5\"><data {data}/></layer>\
         </layers><edges/></net>"
    );
    let model = IrModel::parse(&xml, Path::new("t.xml"), Weights::empty(Path::new("t.bin")))
        .expect("well-formed");
    build(&AttrReader::new(&model.layers[0]))
}

/// The logistic function, as the spec writes it.
pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// An op of `kind` with its default activations.
pub(crate) fn op(kind: Kind, hidden: usize, direction: Direction, cell: bool) -> Recurrent {
    Recurrent {
        name: "test",
        kind,
        hidden_size: hidden,
        activations: kind.default_activations().to_vec(),
        clip: 0.0,
        direction,
        cell,
    }
}

/// `h_t = relu(x_t + h_{t-1})` (W = R = 1, B = 0, hidden 1): a running sum, so where
/// each step lands and what each state is can be read off by hand.
fn running_sum(direction: Direction, lengths: &[i32]) -> Vec<Tensor> {
    let dirs = direction.count();
    let mut rnn = op(Kind::Rnn, 1, direction, false);
    rnn.activations = vec![Activation::Relu];
    let x = f32s(&[3, 3, 1], &[1., 2., 4., 10., 20., 40., 100., 200., 400.]);
    let h0 = f32s(&[3, dirs, 1], &vec![0.5; 3 * dirs]);
    let ones = vec![1.0; dirs];
    eval_all(
        &rnn,
        vec![
            x,
            h0,
            i32s(&[3], lengths),
            f32s(&[dirs, 1, 1], &ones),
            f32s(&[dirs, 1, 1], &ones),
            f32s(&[dirs, 1], &vec![0.0; dirs]),
        ],
    )
    .unwrap()
}

#[test]
fn steps_land_where_their_direction_and_length_put_them() {
    let out = running_sum(Direction::Forward, &[3, 2, 0]);
    assert_eq!(
        out[0].values::<f32>().unwrap(),
        &[1.5, 3.5, 7.5, 10.5, 30.5, 0., 0., 0., 0.]
    );
    assert_eq!(
        out[1].values::<f32>().unwrap(),
        &[7.5, 30.5, 0.],
        "a length of 0 leaves a zero state"
    );
    // Reverse: each sequence read from its last valid position back to its first.
    let out = running_sum(Direction::Reverse, &[3, 2, 0]);
    assert_eq!(
        out[0].values::<f32>().unwrap(),
        &[7.5, 6.5, 4.5, 30.5, 20.5, 0., 0., 0., 0.]
    );
    assert_eq!(out[1].values::<f32>().unwrap(), &[7.5, 30.5, 0.]);
    // Both: Y [batch, 2, steps, 1], the forward pass first.
    let out = running_sum(Direction::Bidirectional, &[3, 1, 2]);
    assert_eq!(
        out[0].values::<f32>().unwrap(),
        &[
            1.5, 3.5, 7.5, 7.5, 6.5, 4.5, //
            10.5, 0., 0., 10.5, 0., 0., //
            100.5, 300.5, 0., 300.5, 200.5, 0.
        ]
    );
    assert_eq!(
        out[1].values::<f32>().unwrap(),
        &[7.5, 7.5, 10.5, 10.5, 300.5, 300.5]
    );
}

#[test]
fn lengths_beyond_the_sequence_are_run_errors() {
    let mut rnn = op(Kind::Rnn, 1, Direction::Forward, false);
    rnn.activations = vec![Activation::Relu];
    for bad in [4, -1] {
        let e = eval_all(
            &rnn,
            vec![
                f32s(&[1, 3, 1], &[1., 2., 3.]),
                f32s(&[1, 1, 1], &[0.]),
                i64s(&[1], &[bad]),
                f32s(&[1, 1, 1], &[1.]),
                f32s(&[1, 1, 1], &[1.]),
                f32s(&[1, 1], &[0.]),
            ],
        )
        .unwrap_err();
        assert_eq!(e.code, codes::RUN_VALUE);
        assert_eq!(
            e.message,
            format!("test: sequence length {bad} of batch element 0 is outside [0, 3]")
        );
    }
}

/// Empty batch, sequence or input: no panic, empty outputs, and without inputs the
/// gates are `h R^T + B` alone.
#[test]
fn empty_dims_run() {
    let mut rnn = op(Kind::Rnn, 1, Direction::Forward, false);
    rnn.activations = vec![Activation::Relu];
    let run = |b: usize, t: usize, i: usize, lengths: &[i64]| {
        eval_all(
            &rnn,
            vec![
                f32s(&[b, t, i], &vec![1.0; b * t * i]),
                f32s(&[b, 1, 1], &vec![2.0; b]),
                i64s(&[b], lengths),
                f32s(&[1, 1, i], &vec![1.0; i]),
                f32s(&[1, 1, 1], &[3.0]),
                f32s(&[1, 1], &[0.5]),
            ],
        )
        .unwrap()
    };
    let out = run(2, 2, 0, &[2, 1]);
    assert_eq!(out[0].values::<f32>().unwrap(), &[6.5, 20.0, 6.5, 0.0]);
    assert_eq!(out[1].values::<f32>().unwrap(), &[20.0, 6.5]);
    let out = run(2, 0, 3, &[0, 0]);
    assert_eq!(out[0].shape(), &[2, 1, 0, 1]);
    assert_eq!(out[1].values::<f32>().unwrap(), &[0.0, 0.0]);
    let out = run(0, 4, 3, &[]);
    assert_eq!(
        (out[0].shape(), out[1].shape()),
        (&[0, 1, 4, 1][..], &[0, 1, 1][..])
    );
}

#[test]
fn clip_bounds_every_gate_input() {
    let mut rnn = op(Kind::Rnn, 1, Direction::Forward, true);
    rnn.activations = vec![Activation::Relu];
    rnn.clip = 2.5;
    let out = eval_all(
        &rnn,
        vec![
            f32s(&[2, 1], &[10., -10.]),
            f32s(&[2, 1], &[1., 1.]),
            f32s(&[1, 1], &[1.]),
            f32s(&[1, 1], &[0.5]),
            f32s(&[1], &[0.25]),
        ],
    )
    .unwrap();
    assert_eq!(out[0].values::<f32>().unwrap(), &[2.5, 0.]);
}

#[test]
fn facts_follow_the_batch_steps_and_directions() {
    let lstm = op(Kind::Lstm, 4, Direction::Bidirectional, false);
    let facts = lstm
        .facts(&[
            fact(F32, "?,7,5"),
            fact(F32, "2,2,4"),
            fact(F32, "?,2,4"),
            fact(I32, "?"),
            fact(F32, "2,16,5"),
            fact(F32, "2,16,4"),
            fact(F32, "2,16"),
        ])
        .unwrap();
    let shapes: Vec<std::string::String> = facts.iter().map(|f| f.shape.to_string()).collect();
    assert_eq!(shapes, ["[2,2,7,4]", "[2,2,4]", "[2,2,4]"]);
    let gru = op(
        Kind::Gru {
            linear_before_reset: true,
        },
        3,
        Direction::Forward,
        true,
    );
    let facts = gru
        .facts(&[
            fact(F16, "4,5"),
            fact(F16, "4,3"),
            fact(F16, "9,5"),
            fact(F16, "9,3"),
            fact(F16, "12"),
        ])
        .unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].shape.to_string(), "[4,3]");
    assert_eq!(facts[0].ty, F16);
}

#[test]
fn shape_errors_name_the_input_and_the_rule() {
    let rnn = op(Kind::Rnn, 3, Direction::Bidirectional, false);
    let ok = [
        fact(F32, "2,7,5"),
        fact(F32, "2,2,3"),
        fact(I64, "2"),
        fact(F32, "2,3,5"),
        fact(F32, "2,3,3"),
        fact(F32, "2,3"),
    ];
    assert!(rnn.facts(&ok).is_ok());
    let with = |slot: usize, f: Fact| {
        let mut v = ok.to_vec();
        v[slot] = f;
        rnn.facts(&v).unwrap_err()
    };
    let e = with(1, fact(F32, "2,1,3"));
    assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(1)));
    assert_eq!(
        e.message,
        "test: input 1 [2,1,3] must have directions = 2 (direction Bidirectional)"
    );
    let e = with(3, fact(F32, "2,4,5"));
    assert_eq!(
        e.message,
        "test: input 3 [2,4,5] must have gates x hidden_size = 3 (1 x 3)"
    );
    let e = with(4, fact(F32, "2,3,4"));
    assert!(e.message.contains("hidden_size = 3"), "{}", e.message);
    let e = with(3, fact(F32, "2,3,6"));
    assert_eq!((e.code, e.port.map(|p| p.1)), (codes::SHAPE, Some(3)));
    assert!(e.message.contains("input size"), "{}", e.message);
    let e = with(2, fact(I64, "3"));
    assert!(e.message.contains("batch size"), "{}", e.message);
    assert_eq!(with(2, fact(F32, "2")).code, codes::ELEMENT_TYPE);
    assert_eq!(with(5, fact(F64, "2,3")).code, codes::ELEMENT_TYPE);
    assert_eq!(with(0, fact(F32, "2,7")).code, codes::RANK);
    let e = rnn.facts(&ok[..5]).unwrap_err();
    assert_eq!(e.code, codes::ARITY);
}

#[test]
fn attributes_are_read_strictly() {
    let lstm = lstm_sequence::build;
    let op = built(
        lstm,
        "hidden_size=\"2\" direction=\"REVERSE\" activations=\"Sigmoid, relu, tanh\" \
         activations_alpha=\"\" activations_beta=\"\" clip=\"0.5\"",
    )
    .unwrap();
    assert_eq!(op.name(), "LSTMSequence-5");
    let text = format!("{op:?}");
    assert!(text.contains("Reverse") && text.contains("Relu") && text.contains("0.5"));
    for (data, attribute) in [
        ("direction=\"forward\"", "hidden_size"),
        ("hidden_size=\"0\"", "hidden_size"),
        (
            "hidden_size=\"2\" activations=\"sigmoid,tanh\"",
            "activations",
        ),
        (
            "hidden_size=\"2\" activations=\"sigmoid,softsign,tanh\"",
            "activations",
        ),
        ("hidden_size=\"2\" clip=\"-1\"", "clip"),
        ("hidden_size=\"2\" direction=\"sideways\"", "direction"),
        (
            "hidden_size=\"2\" activations_alpha=\"a\"",
            "activations_alpha",
        ),
    ] {
        let e = built(lstm, data).unwrap_err();
        assert_eq!(
            e.attribute.as_deref(),
            Some(attribute),
            "{data}: {}",
            e.message
        );
    }
}

/// f16 runs in f32 and rounds once: the same as f32 on the f16 values, rounded.
#[test]
fn half_floats_round_once() {
    let gru = op(
        Kind::Gru {
            linear_before_reset: false,
        },
        2,
        Direction::Forward,
        true,
    );
    let vals = |n: usize, seed: usize| -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 37 + seed) % 17) as f32 / 8.0 - 1.0)
            .collect()
    };
    let shapes: [&[usize]; 5] = [&[3, 4], &[3, 2], &[6, 4], &[6, 2], &[6]];
    let wide: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| f32s(s, &vals(s.iter().product(), k)))
        .collect();
    let half: Vec<Tensor> = wide
        .iter()
        .map(|t| {
            let v: Vec<half::f16> = t
                .values::<f32>()
                .unwrap()
                .iter()
                .map(|&x| half::f16::from_f32(x))
                .collect();
            f16s(t.shape(), &v)
        })
        .collect();
    let want: Vec<half::f16> = eval_all(&gru, wide).unwrap()[0]
        .values::<f32>()
        .unwrap()
        .iter()
        .map(|&x| half::f16::from_f32(x))
        .collect();
    let got = eval_all(&gru, half).unwrap();
    assert_eq!(got[0].values::<half::f16>().unwrap(), &want[..]);
}

/// Weights prepared when the model is compiled give the run's results bit for bit, for the
/// batch they were prepared for and for another one (which the run prepares afresh).
#[test]
fn prepared_weights_give_the_same_bits() {
    let kinds = [
        (Kind::Lstm, Direction::Bidirectional),
        (
            Kind::Gru {
                linear_before_reset: false,
            },
            Direction::Forward,
        ),
    ];
    let (steps, input, hidden) = (3, 5, 4);
    let vals = |n: usize, seed: usize| -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 31 + seed * 17) % 37) as f32 / 18.0 - 1.0)
            .collect()
    };
    for (kind, direction) in kinds {
        let op = op(kind, hidden, direction, false);
        let dirs = direction.count();
        let rows = kind.gates() * hidden;
        let inputs = |batch: usize| -> Vec<Tensor> {
            let mut v = vec![
                f32s(&[batch, steps, input], &vals(batch * steps * input, 1)),
                f32s(&[batch, dirs, hidden], &vals(batch * dirs * hidden, 2)),
            ];
            if kind == Kind::Lstm {
                v.push(f32s(
                    &[batch, dirs, hidden],
                    &vals(batch * dirs * hidden, 3),
                ));
            }
            let lengths: Vec<i32> = (0..batch).map(|b| (steps - b % 2) as i32).collect();
            v.push(i32s(&[batch], &lengths));
            v.push(f32s(&[dirs, rows, input], &vals(dirs * rows * input, 4)));
            v.push(f32s(&[dirs, rows, hidden], &vals(dirs * rows * hidden, 5)));
            v.push(f32s(&[dirs, rows], &vals(dirs * rows, 6)));
            v
        };
        for (compiled, run) in [(1, 1), (3, 3), (1, 3), (3, 1)] {
            let at_compile = inputs(compiled);
            let facts: Vec<Fact> = at_compile
                .iter()
                .map(|t| Fact::of_static(t.element_type(), t.shape()))
                .collect();
            let w = at_compile.len() - 3;
            let constants: Vec<Option<Value>> = (0..at_compile.len())
                .map(|j| (j == w || j == w + 1).then(|| Arc::new(at_compile[j].clone())))
                .collect();
            let kernel = op
                .prepare(&facts, &constants)
                .expect("f32 constants prepare");
            let values: Vec<Value> = inputs(run).into_iter().map(Arc::new).collect();
            let prepared = kernel.eval(values.clone()).unwrap();
            let plain = op.eval(values).unwrap();
            for (p, q) in prepared.iter().zip(&plain) {
                crate::testing::assert_same_bits(
                    p.values::<f32>().unwrap(),
                    q.values::<f32>().unwrap(),
                    format!("{kind:?}, prepared for batch {compiled}, run on {run}"),
                );
            }
        }
    }
}
