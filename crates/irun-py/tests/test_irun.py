"""The Python package against the repository's golden files (written by OpenVINO or an
independent numpy reference, never by irun): every bundled converted and op model, a
stateful KV cache step by step, bf16 through ml_dtypes, and the errors."""

import json
import pathlib

import numpy as np
import pytest

import irun

MODELS = pathlib.Path(__file__).resolve().parents[3] / "models"


def listed(family):
    """The golden cases a family's manifest lists (the Rust tests replay the same ones)."""
    manifest = json.loads((MODELS / family / "manifest.json").read_text())
    return [MODELS / family / name for name in manifest["goldens"]]


def npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def assert_close(got, want, what):
    assert got.shape == want.shape, what
    assert got.dtype == want.dtype, what
    if np.issubdtype(want.dtype, np.floating):
        # OpenVINO's vectorised exp/erf/tanh differ from libm in the last bits.
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("case", listed("converted") + listed("ops"), ids=lambda p: p.name)
def test_bundled_models_match_their_goldens(case):
    compiled = irun.Model(case / "model.xml").compile(threads=2)
    outputs = compiled(npz(case / "inputs.npz"))
    want = npz(case / "expected.npz")
    assert list(outputs) == list(want)
    for key, value in want.items():
        assert_close(outputs[key], value, f"{case.name}: {key}")


def test_inputs_as_a_list_in_model_order_and_any_layout():
    case = MODELS / "converted" / "torch_gcn"
    compiled = irun.Model(case / "model.xml").compile()
    inputs = npz(case / "inputs.npz")
    by_name = compiled(inputs)["out"]
    ordered = [inputs[p.name] for p in compiled.inputs]
    assert np.array_equal(compiled(ordered)["out"], by_name)
    # A transposed (not C-contiguous) array is read in logical order.
    x = np.ascontiguousarray(inputs["x"].T).T
    assert not x.flags.c_contiguous
    assert np.array_equal(compiled({**inputs, "x": x})["out"], by_name)
    # Outputs are numpy arrays the caller owns: changing one changes no later result.
    first = compiled(inputs)["out"]
    first[...] = 0
    assert np.array_equal(compiled(inputs)["out"], by_name)


def test_ports_describe_names_shapes_and_types():
    compiled = irun.Model(MODELS / "converted" / "torch_gcn" / "model.xml").compile(threads=1)
    assert [p.name for p in compiled.inputs] == ["x", "edge_index"]
    assert [p.dtype for p in compiled.inputs] == ["float32", "int64"]
    assert compiled.inputs[0].shape == [None, None]
    assert [p.name for p in compiled.outputs] == ["out"]
    assert compiled.threads == 1


def test_a_state_carries_a_kv_cache_from_call_to_call():
    case = MODELS / "stateful" / "kv_cache"
    compiled = irun.Model(case / "model.xml").compile(threads=2)
    state = compiled.create_state()
    assert sorted(state.variables) == ["k_cache", "steps", "v_cache"]
    assert state.get("k_cache") is None
    for step in range(4):
        got = compiled(npz(case / f"step{step}_inputs.npz"), state=state)
        for key, value in npz(case / f"step{step}_expected.npz").items():
            assert_close(got[key], value, f"step {step}: {key}")
    for key, value in npz(case / "state_expected.npz").items():
        assert_close(state.get(key), value, f"state {key}")
    # Without a state every call is a first step.
    again = compiled(npz(case / "step0_inputs.npz"))
    assert_close(again["out"], npz(case / "step0_expected.npz")["out"], "stateless")
    # set() and reset(): a value of the wrong shape is refused.
    steps = state.get("steps")
    with pytest.raises(irun.RunError):
        state.set("steps", np.zeros((2,), np.int32))
    state.set("steps", steps)
    assert np.array_equal(state.get("steps"), steps)
    state.reset()
    assert state.get("steps") is None


