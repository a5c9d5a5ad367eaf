"""pt2kit_portable: the rules every pt2kit process applies, in one file that also runs where pt2kit is not installed.

Its version is :data:`VERSION`, the pt2kit-portable distribution's (packages/portable: this file alone, no
dependency; its history in packages/portable/CHANGELOG.md). Depends on Python's standard library when
imported; torch only inside the functions that use it, imported there. No package-relative import, no
``from __future__``, no msgspec, nothing else of pt2kit (the lint's import graph checks it). The same text is
used three ways, so a rule changed here changes everywhere:

* imported as ``pt2kit_portable`` (every package that uses it declares ``pt2kit-portable``; pt2kit-schema
  does, so every pt2kit install has it): the store's layout for ``pt2kit.schema.store`` and capture; the float64 run, the
  loss, the names of exceptions and signals and the settings collector for ``pt2kit.runtime``, whose
  tools (kdiff, benchrun, minify) take them from there;
* copied by ``pt2kit capture`` into its scratch folder, whose path it puts on the command's PYTHONPATH
  after the boot's: the boot imports it inside the user's interpreter, where pt2kit may be absent;
* embedded by source by minify in every repro.py (what the repro's check reaches, each definition's text
  as it is here), as PyTorch's ``torch/utils/_content_store.py`` is
  written to be copied: its names are then globals of the repro, so none of them may clash with the
  repro's other parts (minify's tests check that) and none may need ``__file__``.

Guarantees:

* Store layout: a blob lives at :func:`blob_path` (``blobs/<sha256[:2]>/<sha256><ext>``, matched by
  :data:`BLOB_PATH`); capture's scratch folder keeps a process's tensors at :func:`scratch_tensor_path`.
* :func:`float64_copy` and :func:`float64_mode` make the float64 reference of PyTorch's accuracy rule
  (``torch._dynamo.utils.same(..., fp64_ref=...)``): kdiff's verdict, benchrun's, minify's judgement of
  every candidate and the repro's all run exactly this code, so a candidate "still fails" against the
  reference that decided the failure. Under the mode every floating tensor an op makes in float32
  (``x.float()``, ``.to(torch.float32)``, ``prims.convert_element_type(x, torch.float32)``, a float32
  ``torch.full``) comes out in float64, complex64 as complex128, without first rounding to float32.
  A cast to float16 or bfloat16 still rounds, as the model asked (the float32 model rounds there too);
  casting it back up lands in float64. A higher-order op (``torch.cond``, ``while_loop``,
  ``flex_attention``) runs as eager runs it, the ops of its subgraphs seen one by one. An op with no
  float64 kernel runs in float32 on rounded inputs, its result widened; ``mode.narrowed`` names it.
* :func:`differs` is the one verdict on an output leaf (kdiff's, benchrun's, minify's reproduction check,
  every repro.py's and ``pt2kit capture --check accuracy``'s in the script's own process): assert_close,
  then PyTorch's float64 RMSE rule (:func:`accuracy_rule`); NaN where both sides hold NaN agrees.
* :func:`undefined_values` (a mode around an eager run) and :func:`undefined_nodes` (an fx graph read
  alone) are the one rule for values no op defined: an op of :data:`UNDEFINED_OPS` (``torch.empty``...)
  and what reads its values (:func:`reads_values`). kdiff compares only the shape and dtype of such an
  output, minify's original run never compares it and no candidate returns it: eager and a correct
  compile differ there. An output that is random-generator state (:func:`rng_state_outputs`: the attention
  kernels' ``philox_seed``/``philox_offset``) is left out so too, by the same two functions.
* :func:`as_input` rebuilds a graph input as it was in the script, as PyTorch's ``InputReader`` does:
  ``requires_grad`` kept, and an input that was not a leaf (the result of an op on a tensor that
  requires grad) made the output of one op again, with its storage, offset, shape and strides; capture's
  model files (which embed its text), kdiff's and minify's copies and every repro.py rebuild inputs
  with it, so a backend that looks at ``is_leaf`` sees what it saw in the script. :func:`make_tensor` makes
  an input from its description (shape, stride, storage offset and size; its real values or a seeded
  draw), as ``rand_strided`` and ``InputReader`` do: capture's model files and every repro.py embed its
  text, so both lay out an expanded, overlapping or offset input as the script had it. What capture's model
  files and minify's specs record to make it again is read by one rule each: :func:`storage_reach` (the
  storage size recorded only past what the layout reaches) and :func:`value_range` (the range a seeded input
  is drawn in). :func:`copy_inputs` copies a call's inputs so that those sharing one storage share the copy
  (a write into one shows in the other, as in the script), each as :func:`as_input` makes it: kdiff's sides,
  minify's runs, capture's --check, a training step's inputs and the graphs' arguments minify cuts.
* :func:`backward_compiler` and :func:`run_backward` compile a backward aten graph as AOTAutograd does
  for an ``aot_autograd(...)`` backend (its ``bw_compiler``), for kdiff's backward localisation, minify's
  candidates and the repro alike; any other backend: None, torch.compile as before.
* :func:`loss_of` is the loss of every ``--mode train`` run and of a joint repro: the sum of the means
  of the floating leaves that require grad (a half-precision one's mean taken in float32).
* :func:`compiler_error` is the one rule for which exception of a failed compile is the compiler's own
  (under Dynamo's and Inductor's wrappers): capture's manifest and minify's signature name it alike.
* :func:`exception_line` names an exception in one line of at most 500 characters; :func:`signal_name`
  names the signal a process died of; :func:`same_death` is the one rule for which deaths are one crash
  (a signal, or any memory fault for another: :data:`MEMORY_FAULTS`), :func:`death_words` says it;
  :data:`GRACE` is the seconds a process is given between SIGTERM and SIGKILL.
* :func:`escape` is the one way a string from a record or a user's program (a path, a model label, a
  backend, a failure's text, a source line) enters generated Python (capture's model files, minify's
  repros) outside a ``repr`` literal: one printable line, never a line of code, also inside a docstring.
* :func:`collect_settings` gives every torch config setting not at its default as ``--config`` text
  (:func:`literal`), skipping what torch's own repro writer skips and any value whose text would not
  come back from :func:`coerce_setting` as the same value of the same type; ``inf`` and ``nan``, alone
  or nested, come back (``1e999``, ``float('nan')``: text :func:`from_literal` reads and ``repr`` does not).
* :class:`installed_decompositions` puts decompositions into Inductor's table for a block, as a model file's
  top level installed them (minify's candidates and repros), and puts the table back after it.
* :func:`autocast_now` reads the ambient ``torch.autocast`` a graph is called under (capture's boot, at the
  compiled call) and :class:`under_autocast` enters it again (every tool's model-file loader, minify's
  candidates and every repro.py), so a graph compiled under ``with torch.autocast(...)`` runs under it.
* :class:`kept_compiler_state` puts the compiler's process-wide state (every setting of those configs, and
  Inductor's decomposition table) back as it was before a block of code: a user's file run as a module
  (a pass's, a backend's), or one candidate in a warm worker, leaves no setting behind for the next.

Not guaranteed: a stable API for users (these are pt2kit's internals); any torch older than 2.11.
"""

import ast
import collections
import contextlib
import copy
import math
import operator
import signal

VERSION = "19.3.0"  # the distribution's (hatch reads it); minify names it in every repro.py

# -- the store's layout --------------------------------------------------------------------------

