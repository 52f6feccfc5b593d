"""OpenVINO CPU's outputs for a model's inputs, as the golden files record them: f32 inference
precision, keyed by the names of the model as written (compiling may move names between
tensors, as when the CPU plugin fuses a Reshape away), matched by position, `output_<i>` for
an output without a name. Shared by tools/convert_real_models.py and tools/compress_weights.py.
"""
import numpy as np
import openvino as ov


def openvino_expected(xml, inputs):
    core = ov.Core()
    compiled = core.compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled(inputs)
    expected = {}
    for i, (o, written) in enumerate(zip(compiled.outputs, core.read_model(xml).outputs)):
        names = sorted(written.get_names())
        expected[names[0] if names else f"output_{i}"] = np.asarray(result[o])
    return expected
