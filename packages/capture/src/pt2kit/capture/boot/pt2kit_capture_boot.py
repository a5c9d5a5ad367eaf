"""The child side of ``pt2kit capture``: runs inside the user's own interpreter (sitecustomize starts it).

Stdlib + torch only: the user's environment may have neither pt2kit nor msgspec. Nothing happens
unless ``PT2KIT_CAPTURE_DIR`` is set and this process's rank (``RANK``, else 0) is the one
``PT2KIT_CAPTURE_RANK`` keeps (``all`` keeps every rank). Then:

- an ``atexit`` handler writes ``p<pid>/exit.json`` when the script ends on an uncaught exception
  (read from ``sys.last_exc``/``sys.last_value``, which the interpreter sets before atexit runs, so a
  script that replaces ``sys.excepthook`` is still seen);
- a ``sys.meta_path`` finder waits for the script to import torch (``python -c 'print(1)'`` never
  imports it), then patches torch.compile's backend wrappers (to see ``mode``/``options``) and, once
  Dynamo imports it, ``torch._dynamo.repro.after_dynamo.wrap_backend_debug``: the function
  ``get_compiler_fn`` calls for every torch.compile and ``torch._dynamo.optimize`` backend. Ours hands
  it a :class:`Capturing` backend that writes the graph's model file and tensors, calls the user's
  backend, and appends one line to ``p<pid>/graphs.ndjson`` when it returned or raised.

Guarantees: the user's backend gets the same graph and inputs and its result or exception is passed
on unchanged; any failure in our recording is swallowed and named in the line's ``capture_error``.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

# pt2kit's one-line name of an exception; pt2kit capture copies the module beside this folder
from pt2kit_portable import exception_line

ENV_DIR = "PT2KIT_CAPTURE_DIR"
VALUES = ("small", "all", "none")
BUDGET = 64 << 20
# which graphs --graphs keeps: "all", "first", "failing" or a comma list of compile ids; the boot writes
# files only for those (a failing one's are removed once its backend returned)
ENV_GRAPHS = "PT2KIT_CAPTURE_GRAPHS"
ENV_RUN_BYTES = "PT2KIT_CAPTURE_MAX_RUN_BYTES"  # the run's budget of tensor-file bytes; unset or "": none
_STATE: dict[str, Any] = {"first": False, "referenced": set(), "run": None}
# exceptions Dynamo raises through a backend to trace the frame again: not the backend failing
RESTARTS = {"TensorifyScalarRestartAnalysis", "RestartAnalysis", "ShortenTraceback"}


def _env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None


def rank() -> int | None:
    """This process's rank: torch.distributed's once a process group is up (mp.spawn's workers have no
    RANK in their environment, only the rank they pass init_process_group), else RANK, else None."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        pass
    return _env_int("RANK")


def kept(r: int | None = None) -> bool:
    """Whether this process records: its rank (``r``, else RANK, else 0) is the one PT2KIT_CAPTURE_RANK
    keeps. Asked at start (RANK) and again at each graph (the rank torch.distributed knows by then)."""
    want = os.environ.get("PT2KIT_CAPTURE_RANK", "0").strip()
    if want == "all":
        return True
    mine = (r if r is not None else _env_int("RANK")) or 0
    try:
        return int(want) == mine
    except ValueError:
        return mine == 0


def pdir() -> Path:
    """This process's directory in the scratch dir (the pid read now: a forked child has its own)."""
    return Path(os.environ[ENV_DIR]) / f"p{os.getpid()}"


def start() -> None:
    """Called by sitecustomize at interpreter start: cheap, imports no torch. Every process hooks torch,
    also one of a rank --rank does not keep (its graphs are counted, not recorded: the parent can say
    what --rank dropped). Its :func:`mark` lines tell the parent that the boot loaded here (``boot``),
    that it hooked torch (``hooked``; ``unhooked``: torch was imported, not through our hook)."""
    if not os.environ.get(ENV_DIR):
        return
    mark("boot")
    atexit.register(_at_exit)
    sys.meta_path.insert(0, AfterImport({"torch": _torch_imported}))
    if "torch" in sys.modules:  # a .pth file imported it before sitecustomize ran: hook it now
        try:
            _torch_imported(sys.modules["torch"])
        except Exception:
            pass


_HOOKED = []  # [True] once torch is hooked in this process