# a blob's path relative to the store root: blobs/<sha[:2]>/<sha><ext>, ext a short suffix (.txt, .tar.gz)
BLOB_PATH = r"blobs/([0-9a-f]{2})/([0-9a-f]{64})((?:\.[A-Za-z0-9_-]{1,16}){0,3})"


def blob_path(sha256, ext=""):
    """Where the store keeps the bytes hashing to ``sha256``, relative to its root."""
    return f"blobs/{sha256[:2]}/{sha256}{ext}"


def scratch_tensor_path(sha256):
    """Where capture's boot saves a tensor file in its process's scratch folder (``p<pid>/``)."""
    return f"t/{sha256}.pt"


# -- processes -----------------------------------------------------------------------------------

GRACE = 3.0  # seconds between SIGTERM and SIGKILL when pt2kit stops a process


def signal_name(returncode):
    """``SIGSEGV`` for a process a signal killed (a negative return code), ``signal N`` for a number this
    platform does not name, None for one that exited."""
    return None if returncode >= 0 else next((s.name for s in signal.Signals if s == -returncode), f"signal {-returncode}")


# memory compiled code corrupted kills by whichever check trips first, varying by run (pytorch#181688): one crash
MEMORY_FAULTS = ("SIGSEGV", "SIGBUS", "SIGABRT")


def same_death(signature, died):
    """Whether a process that died ``died`` (:func:`signal_name`'s word) shows the crash ``signature``: the
    same signal, or both memory faults (:data:`MEMORY_FAULTS`)."""
    return died == signature or (died in MEMORY_FAULTS and signature in MEMORY_FAULTS)


def death_words(signature):
    """The crash ``signature`` as a repro's contract says it: ``SIGABRT, or another memory fault (SIGSEGV,
    SIGBUS)`` for a memory fault, else the signal itself."""
    if signature not in MEMORY_FAULTS:
        return signature
    return f"{signature}, or another memory fault ({', '.join(s for s in MEMORY_FAULTS if s != signature)})"


def summary_line(message):
    """One line of a many-line exception text: its first line, and the next one where the first only
    introduces it (``backend='inductor' raised:``); at most 500 characters."""
    lines = [ln.strip() for ln in str(message).strip().splitlines() if ln.strip()] or [""]
    return (f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0])[:500]


# exceptions Dynamo raises through a backend to trace the frame again (each derives from RestartAnalysis on
# torch 2.11 and 2.13): not the backend failing, and the graph is handed over again. Not ShortenTraceback:
# Inductor's InductorError and Dynamo's BackendCompilerFailed derive from it, and those are the compiler failing
DYNAMO_RESTARTS = frozenset({"TensorifyScalarRestartAnalysis", "RestartAnalysis"})


def is_dynamo_restart(e):
    """Whether ``e``, raised through a backend, is Dynamo tracing the frame again (a float that turned
    dynamic, a speculation that failed) rather than the backend failing on the graph."""
    return any(c.__name__ in DYNAMO_RESTARTS for c in type(e).__mro__)


def exception_line(e):
    """``RuntimeError: first line`` (the bare type name for an empty message): how every pt2kit process
    names an exception in one line."""
    summary = summary_line(str(e))
    return f"{type(e).__name__}: {summary}"[:500] if summary else type(e).__name__


# the exceptions torch raises around the compiler's own: Dynamo's BackendCompilerFailed (a backend raised) and
# InternalTorchDynamoError, Inductor's InductorError and LoweringException (an op's lowering raised)
COMPILER_WRAPPERS = frozenset({"BackendCompilerFailed", "InductorError", "LoweringException", "InternalTorchDynamoError"})


def compiler_error(e):
    """The compiler's own exception under torch's wrappers (:data:`COMPILER_WRAPPERS`): while ``e`` is one, the
    exception it holds (``inner_exception``, else ``__cause__``, else ``__context__``: InductorError and
    LoweringException are raised ``from None``); a wrapper that holds none is itself. A C++ build failure is
    ``CppCompileError``, never ``InductorError``, wherever pt2kit names it (capture's manifest, minify's
    signature, every repro.py's)."""
    for _ in range(8):
        if not COMPILER_WRAPPERS & {c.__name__ for c in type(e).__mro__}:
            break
        inner = held_exception(e)
        if not isinstance(inner, BaseException) or inner is e:
            break
        e = inner
    return e


def held_exception(e):
    """The exception ``e`` holds, the one link of torch's exception chains every walk of them follows
    (:func:`compiler_error`, capture's stage of a failed compile): ``inner_exception`` (Inductor's wrappers
    keep it there), else ``__cause__``, else ``__context__``; None where it holds none."""
    return getattr(e, "inner_exception", None) or e.__cause__ or e.__context__


# -- text written into generated Python ----------------------------------------------------------


def escape(text, string=False):
    """``text`` as one line that cannot become code: every character that is not printable (each one
    ``str.splitlines`` splits on: ``\\n \\r \\x0b \\x0c \\x1c-\\x1e \\x85 \\u2028 \\u2029``, the other control
    characters, a lone surrogate of an undecodable file name, bidi overrides) written as its Python
    escape, tabs kept: what a ``#`` comment may hold. ``string``: backslashes and double quotes escaped
    too, so the line stands inside a ``"..."`` or triple-quoted literal (a docstring) without closing it
    or starting an escape of its own. The one way a string from a record or the user's program enters
    generated Python outside a ``repr`` literal (a name written as code must be refused, not escaped)."""
    return "".join("\\" + c if string and c in '\\"' else c if c.isprintable() or c == "\t" else repr(c)[1:-1]
                   for c in str(text))


# -- torch config settings as text ------------------------------------------------------------------

# --config's prefixes and the torch config modules they name (private modules, public settings)
CONFIG_MODULES = {
    "inductor": "torch._inductor.config",
    "dynamo": "torch._dynamo.config",
    "functorch": "torch._functorch.config",
    "fx": "torch.fx.experimental._config",
}


class SettingError(ValueError):
    """A setting's text that does not read as a value of the setting's type (its message is one line)."""


def literal(value):
    """``value`` as Python literal text that :func:`from_literal` reads back as the same value and types:
    ``inf`` is written ``1e999`` and NaN ``float('nan')``, which ``repr`` does not give back."""
    if isinstance(value, float) and value in (math.inf, -math.inf):
        return "1e999" if value > 0 else "-1e999"
    if isinstance(value, float) and value != value:
        return "float('nan')"
    if isinstance(value, tuple):
        items = [literal(v) for v in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, list):
        return f"[{', '.join(literal(v) for v in value)}]"
    if isinstance(value, set | frozenset):
        # a frozenset has no literal and comes back a set (no torch setting holds one today)
        return f"{{{', '.join(sorted(literal(v) for v in value))}}}" if value else "set()"
    if isinstance(value, dict):
        return f"{{{', '.join(f'{literal(k)}: {literal(v)}' for k, v in value.items())}}}"
    return repr(value)


class _NanLiteral(ast.NodeTransformer):
    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "float" and not node.keywords and \
                len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and node.args[0].value == "nan":
            return ast.copy_location(ast.Constant(math.nan), node)
        return node


def from_literal(text):
    """The value :func:`literal` wrote (``ast.literal_eval``, and ``float('nan')``)."""
    tree = _NanLiteral().visit(ast.parse(text.strip(), mode="eval"))
    return ast.literal_eval(tree.body)


