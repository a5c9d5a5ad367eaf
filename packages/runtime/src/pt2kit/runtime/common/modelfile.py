"""Loading a model file: module-level ``model`` and ``example_inputs``, or ``FILE.py:NAME``.

``FILE.py:NAME`` names a zero-argument function in the file that returns ``(model, example_inputs)``.
``example_inputs`` is a tuple (or list) of positional arguments, or a dict of keyword arguments; a
single tensor is taken as a one-element tuple. A module-level ``autocast_state`` (a list of
``torch.autocast`` arguments, ``[{"device_type": "cpu", "dtype": "bfloat16", "cache_enabled": True}]``:
what ``pt2kit capture`` writes for a graph the script called under ``with torch.autocast(...)``) is
entered around every call of the model (:meth:`LoadedModel.call`), as the script's ``with`` was: a
graph compiled under autocast gives its dtypes only under it. Every way a file can be wrong is a
:class:`ModelFileError`: one line, exit 2.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..shims.torchapi import tree_map
from .errors import ModelFileError
from .pyfile import _user_line, exec_file, parse_spec
from .pyfile import backend_callable as backend_callable  # kdiff and minify import it from here

NEEDS = "a model file defines module-level `model` and `example_inputs`, or is given as FILE.py:NAME"


@dataclass
class LoadedModel:
    model: Any
    inputs: tuple[Any, ...] | dict[str, Any]
    file: Path
    entry: str | None
    label: str
    autocast: list[dict[str, Any]] = field(default_factory=list)  # the file's autocast_state, checked
    # the file's example_grads: the gradients the script's backward handed the graph, one per output (None
    # where none reached it), which a training step feeds in place of its loss (training.train_step)
    grads: tuple[Any, ...] | None = None

    @property
    def kwargs(self) -> bool:
        return isinstance(self.inputs, dict)

    def ambient(self) -> Any:
        """The ``torch.autocast`` the model is called under (the file's ``autocast_state``), as a context."""
        from pt2kit_portable import under_autocast

        return under_autocast(self.autocast)

    def call(self, fn: Any = None, inputs: Any = None) -> Any:
        """Call ``fn`` (default: the model) with the example inputs, under the file's autocast (a backward
        taken from the result runs outside it, as the script's ``loss.backward()`` after its ``with``)."""
        fn = self.model if fn is None else fn
        inputs = self.inputs if inputs is None else inputs
        with self.ambient():
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
    plain function defined in that file (see :mod:`..parent.trust`), never one it imported. ``label``: what
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
    loaded = LoadedModel(model, inputs, path, entry, label or label_of(path, entry), _autocast(module, path),
                         None if entry else _grads(module, path))
    if device:
        to_device(loaded, device)
    return loaded


def _autocast(module: Any, path: Path) -> list[dict[str, Any]]:
    """The file's ``autocast_state`` checked (pt2kit_portable's autocast_entries); [] where it has none."""
    from pt2kit_portable import autocast_entries

    state = getattr(module, "autocast_state", None)
    if state is None:
        return []
    try:
        return autocast_entries(state)
    except ValueError as e:
        raise ModelFileError(f"{path}: autocast_state: {e} (a list of torch.autocast arguments, "
                             '[{"device_type": "cpu", "dtype": "bfloat16", "cache_enabled": True}])') from None


def _grads(module: Any, path: Path) -> tuple[Any, ...] | None:
    """The file's ``example_grads`` (a tuple of tensors and None, ``pt2kit capture``'s for a graph whose
    backward ran in the script), checked; None where it has none."""
    grads = getattr(module, "example_grads", None)
    if grads is None:
        return None
    if not isinstance(grads, tuple | list) or not all(g is None or type(g).__name__ == "Tensor" for g in grads):
        raise ModelFileError(f"{path}: example_grads must be a tuple of tensors or None (one per output of the model)")
    return tuple(grads)


def _device_type(loaded: LoadedModel) -> str | None:
    """The device type the model's first tensor (a parameter, else an input) is on."""
    import torch

    params = getattr(loaded.model, "parameters", None)
    first = next(iter(params()), None) if isinstance(loaded.model, torch.nn.Module) else None
    if first is None:
        first = next((x for x in (loaded.inputs.values() if isinstance(loaded.inputs, dict) else loaded.inputs)
                      if isinstance(x, torch.Tensor)), None)
    return first.device.type if first is not None else None


def check_device(device: str) -> Any:
    """(3.1) ``device`` as the ``torch.device`` it names here; a name torch does not know, or CUDA where there is
    none, is its one line (exit 2)."""
    import torch

    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise ModelFileError(f"--device {device}: {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelFileError(f"--device {device}: CUDA is not available on this machine")
    return dev


def to_device(loaded: LoadedModel, device: str) -> None:
    """Move the model and its inputs to ``device``; the autocast of the device type they were on moves with
    them (a graph called under CPU autocast, moved to CUDA, runs under CUDA's: its ops keep their dtypes)."""
    import torch

    dev = check_device(device)
    was = _device_type(loaded)
    if was and was != dev.type and not any(a["device_type"] == dev.type for a in loaded.autocast):
        loaded.autocast = [dict(a, device_type=dev.type) if a["device_type"] == was else a for a in loaded.autocast]
    if isinstance(loaded.model, torch.nn.Module):
        loaded.model = loaded.model.to(dev)
    loaded.inputs = tree_map(lambda x: x.to(dev) if isinstance(x, torch.Tensor) else x, loaded.inputs)
    if loaded.grads is not None:
        loaded.grads = tuple(g if g is None else g.to(dev) for g in loaded.grads)


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
    from pt2kit.schema import Autocast

    from ..worker.outputs import flatten
    from .config import worker_settings
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
        "autocast": [Autocast(**a) for a in loaded.autocast],
    }
