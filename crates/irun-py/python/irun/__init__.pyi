"""Type stubs of the irun package (its native module, irun._native)."""

from os import PathLike
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

__version__: str

_Path = Union[str, PathLike[str]]
_Inputs = Union[Mapping[str, Any], Sequence[Any]]

class Error(Exception):
    """Base class of irun's errors."""

class InvalidModel(Error):
    """The model file cannot be read or has errors."""

    diagnostics: List[Diagnostic]

class RunError(Error):
    """Compiling or running failed: inputs that do not fit, an op that rejects its values."""

    code: Optional[str]

class Diagnostic:
    """One problem found in a model, with where it is."""

    @property
    def code(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def line(self) -> Optional[int]: ...
    @property
    def layer_id(self) -> Optional[int]: ...
    @property
    def layer(self) -> Optional[str]: ...
    @property
    def layer_type(self) -> Optional[str]: ...
    @property
    def port(self) -> Optional[str]: ...
    @property
    def inside(self) -> List[str]: ...
    @property
    def notes(self) -> List[str]: ...
    def render(self, file: str) -> str: ...

class Port:
    """A model input or output."""

    @property
    def name(self) -> str: ...
    @property
    def names(self) -> List[str]: ...
    @property
    def shape(self) -> Optional[List[Optional[int]]]: ...
    @property
    def dtype(self) -> str: ...

class State:
    """The variables of a stateful model between calls."""

    @property
    def variables(self) -> List[str]: ...
    def get(self, id: str) -> Optional[np.ndarray]: ...
    def set(self, id: str, value: Any) -> None: ...
    def reset(self, id: Optional[str] = None) -> None: ...

class CompiledModel:
    """A model planned for a number of threads; call it with inputs."""

    @property
    def inputs(self) -> List[Port]: ...
    @property
    def outputs(self) -> List[Port]: ...
    @property
    def threads(self) -> int: ...
    def create_state(self) -> State: ...
    def __call__(
        self, inputs: _Inputs, state: Optional[State] = None
    ) -> Dict[str, np.ndarray]: ...
    def generate(
        self,
        prompt_ids: Sequence[int],
        max_new_tokens: int = 32,
        end_tokens: Optional[Sequence[int]] = None,
        on_token: Optional[Callable[[int], Optional[bool]]] = None,
    ) -> Dict[str, Any]: ...

class Model:
    """A model read from model.xml (and its .bin) and validated."""

    def __init__(self, path: _Path, weights: Optional[_Path] = None) -> None: ...
    def check(self) -> List[Diagnostic]: ...
    @property
    def info(self) -> Dict[str, Any]: ...
    def compile(
        self, threads: Optional[int] = None, memory_limit: Optional[int] = None
    ) -> CompiledModel: ...

def check(path: _Path) -> List[Diagnostic]: ...
def end_tokens(model_dir: _Path) -> List[int]: ...
