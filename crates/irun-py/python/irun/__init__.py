"""irun: run and validate OpenVINO IR models without the OpenVINO runtime.

    import numpy as np, irun
    model = irun.Model("model.xml")            # reads and validates; raises irun.InvalidModel
    compiled = model.compile(threads=2)
    outputs = compiled({"x": np.zeros((1, 3), np.float32)})   # dict of numpy arrays

``irun.check(path)`` lists every diagnostic of a model file without raising for errors.
A stateful model carries its variables between calls in ``compiled.create_state()``,
passed as ``compiled(inputs, state=state)``. An LLM exported by optimum-intel generates
with ``compiled.generate(prompt_ids, max_new_tokens, irun.end_tokens(model_dir))``.
"""

from ._native import (
    CompiledModel,
    Diagnostic,
    Error,
    InvalidModel,
    Model,
    Port,
    RunError,
    State,
    __version__,
    check,
    end_tokens,
)

__all__ = [
    "CompiledModel",
    "Diagnostic",
    "Error",
    "InvalidModel",
    "Model",
    "Port",
    "RunError",
    "State",
    "__version__",
    "check",
    "end_tokens",
]
