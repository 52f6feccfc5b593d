"""irun: run and validate OpenVINO IR models without the OpenVINO runtime.

    import numpy as np, irun
    model = irun.Model("model.xml")            # reads and validates; raises irun.InvalidModel
    compiled = model.compile(threads=2)
    outputs = compiled({"x": np.zeros((1, 3), np.float32)})   # dict of numpy arrays

``irun.check(path)`` lists every diagnostic of a model file without raising for errors.
A stateful model carries its variables between calls in ``compiled.create_state()``,
passed as ``compiled(inputs, state=state)``.
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
]