def _parse(text):
    try:
        return from_literal(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise SettingError("not a literal") from None


def coerce_setting(key, raw, current):
    """``raw`` (``--config`` VALUE text) as a value of ``current``'s type (``true``/``false``/``1``/``0``
    for booleans, Python literals for lists); :class:`SettingError` where it is not one."""
    low = raw.lower()
    if isinstance(current, bool):
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise SettingError(f"--config {key}={raw}: expected a boolean (true/false)")
    if low in ("none", "null") and not isinstance(current, str):
        return None
    if isinstance(current, int | float) and not isinstance(current, bool):
        try:
            value = type(current)(raw)
        except ValueError:
            raise SettingError(f"--config {key}={raw}: expected a {type(current).__name__}") from None
        if isinstance(value, float) and value != value:
            raise SettingError(f"--config {key}={raw}: expected a number, not NaN")
        return value
    if isinstance(current, list | tuple | dict | set):
        kind = type(current).__name__
        try:
            value = _parse(raw)
        except SettingError:
            raise SettingError(f"--config {key}={raw}: expected a Python {kind} literal") from None
        sequences = (list, tuple, set, frozenset)
        if isinstance(current, dict) and not isinstance(value, dict):
            raise SettingError(f"--config {key}={raw}: expected a dict, e.g. {{'a': 1}}")
        if isinstance(current, sequences) and not isinstance(value, sequences):
            raise SettingError(f"--config {key}={raw}: expected a {kind}, e.g. {'[1, 2]' if kind == 'list' else '(1, 2)'}")
        return type(current)(value) if isinstance(current, sequences) else value
    if current is None:
        try:
            return _parse(raw)
        except SettingError:
            return raw
    return raw


def _same_value(a, b):
    """Equal and of the same types all the way down, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    return a == b


def setting_text(key, value, default):
    """``value`` as ``--config`` VALUE text, or None where that text would not give ``value`` back
    (a callable, an object, a string that reads as a literal): anything but a string is its
    :func:`literal` text, so a tuple stays a tuple and an ``inf`` inside a list survives."""
    text = value if isinstance(value, str) else literal(value)
    try:
        back = coerce_setting(key, text, default)
    except SettingError:
        return None
    return text if _same_value(back, value) else None


def collect_settings(modules=None):
    """Every setting of the dynamo, inductor, functorch and fx configs (``modules``: prefix -> imported
    config module; default: :data:`CONFIG_MODULES`, imported) that is not at its default now, whoever set
    it, as ``{"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}``: what torch's
    ``generate_config_string`` writes into its own repros, less what it skips (``_save_config_ignore``,
    machine-specific ``_cache_config_ignore_prefix``) and values that do not survive as text. A module
    that does not import or read is left out."""
    import importlib

    out = {}
    for prefix, path in CONFIG_MODULES.items():
        try:
            module = modules[prefix] if modules is not None else importlib.import_module(path)
            defaults = config_defaults(module)
            now = module.get_config_copy()
        except Exception:
            continue
        for key, value in now.items():
            if key not in defaults or left_out_of_repros(module, key) or value == defaults[key]:
                continue
            text = setting_text(key, value, defaults[key])
            if text is not None:
                out[f"{prefix}.{key}"] = text
    return out


class kept_compiler_state:  # a context manager, named as one is used
    """Torch's compiler settings (every setting of the :data:`CONFIG_MODULES` configs) and Inductor's decomposition
    table as they were on entering, put back on leaving. Code run in between changes them for every later compile
    of the process: a user's file run as a module whose top level sets ``torch._inductor.config.
    post_grad_custom_post_pass = corrupt`` or puts a decomposition into Inductor's table, a backend that installs
    one when it is called. A warm worker judges many candidates, each of which must compile as it would in a
    fresh process under its own settings; a repro loads the same file the same way. ``changed``: what was put
    back (``inductor.KEY``, ``decompositions``)."""

    def __enter__(self):
        import importlib

        self.changed = []
        self._configs = []
        for prefix, path in CONFIG_MODULES.items():
            try:
                module = importlib.import_module(path)
                self._configs.append((prefix, module, dict(module.get_config_copy())))
            except Exception:  # a module this torch lacks: nothing of it to keep
                continue
        self._table = inductor_decompositions()
        self._entries = dict(self._table) if self._table is not None else None
        return self

    def __exit__(self, *exc):
        for prefix, module, before in self._configs:
            for key, value in module.get_config_copy().items():
                if key in before and not (value is before[key] or _same_value(value, before[key])):
                    setattr(module, key, before[key])
                    self.changed.append(f"{prefix}.{key}")
        table, entries = self._table, self._entries
        if table is not None and (table.keys() != entries.keys() or any(table[k] is not v for k, v in entries.items())):
            table.clear()
            table.update(entries)
            forget_decompositions()
            self.changed.append("decompositions")
        return False


class installed_decompositions(kept_compiler_state):  # a context manager, named as one is used
    """``entries`` ({"aten.silu.default": fn}) put into Inductor's decomposition table on entering, the table (and
    every setting) put back on leaving: a decomposition a model file's top level installed, carried into each of
    minify's candidates and its repro as the file installed it in the run that failed. Inductor's FX graph cache
    and AOTAutograd's are off inside: the table is not in their keys, so a graph compiled earlier without the
    entries (a candidate of a run before) would be handed back, the decomposition never applied."""

    def __init__(self, entries):
        self.entries = dict(entries)

    def __enter__(self):
        import importlib

        super().__enter__()
        table = inductor_decompositions()
        if table is None:
            raise RuntimeError("this torch has no Inductor decomposition table to put a decomposition into")
        for name, fn in self.entries.items():
            table[op_named(name)] = fn
        forget_decompositions()
        caches = (("torch._inductor.config", "fx_graph_cache"), ("torch._functorch.config", "enable_autograd_cache"))
        for path, key in caches:
            setattr(importlib.import_module(path), key, False)  # put back on leaving, as every setting is
        return self


def op_named(name):
    """The aten op overload a name says (``"aten.silu.default"``: ``torch.ops.aten.silu.default``)."""
    import torch

    op = torch.ops
    for part in name.split("."):
        op = getattr(op, part)
    return op


# -- torch's private API this file uses, each behind one small function --------------------------


def config_defaults(module):
    """Each setting of a torch config module at its declared default (``ConfigModule._config[key].default``):
    a setting an environment variable changed is not at its default."""
    return {k: entry.default for k, entry in module._config.items()}


def left_out_of_repros(module, key):
    """Whether torch's own repro writer leaves a setting out (``_save_config_ignore``: callables, pickling
    trouble) or its cache key does as machine-specific (``_cache_config_ignore_prefix``: trace dumps,
    compile threads, worker start method, CUTLASS folders)."""
    if key in getattr(module, "_save_config_ignore", ()):
        return True
    return any(key.startswith(p) for p in getattr(module, "_cache_config_ignore_prefix", ()))


def inductor_decompositions():
    """Inductor's decomposition table (``torch._inductor.decomposition.decompositions``, the dict a library or a
    script puts its own decompositions into); None where this torch has none."""
    try:
        import torch._inductor.decomposition as decomposition
    except Exception:
        return None
    table = getattr(decomposition, "decompositions", None)
    return table if isinstance(table, dict) else None


def forget_decompositions():
    """Inductor's table as it picks it for a compile is read again (``fast_random_decomps`` keeps a copy of
    the table made at the process's first compile)."""
    import torch._inductor.decomposition as decomposition

    cached = getattr(decomposition, "fast_random_decomps", None)
    if hasattr(cached, "cache_clear"):
        cached.cache_clear()


