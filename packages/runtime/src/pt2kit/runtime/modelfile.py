"""Loading a model file: module-level ``model`` and ``example_inputs``, or ``FILE.py:NAME``.

``FILE.py:NAME`` names a zero-argument function in the file that returns ``(model, example_inputs)``.
``example_inputs`` is a tuple (or list) of positional arguments, or a dict of keyword arguments; a
single tensor is taken as a one-element tuple. Every way a file can be wrong is a
:class:`ModelFileError`: one line, exit 2.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ModelFileError
from .pyfile import _user_line, exec_file, parse_spec
from .pyfile import backend_callable as backend_callable  # kdiff and minify import it from here
from .torchapi import tree_map

NEEDS = "a model file defines module-level `model` and `example_inputs`, or is given as FILE.py:NAME"


@dataclass
class LoadedModel:
    model: Any
    inputs: tuple[Any, ...] | dict[str, Any]
    file: Path
    entry: str | None
    label: str

    @property
    def kwargs(self) -> bool:
        return isinstance(self.inputs, dict)

    def call(self, fn: Any = None, inputs: Any = None) -> Any:
        """Call ``fn`` (default: the model) with the example inputs."""
        fn = self.model if fn is None else fn
        inputs = self.inputs if inputs is None else inputs
        return fn(**inputs) if isinstance(inputs, dict) else fn(*inputs)


def label_of(path: Path, entry: str | None) -> str:
    return f"{path.name}:{entry}" if entry else path.name


def _defined_in(fn: Any, path: Path) -> bool:
    code = getattr(fn, "__code__", None)
    return inspect.isfunction(fn) and code is not None and Path(code.co_filename).resolve() == path.resolve()


def _normalise_inputs(inputs: Any, where: str) -> tuple[Any, ...] | dict[str, Any]:
    if isinstance(inputs, dict):
        bad = [k for k in inputs if not isinstance(k, str)]
        if bad:
            raise ModelFileError(f"{where}: example_inputs is a dict whose keys are not all strings: {bad[0]!r}")
        return inputs
    if isinstance(inputs, tuple | list):
        return tuple(inputs)
    if type(inputs).__name__ == "Tensor" or hasattr(inputs, "shape"):
        return (inputs,)
    raise ModelFileError(
        f"{where}: example_inputs must be a tuple of positional args or a dict of keyword args, "
        f"not {type(inputs).__name__}"
    )


def load_model(spec: str, device: str | None = None, *, from_stream: bool = False,
               label: str | None = None) -> LoadedModel:
    """Load ``FILE.py[:NAME]``. ``from_stream``: the spec came from a stream, so ``NAME`` must be a
    plain function defined in that file (see :mod:`.trust`), never one it imported. ``label``: what
    records name it (a piped record's label, ``job.label``); None: the file's name."""
    path, entry = parse_spec(spec)
    if not path.exists():
        raise ModelFileError(f"{path}: no such model file")
    if path.is_dir():
        raise ModelFileError(f"{path}: is a directory, not a model file")
    path = path.resolve()
    module = exec_file(path)
    if entry is not None:
        factory = getattr(module, entry, None)
        if factory is None:
            raise ModelFileError(f"{path}: defines no `{entry}`")
        if not callable(factory):
            raise ModelFileError(f"{path}: `{entry}` is not a function")
        if from_stream and not _defined_in(factory, path):
            raise ModelFileError(f"{path}: `{entry}` is not a function defined in this file; a stream may "
                                 "only name one that is")
        try:
            made = factory()
        except Exception as e:
            raise ModelFileError(f"{_user_line(e, path)}: `{entry}()` raised {type(e).__name__}: {e}") from None
        if not (isinstance(made, tuple | list) and len(made) == 2):
            raise ModelFileError(f"{path}: `{entry}()` must return (model, example_inputs)")
        model, inputs = made
    else:
        missing = [n for n in ("model", "example_inputs") if not hasattr(module, n)]
        if missing:
            raise ModelFileError(f"{path}: defines no `{'` or `'.join(missing)}` ({NEEDS})")
        model, inputs = module.model, module.example_inputs
    if not callable(model):
        raise ModelFileError(f"{path}: `model` is a {type(model).__name__}, not a module or callable")
    inputs = _normalise_inputs(inputs, str(path))
    loaded = LoadedModel(model, inputs, path, entry, label or label_of(path, entry))
    if device:
        to_device(loaded, device)
    return loaded


def to_device(loaded: LoadedModel, device: str) -> None:
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise ModelFileError(f"--device {device}: {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelFileError(f"--device {device}: CUDA is not available on this machine")
    if isinstance(loaded.model, torch.nn.Module):
        loaded.model = loaded.model.to(dev)
    loaded.inputs = tree_map(lambda x: x.to(dev) if isinstance(x, torch.Tensor) else x, loaded.inputs)


def parameter_counts(model: Any) -> tuple[int, int, int]:
    """(all parameter elements, trainable elements, frozen parameter tensors) of an nn.Module;
    (0, 0, 0) for other callables."""
    params = getattr(model, "parameters", None)
    if params is None:
        return 0, 0, 0
    try:
        ps = list(params())
    except Exception:
        return 0, 0, 0
    return (sum(p.numel() for p in ps), sum(p.numel() for p in ps if p.requires_grad),
            sum(1 for p in ps if not p.requires_grad))


def model_fields(loaded: LoadedModel, device: str, config: dict[str, str]) -> dict[str, Any]:
    """The fields of a `model` record: enough for another tool to load and run it again. Called once the
    file has run, under ``--config``: its ``settings`` are what the worker then has."""
    from .config import worker_settings
    from .outputs import flatten
    from .tensors import tensor_meta

    total, trainable, frozen = parameter_counts(loaded.model)
    return {
        "model": loaded.label,
        "file": str(loaded.file),
        "entry": loaded.entry,
        "device": device,
        "config": dict(config),
        "settings": worker_settings(),
        "inputs": [tensor_meta(n, v) for n, v in flatten(loaded.inputs, "inputs")],
        "kwargs": loaded.kwargs,
        "parameters": total,
        "trainable": trainable,
        "frozen": frozen,
    }