def mark(what: str) -> None:
    """``<pid> <what>`` appended to the scratch dir's ``markers`` (one short O_APPEND write: whole even
    when every process of the command writes at once), for the parent's account of what happened."""
    try:
        fd = os.open(os.path.join(os.environ[ENV_DIR], "markers"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()} {what}\n".encode())
        finally:
            os.close(fd)
    except Exception:
        pass


def _at_exit() -> None:
    if "torch" in sys.modules and not _HOOKED:
        mark("unhooked")
    if kept():
        _write_exit()


def _write_exit() -> None:
    exc = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if exc is None:
        return
    try:
        where = pdir()
        where.mkdir(parents=True, exist_ok=True)
        (where / "exit.json").write_text(json.dumps({"exception": type(exc).__name__, "message": str(exc)}))
    except Exception:
        pass


class AfterImport:
    """A meta-path finder that runs ``then(module)`` once a named module has finished importing. It finds
    nothing itself: it asks the finders after it and wraps the found loader's ``exec_module``."""

    def __init__(self, hooks: dict[str, Any]) -> None:
        self.hooks = hooks

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        then = self.hooks.get(name)
        if then is None:
            return None
        spec = None
        for finder in [f for f in sys.meta_path if f is not self]:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        del self.hooks[name]
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            try:
                then(module)
            except Exception:
                pass  # capture never breaks the user's import

        loader.exec_module = exec_module
        return spec


def _torch_imported(torch: Any) -> None:
    import pt2kit_capture_ddp as ddp
    import pt2kit_capture_torchapi as api

    for finder in sys.meta_path:  # hooked now (a .pth file may have imported torch before the finder was in)
        if isinstance(finder, AfterImport):
            finder.hooks.pop("torch", None)
    _HOOKED.append(True)
    mark("hooked")
    for cls in api.compile_wrapper_classes(torch):
        _note_compile_args(cls)
    _when_imported(api.AFTER_DYNAMO, _patch_after_dynamo)
    _when_imported(api.AOTI_MODULE, _patch_aoti)
    _when_imported(api.DDP_MODULE, ddp.patch)


def _when_imported(name: str, then: Any) -> None:
    if name in sys.modules:
        then(sys.modules[name])
        return
    for finder in sys.meta_path:
        if isinstance(finder, AfterImport):
            finder.hooks[name] = then


def _note_compile_args(cls: type) -> None:
    """Keep torch.compile's mode/options/dynamic on its backend wrapper (the inductor one drops mode)."""
    import functools
    import inspect

    original = cls.__init__
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        try:
            bound = signature.bind(self, *args, **kwargs).arguments
            self._pt2kit_compile = {k: bound.get(k) for k in ("mode", "options", "dynamic")}
        except Exception:
            pass

    cls.__init__ = __init__


def _patch_after_dynamo(module: Any) -> None:
    original = module.wrap_backend_debug
    if getattr(original, "_pt2kit_capture", False):
        return

    def wrap_backend_debug(unconfigured_compiler_fn: Any, *args: Any, **kwargs: Any) -> Any:
        name = args[0] if args else kwargs.get("compiler_name")
        try:
            fn = Capturing(unconfigured_compiler_fn, name)
        except Exception:
            fn = unconfigured_compiler_fn
        return original(fn, *args, **kwargs)

    wrap_backend_debug._pt2kit_capture = True
    module.wrap_backend_debug = wrap_backend_debug


class Capturing:
    """The user's backend, recording each graph it is handed. Dynamo reads attributes off a backend
    (``compiler_name``, ``get_compiler_config``, ``reset``...): every one we do not set is the backend's;
    ``_torchdynamo_orig_backend`` leads Dynamo's unwrapping to the backend itself."""

    def __init__(self, backend: Any, name: Any) -> None:
        self._torchdynamo_orig_backend = backend
        self._pt2kit_name = name

    def __getattr__(self, name: str) -> Any:
        backend = self.__dict__.get("_torchdynamo_orig_backend")
        if backend is None:  # copy/pickle look attributes up before __init__ ran
            raise AttributeError(name)
        return getattr(backend, name)

    def __call__(self, gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
        backend = self._torchdynamo_orig_backend
        try:
            line = prepare(backend, self._pt2kit_name, gm, example_inputs)
        except Exception:
            line = None
        return _compile(line, lambda: backend(gm, example_inputs, **kwargs))


def _compile(line: dict[str, Any] | None, call: Any) -> Any:
    """The user's compiler, run: the graph's manifest line appended once it returned or raised (with its
    error), dropped when Dynamo only raised to trace the frame again."""
    try:
        out = call()
    except Exception as e:
        if line is not None:
            if {c.__name__ for c in type(e).__mro__} & RESTARTS:
                discard(line)
            else:
                line["error"] = exception_line(e)
                append(line)
        raise
    if line is not None:
        if os.environ.get(ENV_GRAPHS, "").strip() == "failing":  # its backend did not raise: not kept
            unselect(line)
        append(line)
    return out


def _patch_aoti(module: Any) -> None:
    """``aoti_compile_and_package(exported_program, ...)``: the exported program's graph is recorded as a
    graph of backend "aoti" (compile id ``aoti/N``, the Nth in this process) before AOT Inductor runs."""
    import functools

    import pt2kit_capture_torchapi as api

    original = api.aoti_entry(module)
    if original is None or getattr(original, "_pt2kit_capture", False):
        return
    count = [0]

    @functools.wraps(original)
    def aoti_compile_and_package(exported_program: Any, *args: Any, **kwargs: Any) -> Any:
        line = None
        try:
            line = new_line("aoti")
            line["compile_id"], count[0] = f"aoti/{count[0]}", count[0] + 1
            caller = sys._getframe(1)
            line["function"] = caller.f_code.co_name
            line["source"] = f"{os.path.abspath(caller.f_code.co_filename)}:{caller.f_lineno}"
            options = kwargs.get("inductor_configs") or {}
            line["options"] = {str(k): repr(v) for k, v in options.items()}
            gm, flat, names = api.exported_graph(exported_program)
            record(line, gm, flat, "torch.export exported for AOT Inductor", names)
        except Exception as e:
            if line is not None:
                line["capture_error"] = exception_line(e)
        return _compile(line, lambda: original(exported_program, *args, **kwargs))

    aoti_compile_and_package._pt2kit_capture = True
    module.aoti_compile_and_package = aoti_compile_and_package


def backend_name(backend: Any, name: Any) -> str:
    if isinstance(name, str):
        return name
    for attr in ("compiler_name", "__name__"):
        value = getattr(backend, attr, None)
        if isinstance(value, str):
            return value
    return type(backend).__name__


def _ops(gm: Any, ops: dict[str, int]) -> int:
    """Count gm's call nodes (and its nested GraphModules') into ops; the number of call nodes."""
    import pt2kit_capture_torchapi as api

    n = 0
    for node in gm.graph.nodes:
        if node.op == "call_function":
            name = api.qualified_name(node.target)
        elif node.op == "call_method":
            name = f"Tensor.{node.target}"
        elif node.op == "call_module":
            name = type(getattr(gm, node.target, None)).__name__
        else:
            if node.op == "get_attr" and hasattr(getattr(gm, node.target, None), "graph"):
                n += _ops(getattr(gm, node.target), ops)
            continue
        ops[name] = ops.get(name, 0) + 1
        n += 1
    return n


def selected(compile_id: str | None) -> bool:
    """Whether --graphs keeps a graph of this compile id (``failing``: decided when its backend returns)."""
    graphs = os.environ.get(ENV_GRAPHS, "all").strip() or "all"
    if graphs in ("all", "failing"):
        return True
    if graphs == "first":
        return not _STATE["first"]
    return compile_id in {g.strip() for g in graphs.split(",")}


def run_budget() -> Any:
    """This process's handle on the run's budget (one file under the scratch dir, shared by every process)."""
    import pt2kit_capture_write as write

    if _STATE["run"] is None:
        limit = _env_int(ENV_RUN_BYTES)
        _STATE["run"] = write.RunBudget(Path(os.environ[ENV_DIR]) / "run-bytes", limit)
    return _STATE["run"]


def new_line(backend: str) -> dict[str, Any]:
    """A manifest line with what every graph has (who, where, the values policy) and nothing recorded yet."""
    values = os.environ.get("PT2KIT_CAPTURE_VALUES", "small")
    return {
        "compile_id": None, "rank": rank(), "world": _env_int("WORLD_SIZE"), "pid": os.getpid(),
        "argv": list(sys.argv), "backend": backend, "mode": None, "options": {}, "dynamic": None,
        "function": None, "source": None, "grad": False, "settings": {}, "file": None, "tensors": [],
        "inputs": [], "nodes": 0, "ops": {}, "values": values if values in VALUES else "small", "error": None,
        "capture_error": None, "selected": True, "over_run_budget": False,
    }


def record(line: dict[str, Any], gm: Any, args: list[Any], what: str, names: dict[str, str] | None = None) -> None:
    """Fill the graph's settings, ops, model file and tensors into line (which names it already)."""
    import pt2kit_capture_torchapi as api
    import pt2kit_capture_write as write

    if not selected(line["compile_id"]):  # --graphs does not keep it: its line only (it was compiled)
        line["selected"] = False
        return
    _STATE["first"] = True
    budget = _env_int("PT2KIT_CAPTURE_MAX_VALUE_BYTES")
    line["settings"] = api.settings()
    line["nodes"] = _ops(gm, line["ops"])
    where = pdir()
    where.mkdir(parents=True, exist_ok=True)
    stem = "g" + re.sub(r"\W", "_", line["compile_id"] or "x")
    stem = next(s for s in (stem if i == 0 else f"{stem}_{i}" for i in range(10**6))
                if not (where / f"{s}.py").exists())
    fake = [n.target for n, a in zip([n for n in gm.graph.nodes if n.op == "placeholder"], args, strict=False)
            if api.is_fake(a)]
    # each header line is written as one comment (write.escape): a name's line breaks never end it
    header = [f"pt2kit capture: one graph {what} in the user's program",
              "command: " + shlex.join(getattr(sys, "orig_argv", sys.argv)),
              f"compile id: {line['compile_id']}  function: {line['function']}  source: {line['source']}",
              f"backend: {line['backend']}  mode: {line['mode']}  values: {line['values']}",
              "model: the graph as the backend got it; example_inputs: what it was first called with"]
    if fake:
        header.append(f"values not real: {', '.join(fake)}: the backend got them as fake tensors (no values; "
                      "DDP's per-bucket graphs); seeded in [-1, 1] (floats) or 0 (integers)")
    run = run_budget()
    run.spent = False
    line["file"], line["tensors"], line["inputs"] = write.write(
        gm, args, where, stem, header, line["values"], BUDGET if budget is None else budget, names, run)
    line["over_run_budget"] = run.spent


def prepare(backend: Any, name: Any, gm: Any, args: Any) -> dict[str, Any] | None:
    """The graph's manifest line, its model file and tensors written (before the backend runs: a backend
    that runs the graph while compiling may change its inputs in place)."""
    import pt2kit_capture_backend as backends
    import pt2kit_capture_ddp as ddp
    import pt2kit_capture_torchapi as api
    import torch

    label, code, in_script = backends.describe(backend, name, backend_name(backend, name))
    line = new_line(label)
    if not kept(line["rank"]):  # a rank --rank does not keep: counted (the parent says so), not recorded
        mark(f"skipped {line['rank']}")
        return None
    line.update(backend_code=code, backend_in_script=in_script)
    compile_args = getattr(backend, "_pt2kit_compile", None) or {}
    mode = compile_args.get("mode")
    line.update(mode=None if mode in (None, "default") else str(mode),
                dynamic=compile_args.get("dynamic", getattr(backend, "dynamic", None)))
    try:
        line["options"] = {str(k): repr(v) for k, v in (compile_args.get("options") or {}).items()}
        line["compile_id"] = api.compile_id(gm)
        frame = api.frame_code(gm)
        if frame:
            line["function"], line["source"] = frame[0], f"{os.path.abspath(frame[1])}:{frame[2]}"
        line["grad"] = torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args)
        record(line, gm, ddp.real_inputs(gm, list(args)), "torch.compile handed its backend")
    except Exception as e:
        line["capture_error"] = exception_line(e)
    return line


def append(line: dict[str, Any]) -> None:
    """One line to graphs.ndjson, flushed at once (a script that dies later keeps it)."""
    _STATE["referenced"].update(line.get("tensors") or ())
    try:
        where = pdir()
        where.mkdir(parents=True, exist_ok=True)
        with open(where / "graphs.ndjson", "a") as f:
            f.write(json.dumps(line, default=str) + "\n")
    except Exception:
        pass


def unselect(line: dict[str, Any]) -> None:
    """--graphs failing, and the backend returned: the graph's model file and the tensor files no graph
    kept before it names are removed (their bytes given back to the run's budget); its line stays."""
    where = pdir()
    for rel in [line["file"], *(t for t in line["tensors"] if t not in _STATE["referenced"])] if line["file"] else ():
        try:
            size = (where / rel).stat().st_size
            (where / rel).unlink()
            if rel != line["file"]:
                run_budget().release(size)
        except OSError:
            pass
    line.update(selected=False, file=None, tensors=[])


def discard(line: dict[str, Any]) -> None:
    """Dynamo traces the frame again: forget this attempt's model file (its tensors may be shared)."""
    if line.get("selected"):
        _STATE["first"] = False  # under --graphs first, the graph traced again is still the first
    if line.get("file"):
        try:
            (pdir() / line["file"]).unlink()
        except OSError:
            pass