# -- the ambient torch.autocast a graph was compiled under ---------------------------------------------

# the device types autocast keeps a state for that Dynamo's global-state guard reads (a graph compiled under one
# of them enabled is compiled again when that changes)
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu")


def autocast_now():
    """The ambient ``torch.autocast`` state, as the arguments that enter it again: one entry per device type it
    is enabled for (``[{"device_type": "cuda", "dtype": "float16", "cache_enabled": True}]``); ``[]`` where it
    is off (``autocast(enabled=False)`` nested inside an enabled one included). What Dynamo compiled a graph
    under when ``with torch.autocast(...): model(x)`` calls it: its ops' dtypes follow it, so the graph only
    runs as in the script under it (capture records it with the graph; every tool and repro enters it)."""
    import torch

    try:
        cache = bool(torch.is_autocast_cache_enabled())
    except Exception:
        cache = True
    out = []
    for device in AUTOCAST_DEVICES:
        try:
            if torch.is_autocast_enabled(device):
                dtype = str(torch.get_autocast_dtype(device)).removeprefix("torch.")
                out.append({"device_type": device, "dtype": dtype, "cache_enabled": cache})
        except Exception:  # a device type this torch keeps no autocast state for
            continue
    return out


def autocast_entries(state):
    """``state`` (:func:`autocast_now`'s form) checked: a list of entries, each a known device type, a floating
    dtype's name and a bool cache flag; ValueError naming what is wrong (a model file's or a record's value)."""
    import torch

    if not isinstance(state, (list, tuple)):
        raise ValueError(f"a list of torch.autocast arguments, not {type(state).__name__}")
    out = []
    for s in state:
        if not isinstance(s, dict) or not {"device_type", "dtype"} <= set(s) or not set(s) <= {
                "device_type", "dtype", "cache_enabled"}:
            raise ValueError(f"{s!r}: not a dict of device_type, dtype and cache_enabled")
        dtype = getattr(torch, s["dtype"], None) if isinstance(s["dtype"], str) else None
        if s["device_type"] not in AUTOCAST_DEVICES or not isinstance(dtype, torch.dtype) \
                or not dtype.is_floating_point or not isinstance(s.get("cache_enabled", True), bool):
            raise ValueError(f"{s!r}: no autocast of that device type, dtype or cache flag")
        out.append({"device_type": s["device_type"], "dtype": s["dtype"],
                    "cache_enabled": s.get("cache_enabled", True)})
    return out


def autocast_words(state):
    """``state`` (entries as dicts, or Structs with those fields) in words: ``torch.autocast(cpu, bfloat16)``,
    several joined by "and"; "" for none."""
    out = []
    for s in state or ():
        get = s.get if isinstance(s, dict) else (lambda key, default=None, s=s: getattr(s, key, default))
        cache = "" if get("cache_enabled", True) else ", cache_enabled=False"
        out.append(f"torch.autocast({get('device_type')}, {get('dtype')}{cache})")
    return " and ".join(out)


@contextlib.contextmanager
def under_autocast(state):
    """``torch.autocast`` entered as ``state`` (:func:`autocast_now`'s entries) says, each device type's in turn,
    left on exit; nothing for ``[]`` or None. Around a graph's call only, as the script's ``with`` was: its
    backward runs outside it, as ``loss.backward()`` after the block does."""
    import torch

    with contextlib.ExitStack() as stack:
        for s in state or ():
            stack.enter_context(torch.autocast(s["device_type"], dtype=getattr(torch, s["dtype"]),
                                               enabled=s.get("enabled", True), cache_enabled=s.get("cache_enabled", True)))
        yield


def autocast_off():
    """:class:`under_autocast` turning off every autocast on now: a training step's backward, taken outside the
    ``with torch.autocast(...)`` its forward ran in, as a script's ``loss.backward()`` after the block is."""
    return under_autocast([dict(s, enabled=False) for s in autocast_now()])


def tree_map(fn, tree):
    """``fn`` on every leaf of a pytree of lists, tuples, dicts and registered containers."""
    from torch.utils._pytree import tree_map as pytree_map
    return pytree_map(fn, tree)


def is_mutable(op):
    """Whether an aten op overload writes into one of its arguments (in-place, ``out=``)."""
    return bool(op._schema.is_mutable)


def is_hop(func):
    """Whether ``func`` (what a mode's ``__torch_dispatch__`` is handed) is a higher-order op."""
    import torch._ops

    return isinstance(func, torch._ops.HigherOrderOperator)


def hop_name(target):
    """The name of a higher-order op (``cond``, ``while_loop``, ``flex_attention``), or None."""
    return getattr(target, "_name", None) or getattr(target, "__name__", None) if is_hop(target) else None


def is_op_overload(a):
    """Whether ``a`` is an aten op (``aten.add.Tensor``) or its packet (``aten.add``)."""
    import torch._ops

    return isinstance(a, torch._ops.OpOverload | torch._ops.OpOverloadPacket)