def test_bf16_comes_and_goes_as_ml_dtypes_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    case = MODELS / "scatter" / "seu12_max_noinit_bf16_i64_r1"
    compiled = irun.Model(case / "model.xml").compile()
    # The golden files hold bf16 as 2-byte void values (numpy has no bf16 type).
    as_bf16 = lambda a: a.view(np.uint16).view(ml_dtypes.bfloat16) if a.dtype.kind == "V" else a
    inputs = {k: as_bf16(v) for k, v in npz(case / "inputs.npz").items()}
    (key, got), = compiled(inputs).items()
    want = as_bf16(npz(case / "expected.npz")[key])
    assert got.dtype == ml_dtypes.bfloat16
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_an_invalid_model_raises_with_its_diagnostics():
    xml = MODELS / "check" / "su3_static_constaxis__axis_range" / "model.xml"
    with pytest.raises(irun.InvalidModel) as caught:
        irun.Model(xml)
    (d,) = caught.value.diagnostics
    assert (d.code, d.severity, d.line, d.layer, d.layer_type) == (
        "E0504", "error", 48, "scatter", "ScatterUpdate-opset3")
    assert d.port == "input 3 (port id 3)"
    assert "Axis 5 out of the tensor rank range" in d.message
    # The text is what `irun check` prints.
    assert f"{xml}: invalid model: 1 error(s)" in str(caught.value)
    assert f"--> {xml}:48:5" in str(caught.value)
    assert isinstance(caught.value, irun.Error)
    assert [x.code for x in irun.check(xml)] == ["E0504"]


def test_unreadable_files_and_bad_inputs_raise():
    with pytest.raises(irun.InvalidModel, match="E0101"):
        irun.Model(MODELS / "no_such_model.xml")
    compiled = irun.Model(MODELS / "converted" / "torch_gcn" / "model.xml").compile()
    inputs = npz(MODELS / "converted" / "torch_gcn" / "inputs.npz")
    with pytest.raises(irun.RunError, match="missing model input"):
        compiled({"x": inputs["x"]})
    with pytest.raises(irun.RunError, match="2 input"):
        compiled([inputs["x"]])
    with pytest.raises(irun.RunError):
        compiled({**inputs, "x": inputs["x"].astype(np.float64)})
    with pytest.raises(TypeError):
        compiled(42)


def test_the_readme_example_runs(capsys, monkeypatch):
    """The README's Python example, as a new user would paste it, from the repository root."""
    readme = (MODELS.parent / "README.md").read_text()
    example = readme.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(MODELS.parent)
    exec(compile(example, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    want = npz(MODELS / "converted" / "torch_gcn" / "expected.npz")["out"]
    assert f"{want[0, 0]:.4f}"[:6] in printed, printed


def test_bf16_without_ml_dtypes_travels_as_bits_with_a_warning(monkeypatch):
    import sys
    case = MODELS / "scatter" / "seu12_max_noinit_bf16_i64_r1"
    compiled = irun.Model(case / "model.xml").compile()
    # As `irun run` does, 2-byte void arrays ('<V2', how the golden files store bf16) are
    # read as bf16 bits; without ml_dtypes the output comes back as uint16 bits.
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.warns(UserWarning, match="install ml_dtypes"):
        (key, got), = compiled(npz(case / "inputs.npz")).items()
    assert got.dtype == np.uint16
    want = npz(case / "expected.npz")[key]
    assert np.array_equal(got, want.view(np.uint16))


def test_an_llm_generates_openvinos_greedy_tokens_and_streams_them():
    d = MODELS / "llm" / "llama_int4_asym"
    golden = np.load(d / "expected.npz")
    compiled = irun.Model(d / "openvino_model.xml").compile(threads=2)
    assert irun.end_tokens(d) == [2]
    seen = []
    done = compiled.generate(
        golden["prompt_ids"].tolist(), len(golden["tokens"]), irun.end_tokens(d), seen.append
    )
    assert done["tokens"] == golden["tokens"].tolist() == seen
    assert done["prefill_ms"] > 0 and len(done["step_ms"]) == len(seen) - 1
    # Returning False stops; an exception in the callback propagates.
    assert compiled.generate([1, 2, 3], 8, on_token=lambda t: False)["tokens"] != []
    assert len(compiled.generate([1, 2, 3], 8, on_token=lambda t: False)["tokens"]) == 1

    def boom(token):
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        compiled.generate([1, 2, 3], 8, on_token=boom)
    gcn = irun.Model(MODELS / "converted" / "torch_gcn" / "model.xml").compile()
    with pytest.raises(irun.RunError, match="not a decoder export"):
        gcn.generate([1])