def dispatch_mode():
    """The base class of a mode that sees every aten op as it runs (``TorchDispatchMode``)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


def backward_compiler(backend):
    """The compiler AOTAutograd hands a backward graph to, where ``backend`` is an ``aot_autograd(...)``
    object (``AotAutograd``, whose ``kwargs`` hold its compilers): its ``bw_compiler``, else its
    ``fw_compiler`` (AOTAutograd's own default). None for every other backend (a name, Inductor, a
    function): torch.compile of a backward graph under no_grad runs as inference, and only those compile
    it as their backward. Why: an aot_autograd backend's inference path calls its forward compiler alone,
    so a bug of its ``bw_compiler`` would never run on a backward graph compiled that way."""
    kwargs = getattr(backend, "kwargs", None)
    if type(backend).__name__ != "AotAutograd" or not isinstance(kwargs, dict):
        return None
    return kwargs.get("bw_compiler") or kwargs.get("fw_compiler")


def run_backward(compiler, gm, args):
    """A backward aten graph ``gm`` compiled by ``compiler`` (:func:`backward_compiler`) as AOTAutograd
    compiles one (``compiler(gm, example_inputs)``), then run on ``args`` in the calling convention the
    compiled function says (boxed: one list, where it has ``_boxed_call``), under no_grad as autograd
    runs a backward: its outputs, a list. A module that is not an fx graph (a repro's) is traced into
    the aten graph it runs first (``make_fx``), so the compiler is handed what AOTAutograd hands it."""
    import torch

    with torch.no_grad():
        if not isinstance(gm, torch.fx.GraphModule):
            from torch.fx.experimental.proxy_tensor import make_fx

            gm = make_fx(gm)(*args)
        compiled = compiler(gm, list(args))
        out = compiled(list(args)) if getattr(compiled, "_boxed_call", False) else compiled(*args)
    return list(out) if isinstance(out, (list, tuple)) else [out]


# -- a mode that sees inside higher-order ops --------------------------------------------------------

_MODE_CLASSES = {}


def hop_aware_mode():
    """The base class of a mode that also sees inside higher-order ops (made once, on first use: this
    file imports no torch). A mode without a rule for ``torch.cond`` makes torch raise
    NotImplementedError; this one runs the op as eager does, with the mode popped, every callable
    argument (a branch, a loop body, a score_mod) wrapped to run with the mode pushed again, so the ops
    inside are seen one by one. An op with no callable argument (auto_functionalized, a Triton kernel
    wrapper) runs whole; ``blind`` names it. Subclasses implement ``watch`` (an ordinary op: run it,
    look at it) in place of ``__torch_dispatch__``, and ``hop_out`` to look at a higher-order op's outputs."""
    if "hop" in _MODE_CLASSES:
        return _MODE_CLASSES["hop"]
    import torch

    def wrap_callables(a, inside):
        if isinstance(a, tuple | list):
            return type(a)(wrap_callables(x, inside) for x in a)
        if callable(a) and not isinstance(a, torch.Tensor | type) and not is_hop(a) and not is_op_overload(a):
            return inside(a)
        return a

    class HopAwareMode(dispatch_mode()):
        supports_higher_order_operators = True  # torch hands us higher-order ops instead of raising

        @classmethod
        def ignore_compile_internals(cls):
            """Off while torch.compile traces, on again when what it compiled runs: eager flex_attention
            compiles itself (fullgraph), and Dynamo refuses to under a mode that says otherwise."""
            return True

        def __init__(self):
            super().__init__()
            self.blind = []  # higher-order ops run whole, their insides unseen

        def watch(self, func, args, kwargs):
            return func(*args, **kwargs)

        def hop_out(self, func, args, kwargs, out):
            return out

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if not is_hop(func):
                return self.watch(func, tuple(args), kwargs)
            wrapped = [0]

            def inside(fn):
                wrapped[0] += 1

                def run(*a, **kw):
                    with self:
                        return fn(*a, **kw)

                return run

            args2 = tuple(wrap_callables(a, inside) for a in args)
            kwargs2 = {k: wrap_callables(v, inside) for k, v in kwargs.items()}
            if not wrapped[0] and (name := hop_name(func)) and name not in self.blind:
                self.blind.append(name)
            return self.hop_out(func, args2, kwargs2, func(*args2, **kwargs2))

    _MODE_CLASSES["hop"] = HopAwareMode
    return HopAwareMode


# -- the float64 reference ---------------------------------------------------------------------------


def _widening():
    import torch

    return {torch.float32: torch.float64, torch.complex64: torch.complex128}


def to_float64(x):
    """Every floating tensor of a pytree in float64, complex ones in complex128; the rest as it is. Tensors that share
    a storage (``f(x, x[1])``) come out as views of one widened copy of it, so a write into one is read through the
    other, as in the run the copy stands for; the rest as :func:`each_to_float64` widens them (one that requires grad
    alone, as before)."""
    import torch

    def key(t):  # one storage seen as one dtype (a complex tensor and its view_as_real are widened apart)
        return (_storage_key(t), t.dtype) if isinstance(t, torch.Tensor) else (0, None)

    seen, wide = collections.Counter(), {}
    tree_map(lambda t: seen.update([key(t)]), x)

    def up(t):
        k = key(t)
        if seen[k] < 2 or not k[0] or t.requires_grad or not (t.is_floating_point() or t.is_complex()):
            return each_to_float64(t)
        if k not in wide:  # the whole storage, widened once: each tensor on it a view at its own place
            try:
                flat = t.new_empty(0).set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes() // t.element_size(),))
            except Exception:  # a tensor whose storage cannot be viewed whole (a subclass): each alone, as before
                return each_to_float64(t)
            wide[k] = each_to_float64(flat)
        return wide[k].as_strided(t.shape, t.stride(), t.storage_offset())

    return tree_map(up, x)


def each_to_float64(x):
    """Every floating tensor of a pytree in float64, complex ones in complex128, each alone; the rest as it is:
    :func:`to_float64` where no two of them share a storage (a short repro's inputs, where a write through a shared
    one is not its failure)."""
    import torch

    return tree_map(lambda t: t.to(torch.complex128 if t.is_complex() else torch.float64)
                    if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) else t, x)


def _detached_attributes(model):
    """deepcopy's memo: each tensor a module holds as a plain attribute that is not a graph leaf, as a
    detached copy. Legacy ``torch.nn.utils.weight_norm`` keeps ``weight`` so, recomputed from ``weight_g``
    and ``weight_v`` by a pre-forward hook after a step with grad; torch refuses to deepcopy it."""
    import torch

    memo = {}
    for mod in model.modules() if isinstance(model, torch.nn.Module) else ():
        for v in vars(mod).values():
            if isinstance(v, torch.Tensor) and not v.is_leaf:
                memo[id(v)] = v.detach().clone()
    return memo


def float64_copy(model, inputs):
    """(float64 copy of the model, float64 inputs); the original is never touched; integer and bool
    tensors stay as they are."""
    import torch

    m = copy.deepcopy(model, _detached_attributes(model))
    if isinstance(m, torch.nn.Module):
        m = m.to(torch.float64)
        for mod in m.modules():  # complex parameters and buffers: .to(float64) leaves them alone
            for name, b in list(mod.named_buffers(recurse=False)):
                if b is not None and b.is_complex():
                    setattr(mod, name, b.to(torch.complex128))
    return m, to_float64(inputs)


def float64_mode():
    """A dispatch mode under which float32 results come out as float64 (the module docstring says how)."""
    import torch

    up = _widening()
    down = {wide: narrow for narrow, wide in up.items()}

    def widen(t):
        if isinstance(t, torch.Tensor) and t.dtype in up:
            return t.to(up[t.dtype])
        return t

    def narrow(t):
        if isinstance(t, torch.Tensor) and t.dtype in down:
            return t.to(down[t.dtype])
        return t

    class Float64Mode(hop_aware_mode()):
        def __init__(self):
            super().__init__()
            self.narrowed = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if is_hop(func):  # its operands in float64 too: a loop's carried values keep one dtype
                return super().__torch_dispatch__(func, types, tree_map(widen, args), tree_map(widen, kwargs or {}))
            return super().__torch_dispatch__(func, types, args, kwargs)

        def watch(self, func, args, kwargs):
            kwargs = dict(kwargs or {})
            if kwargs.get("dtype") in up:
                kwargs["dtype"] = up[kwargs["dtype"]]
            if "view" not in str(func):  # a view as another dtype reinterprets bits: not a cast
                # a cast's dtype given by position (prims.convert_element_type, aten.to.dtype): no rounding either
                args = tuple(up.get(a, a) if isinstance(a, torch.dtype) else a for a in args)
            mutable = is_mutable(func)  # in-place and out=: the result is an existing tensor
            try:
                out = func(*args, **kwargs)
            except (RuntimeError, NotImplementedError):
                if mutable:
                    raise
                # no float64 kernel for this op: run it in float32, as the float32 model does
                out = func(*tree_map(narrow, args), **tree_map(narrow, kwargs))
                if str(func) not in self.narrowed:
                    self.narrowed.append(str(func))
            if mutable:
                return out
            return tree_map(widen, out)

    return Float64Mode()


# -- values no op defined ------------------------------------------------------------------------------

# ops whose output holds whatever memory held: two runs of one program differ there, so those values mean
# nothing (PyTorch's OpInfo tests compare only their metadata: test_ops skips empty, empty_like, new_empty...)
UNDEFINED_OPS = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided",
                           "empty_permuted"})
# ops that write every element of their first argument without reading it (in place, or functional: its copy)
OVERWRITING_OPS = frozenset({"fill", "fill_", "zero", "zero_", "copy", "copy_", "uniform_", "normal_", "random_",
                             "exponential_", "geometric_", "cauchy_", "log_normal_", "bernoulli_"})
# ops that write their first argument where their index arguments say: whether every element is written depends
# on values (`inv[perm] = arange(n)`, an inverse permutation, writes all), so they define it, read it not. A
# garbage value judged is a finding one can see and question; a real output left unjudged is a bug missed:
# transformers' MoE routing builds its inverse permutation so, and Mixtral's logits went unjudged.
INDEXED_WRITES = frozenset({"index_put", "index_put_", "_index_put_impl_", "index_copy", "index_copy_", "index_add",
                            "index_add_", "index_fill", "index_fill_", "index_reduce", "index_reduce_", "scatter",
                            "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_",
                            "masked_scatter", "masked_scatter_", "put", "put_"})
OVERWRITING_OPS = OVERWRITING_OPS | INDEXED_WRITES
# ops that read only the shape, dtype and device of their tensor arguments
SHAPE_ONLY_OPS = UNDEFINED_OPS | {"zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like",
                                  "new_zeros", "new_ones", "new_full"}


# an op's outputs that are random-generator state, by their name in the op's schema: the seed and offset an
# attention kernel drew for its dropout (cuDNN's and the memory-efficient kernel's ``philox_seed`` and
# ``philox_offset``, at::empty where no dropout ran), flash attention's ``rng_state`` and its ``unused`` slot.
# Not a value the op computed: two runs differ there without a bug (issue 59: minify cut a max-autotune block
# to cuDNN attention's philox_seed). A later op that reads one (the backward replaying the dropout) computes a
# value, so, unlike uninitialised memory, this does not spread to readers.
RNG_STATE_RETURNS = frozenset({"philox_seed", "philox_offset", "rng_state", "unused"})
# higher-order ops whose output 0 is the generator state they saved (activation checkpointing's replay)
RNG_STATE_HOPS = frozenset({"run_and_save_rng_state"})


def rng_state_outputs(op):
    """Which outputs of ``op`` (an OpOverload, or a higher-order op) are random-generator state, not computed
    values: {position: its name}, by :data:`RNG_STATE_RETURNS` read off the op's schema (``returns[i].name``),
    ``{0: 'rng_state'}`` for :data:`RNG_STATE_HOPS`; {} for anything else."""
    schema = getattr(op, "_schema", None)
    if schema is None:
        name = getattr(op, "_name", None) if callable(getattr(op, "name", None)) else None
        return {0: "rng_state"} if name in RNG_STATE_HOPS else {}
    try:
        return {i: r.name for i, r in enumerate(schema.returns) if r.name in RNG_STATE_RETURNS}
    except Exception:  # a schema of another form: nothing marked, every output compared
        return {}


def reads_values(name, position):
    """Whether an op (its name: ``empty_like``, ``fill_``) reads the values of its tensor argument at ``position``:
    not those of an op of :data:`SHAPE_ONLY_OPS`, nor the first one of an op of :data:`OVERWRITING_OPS`."""
    return name not in SHAPE_ONLY_OPS and not (position == 0 and name in OVERWRITING_OPS)


def op_name(target):
    """The bare name of what an fx node calls: an aten op's (``empty`` of ``aten.empty.memory_format``), a
    torch function's (``empty`` of ``torch.empty``), a method's (``new_empty``)."""
    if isinstance(target, str):
        return target
    return getattr(getattr(target, "overloadpacket", None) or target, "__name__", "")


def undefined_nodes(graph):
    """An fx graph's nodes whose values are memory no op defined, by name: the op that made it (``empty``), by
    :func:`undefined_values`'s rule read off the graph: an op of :data:`UNDEFINED_OPS`, and every node that
    reads such a value where :func:`reads_values` says it reads it. A write into one in place (``fill_``) is a
    node of its own: the node written into stays undefined (a candidate cut before the write sees it so).
    An op's output that is random-generator state (``getitem(op, i)``, :func:`rng_state_outputs`) is named
    too, by the op and the output (``aten._scaled_dot_product_cudnn_attention.default's philox_seed``), and
    does not spread to what reads it."""
    import torch

    out, rng = {}, {}
    for n in graph.nodes:
        if n.op not in ("call_function", "call_method"):
            continue
        # an int position only: a Dynamo graph's getitem indexes tensors too (``x[:, 0]``: a tuple holding slices,
        # which Python 3.11 cannot hash)
        if n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node) and type(n.args[1]) is int:
            state = rng_state_outputs(n.args[0].target).get(n.args[1])
            if state is not None:
                rng[n.name] = f"{n.args[0].target}'s {state}"
                continue
        name = op_name(n.target)
        if name in UNDEFINED_OPS:
            out[n.name] = name
            continue
        for i, a in enumerate(n.args):
            made = next((out[x.name] for x in (a if isinstance(a, (list, tuple)) else [a])
                         if isinstance(x, torch.fx.Node) and x.name in out), None)
            if made is not None and reads_values(name, i):
                out[n.name] = made
                break
    return {**out, **rng}


def _storage_key(t):
    """The address of a tensor's storage (0 where it has none this rule can follow: no memory, sparse)."""
    try:
        return t.untyped_storage().data_ptr()
    except Exception:
        return 0


def _covers(t):
    """Whether a write into ``t`` writes every byte of its storage: no element twice, no gap."""
    try:
        if t.storage_offset() or t.numel() * t.element_size() != t.untyped_storage().nbytes():
            return False
    except Exception:
        return False
    step = 1
    for stride, size in sorted((s, n) for s, n in zip(t.stride(), t.shape, strict=True) if n != 1):
        if stride != step:
            return False
        step *= size
    return True


def undefined_values():
    """A mode to enter around an eager run: afterwards ``mode.made_by(t)`` names the op (``aten.empty``)
    whose uninitialised memory some of ``t``'s values are, or None where an op defined every one. Tracked by
    storage through views, in-place writes and ``out=``; an output that is random-generator state
    (:func:`rng_state_outputs`: cuDNN attention's ``philox_seed``) is named too, and does not spread to what
    reads it. An op's output is undefined where it reads an
    undefined tensor (``empty(2) + 1``), and defined again only where an op of :data:`OVERWRITING_OPS` (or
    one with ``out=``) writes all of its storage from defined values (``empty(3).normal_()``,
    ``torch.add(a, b, out=empty(2))``); a write into part of one (``x[:1].fill_(0)``) leaves it undefined.
    A storage found undefined is kept alive until the mode is dropped, so no later tensor gets its address.
    The mode never fails the run it watches: an op it cannot follow is one it does not judge."""
    import torch

    class UndefinedValues(hop_aware_mode()):
        def __init__(self):
            super().__init__()
            self.undefined = {}  # storage address -> (the op that made it, the storage kept alive)
            self.rng = {}  # the same, for random-generator state an op returned (never spread to readers)

        def made_by(self, t):
            key = _storage_key(t) if isinstance(t, torch.Tensor) else 0
            got = self.undefined.get(key) or self.rng.get(key)
            return got[0] if got else None

        def watch(self, func, args, kwargs):
            out = func(*args, **kwargs)
            with contextlib.suppress(Exception):
                self._follow(func, args, kwargs, out)
            with contextlib.suppress(Exception):
                outs = out if isinstance(out, (list, tuple)) else [out]
                for i, state in rng_state_outputs(func).items():
                    if isinstance(outs[i], torch.Tensor) and _storage_key(outs[i]):
                        self.rng[_storage_key(outs[i])] = (f"{func}'s {state}", outs[i].untyped_storage())
            return out

        def _follow(self, func, args, kwargs, out):
            name = func.overloadpacket.__name__
            written, outs, ins, every = [], [], [], []
            schema = func._schema.arguments
            values = [*args, *(kwargs.get(a.name) for a in schema[len(args):])]
            for i, (a, v) in enumerate(zip(schema, values, strict=False)):
                ts = [x for x in (v if isinstance(v, (list, tuple)) else [v]) if isinstance(x, torch.Tensor)]
                every += ts
                if a.alias_info is not None and a.alias_info.is_write:
                    written += ts
                    if a.kwarg_only:  # out=: written, never read
                        outs += ts
                        continue
                if reads_values(name, i):
                    ins += ts
            why = f"{func.namespace}.{name}" if name in UNDEFINED_OPS else next(
                (self.undefined[k][0] for k in map(_storage_key, ins) if k in self.undefined), None)
            whole = name in OVERWRITING_OPS or bool(outs)  # the op writes every element of what it writes
            results = [x for x in (out if isinstance(out, (list, tuple)) else [out]) if isinstance(x, torch.Tensor)]
            seen = {_storage_key(x) for x in every}
            for t in written:
                self._mark(t, why, whole and _covers(t))
            for t in results:
                if _storage_key(t) not in seen:  # a new storage (an address reused is marked again)
                    self._mark(t, why, True)

        def _mark(self, t, why, defines):
            key = _storage_key(t)
            if not key:
                return
            if why is not None:
                self.undefined[key] = (why, t.untyped_storage())
            elif defines:
                self.undefined.pop(key, None)
                self.rng.pop(key, None)

    return UndefinedValues()


# -- the accuracy verdict on an output leaf ------------------------------------------------------------


RuleResult = collections.namedtuple("RuleResult", "passed rmse_test rmse_baseline multiplier tol")


def multiplier_for(dtype, numel):
    import torch

    return 3.0 if dtype in (torch.float16, torch.bfloat16) or numel < 1000 else 2.0


def tol_for(dtype):
    """The benchmark harness's tolerance: 1e-4 for float32 and float64, 1e-3 for float16, 1e-2 for bfloat16."""
    import torch

    return {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-4)


def rmse(a, b):
    """Root mean squared error in float64, in chunks (bounded extra memory)."""
    import torch

    a, b, n, step, total = a.reshape(-1), b.reshape(-1), a.numel(), 1 << 22, 0.0
    for i in range(0, n, step):
        d = a[i:i + step].to(torch.float64) - b[i:i + step].to(a.device, torch.float64)
        total += float((d * d).sum())
    return math.sqrt(total / n) if n else 0.0


def agreeing_nonfinite(a, b):
    """Where both sides hold NaN, or the same infinity: the model made those values, and both agree."""
    return (a.isnan() & b.isnan()) | (a.isinf() & (a == b))


def accuracy_rule(test, baseline, fp64, equal_nan=True):
    """same()'s float64 test for a leaf that already failed assert_close against the baseline.

    NaN where test and baseline both hold NaN (and the same infinity) agrees, as same() with the
    harness's ``equal_nan``; those elements are left out of both RMSEs, so the rest is still judged
    (same() passes any leaf whose two RMSEs are both NaN, whatever its finite part holds); without
    ``equal_nan`` every NaN counts."""
    if fp64.shape != test.shape or baseline.shape != test.shape:
        return RuleResult(False, math.nan, math.nan, 0.0, 0.0)
    m = multiplier_for(test.dtype, test.numel())
    tol = tol_for(test.dtype)
    fp64 = fp64.to(test.device)
    keep = ~agreeing_nonfinite(test, baseline.to(test.device))
    if equal_nan and not bool(keep.all()):
        test, baseline, fp64 = test[keep], baseline.to(test.device)[keep], fp64[keep]
    e_test = rmse(fp64, test)
    e_base = rmse(fp64, baseline)
    # NaN compares false, as in same(): a NaN on the tested side alone is never rounding noise
    return RuleResult(e_test <= m * e_base + tol / 10.0, e_test, e_base, m, tol)


def differs(test, eager, fp64=None, ref="eager", rule="fp64"):
    """THE verdict on one output leaf (kdiff's, minify's reproduction check, benchrun's): "" when it
    passes, else why.

    It fails when it fails assert_close (default tolerances; NaN where the reference holds NaN too,
    and the same ±Inf, agree) against the reference (eager, or with ``ref="eager64"`` the float64 run
    at eager's dtype) and :func:`accuracy_rule` against ``fp64`` (when there is one); with
    ``rule="close"`` (a diff kdiff judged with ``--verdict close``) assert_close alone. Written with
    torch and the standard library only: minify's repro.py carries it verbatim."""
    import torch

    if not isinstance(test, torch.Tensor) or not isinstance(eager, torch.Tensor):
        same = test == eager or (isinstance(test, float) and isinstance(eager, float) and test != test and eager != eager)
        return "" if same else f"{test!r} != {eager!r}"
    if test.shape != eager.shape:
        return f"shape {list(test.shape)} != {list(eager.shape)}"
    test = test.detach().to(eager.device)
    if not (eager.is_floating_point() or eager.is_complex()):
        bad = int((test != eager).sum())
        return f"{bad} of {eager.numel()} elements differ" if bad else ""
    rtol, atol = _CLOSE.get(str(eager.dtype).removeprefix("torch."), _CLOSE["float32"])  # a float8: float32's
    fp64 = fp64.detach() if isinstance(fp64, torch.Tensor) and fp64.shape == test.shape else None
    against = fp64.to(test.device, eager.dtype) if ref == "eager64" and fp64 is not None else eager
    close = torch.isclose(test, against, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return ""
    if rule == "close":
        why = "assert_close fails"
    elif fp64 is not None and not eager.is_complex():
        r = accuracy_rule(test, eager.detach(), fp64)
        if r.passed:
            return ""
        why = f"RMSE vs float64 {r.rmse_test:.3g} > {r.multiplier:g} x eager's {r.rmse_baseline:.3g}"
    else:
        why = "assert_close fails and there is no float64 run to judge by"
    i = int((~close).reshape(-1).nonzero()[0])
    return f"{int((~close).sum())} of {eager.numel()} elements differ ({why}; e.g. " \
           f"{complex(test.reshape(-1)[i]) if test.is_complex() else float(test.reshape(-1)[i]):.6g} vs " \
           f"{complex(against.reshape(-1)[i]) if test.is_complex() else float(against.reshape(-1)[i]):.6g})"


# torch.testing.assert_close's defaults, by dtype name: (rtol, atol)
_CLOSE = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
          "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def default_tolerances(*dtypes):
    """(atol, rtol): the loosest of assert_close's defaults for the dtypes (0, 0 for integers)."""
    pairs = [_CLOSE.get(str(d).removeprefix("torch."), (0.0, 0.0)) for d in dtypes]
    return max(p[1] for p in pairs), max(p[0] for p in pairs)


# -- a graph input as it was ------------------------------------------------------------------------


def is_leaf(t):
    """``t.is_leaf``, False where torch cannot say (what ``torch._subclasses.meta_utils.safe_is_leaf``
    answers, without its private import)."""
    try:
        return bool(t.is_leaf)
    except RuntimeError:
        return False


def as_input(t, requires_grad, leaf=True):
    """``t`` (its values) as a graph's input was in the script: requiring grad or not, and where it was
    no leaf (``leaf`` False, which needs ``requires_grad``), the output of a clone of a leaf that requires
    grad, with ``t``'s storage, offset, shape and strides (an expanded input stays expanded): PyTorch's
    ``InputReader.tensor`` fakes the autograd history the same way. A backend that refuses a non-leaf
    input (``non_leaf_compile_error_TESTING_ONLY``) refuses this one too. ``t`` is not copied: it is
    detached, so the caller's tensor keeps its own requires_grad."""
    import torch

    t = t.detach().requires_grad_(bool(requires_grad))
    if leaf or not requires_grad:
        return t
    with torch.enable_grad():
        out = t.clone(memory_format=torch.preserve_format)
    with torch.no_grad():
        out.set_(t.untyped_storage(), t.storage_offset(), t.shape, t.stride())
    return out


def make_tensor(shape, stride, dtype, device, lo=None, hi=None, g=None, values=None, offset=0, storage=0):
    """A tensor of ``shape`` in the script's layout: its ``stride`` and storage ``offset`` over a storage of
    at least ``storage`` elements (an expanded, overlapping, transposed or offset input stays one), as
    PyTorch's ``rand_strided`` and ``InputReader`` make it. ``values``: the real values (a tensor of
    ``shape``), each written where the layout puts it; else the storage drawn from generator ``g``:
    floats uniform in [lo, hi] (standard normal where no range is known), integers in [lo, hi], bools,
    complex numbers both of whose parts are standard normal. Capture's model files and every repro.py
    make their inputs with it."""
    n = max(storage, storage_reach(shape, stride, offset))
    flat = _drawn(n, dtype, lo, hi, g) if values is None else held(values, shape, stride, dtype, offset, n)
    return flat.to(device).as_strided(shape, stride, offset)


def held(values, shape, stride, dtype, offset=0, storage=0):
    """A storage of ``dtype`` (on the CPU) for the layout (:func:`make_tensor`'s) holding ``values`` (a tensor of
    ``shape``), each where the layout puts it, zeros elsewhere. An element the layout reaches twice held one value
    in the script, so either write leaves it."""
    import torch

    flat = torch.zeros(max(storage, storage_reach(shape, stride, offset)), dtype=dtype)
    flat[torch.arange(flat.numel()).as_strided(shape, stride, offset).reshape(-1)] = values.reshape(-1).to("cpu", dtype)
    return flat


def storage_reach(shape, stride, offset=0):
    """The elements of storage a layout reaches from the storage's start: its ``offset``, then one past its
    farthest element (nothing past the offset for an empty tensor). :func:`make_tensor` makes a storage this
    large; a script's storage larger than this (a slice of a larger tensor) is the one size capture's model
    files and minify's specs record beside shape, stride and offset."""
    return offset + (1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True)) if all(shape) else 0)


def _drawn(n, dtype, lo, hi, g):
    import torch

    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if dtype.is_complex or (dtype.is_floating_point and (lo is None or hi is None)):  # standard normal
        return torch.randn(n, generator=g, dtype=dtype if dtype.is_complex else torch.float64).to(dtype)
    if dtype.is_floating_point:
        return _uniform(n, dtype, lo, hi, g)
    lo = 0 if lo is None else int(lo)
    hi = lo + 1 if hi is None else max(int(hi), lo)
    return torch.randint(lo, hi + 1, (n,), generator=g, dtype=torch.int64).to(dtype)


def _uniform(n, dtype, lo, hi, g):
    """:func:`_drawn`'s floats of a known range: uniform in [lo, hi], drawn in float64, then rounded to ``dtype``."""
    import torch

    return (torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


# elements value_range reads at a time: its scratch (a mask and two selections) stays a few MB
RANGE_CHUNK = 1 << 18


def value_range(t):
    """(lo, hi) of ``t``'s finite values, ints for an integer tensor (None: it has none): the range a seeded
    input is drawn in (:func:`make_tensor`), so an index stays in bounds and a value a log reads stays
    positive; capture's model files and minify's specs record it. Read :data:`RANGE_CHUNK` elements at a time:
    the scratch stays a few MB however large ``t`` is (a filtered copy of a 512 MiB input cost a script 1.6 GB)."""
    import torch

    lo = hi = None
    floating = t.dtype.is_floating_point
    with torch.no_grad():
        for part in _range_chunks(t.detach(), RANGE_CHUNK):
            flat = part.reshape(-1)  # a copy of at most RANGE_CHUNK elements, where part is not contiguous
            if floating:
                finite = torch.isfinite(flat)
                if not bool(finite.any()):
                    continue
                a = float(torch.where(finite, flat, float("inf")).min())
                b = float(torch.where(finite, flat, float("-inf")).max())
            else:
                a, b = int(flat.min()), int(flat.max())
            lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
    return None if lo is None else (lo, hi)


def _range_chunks(t, limit):
    """Views of t covering it, each of at most ``limit`` elements (along its first dims)."""
    if t.numel() <= limit or t.dim() == 0:
        yield t
        return
    d = next(i for i, n in enumerate(t.shape) if n > 1)
    size = t.shape[d]
    row = t.numel() // size
    if row <= limit:
        step = max(1, limit // row)
        for i in range(0, size, step):
            yield t.narrow(d, i, min(step, size - i))
    else:
        for i in range(size):
            yield from _range_chunks(t.select(d, i), limit)


def copy_inputs(inputs, parameters=False):
    """Copies of the tensors of a pytree of inputs, each storage copied once, so inputs that shared one
    (``f(a, a[1])``) share the copy, with their offsets and strides, requires_grad and leaf or not kept
    (:func:`as_input`): a run that writes into its inputs leaves the originals as they were. A tensor
    with no plain storage (nested, sparse) is cloned on its own. An ``nn.Parameter`` stays itself, or with
    ``parameters`` is copied as the rest are (its storage shared with the other inputs' copies as it was),
    a Parameter again with its requires_grad: for a run that may write into a graph's parameter inputs."""
    import torch

    storages = {}

    def one(t):
        if isinstance(t, torch.nn.Parameter):
            return torch.nn.Parameter(one(t.detach()), requires_grad=t.requires_grad) if parameters else t
        if not isinstance(t, torch.Tensor):
            return t
        if t.layout != torch.strided or t.is_nested or t.is_conj() or t.is_neg():  # a view's bit set_ drops
            return t.clone()
        with torch.no_grad():
            key = (str(t.device), t.untyped_storage().data_ptr())
            if key not in storages:
                storages[key] = t.untyped_storage().clone()
            c = torch.empty(0, dtype=t.dtype, device=t.device)
            c.set_(storages[key], t.storage_offset(), t.shape, t.stride())
        return as_input(c, t.requires_grad, is_leaf(t))

    return tree_map(one, inputs)


# -- the loss of a training step ---------------------------------------------------------------------


def loss_of(leaves):
    """The sum of the means of ``leaves``' floating tensors that require grad (each mean in float32 or
    wider, so a half-precision output's does not overflow): every output gets a gradient, scaled so no
    output's size dominates. None where no leaf requires grad."""
    import torch

    parts = [t.float().mean() if t.dtype.itemsize < 4 else t.mean() for t in leaves
             if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]
    return sum(parts) if parts else None
