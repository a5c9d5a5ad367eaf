"""``--config KEY=VALUE``: settings of torch._inductor.config and torch._dynamo.config.

``KEY`` is a dotted name as the config module spells it (``cpp.inject_relu_bug_TESTING_ONLY``,
``trace.provenance_tracking_level``). Prefix ``inductor.``, ``dynamo.``, ``functorch.`` or ``fx.``
(``torch.fx.experimental._config``) to pick the module; without a prefix Inductor's is tried first,
then Dynamo's. VALUE is converted to the type of the current value (``true``/``false``/``1``/``0``
for booleans, Python literals for lists).

:func:`worker_settings` is the other direction: what the process has now (the model file's own
settings, the environment's, ``--config``), as ``KEY=VALUE`` text that :func:`apply_config` takes back.

Guarantees: a typed value crosses a process boundary as :func:`literal` text and comes back from
:func:`from_literal` equal and of the same types, nested ones included (``inf`` and NaN too) (JSON would turn a tuple into a
list, and Inductor prints ``cpp.cxx`` into its error: the failure's text would change with it); a
setting :func:`worker_settings` collects is written the same way (a string bare), so a tuple a model
file set is a tuple again where it is applied.
"""

from __future__ import annotations

import difflib
import os
import sys
from contextlib import ExitStack
from typing import Any

from pt2kit.schema.store import store_root
from pt2kit_portable import CONFIG_MODULES as MODULES
from pt2kit_portable import SettingError, coerce_setting, collect_settings, from_literal, kept_compiler_state, literal

from ..shims.torchapi import VEC_ISA_SETTINGS, config_module, forget_vec_isa
from .errors import UsageError

__all__ = ["MODULES", "apply_config", "config_keys", "from_literal", "kept_settings", "literal", "parse_config",
           "resolve", "worker_settings"]


def parse_config(items: list[str] | None) -> dict[str, str]:
    """Split ``KEY=VALUE`` strings; needs no torch."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config {item!r}: expected KEY=VALUE, e.g. cpp.inject_relu_bug_TESTING_ONLY=accuracy")
        out[key.strip()] = value.strip()
    return out


def config_keys(module: Any) -> dict[str, Any]:
    """Every setting of a torch config module, by dotted name (the one private-ish API used here)."""
    return module.get_config_copy()


def _coerce(key: str, raw: str, current: Any) -> Any:
    """``raw`` as a value of ``current``'s type (pt2kit_portable's rule, the one capture's boot collects by)."""
    try:
        return coerce_setting(key, raw, current)
    except SettingError as e:
        raise UsageError(str(e)) from None


def resolve(cfg: dict[str, str]) -> list[tuple[Any, str, Any]]:
    """(config module, key, typed value) for each setting; UsageError for unknown keys."""
    modules = {name: config_module(path) for name, path in MODULES.items()}
    keys = {name: config_keys(m) for name, m in modules.items()}
    out = []
    for key, raw in cfg.items():
        prefix, _, rest = key.partition(".")
        if prefix in modules and rest in keys[prefix]:
            candidates = [(prefix, rest)]
        else:
            candidates = [(n, key) for n in ("inductor", "dynamo", "functorch", "fx") if key in keys[n]]
        if not candidates:
            every = [k for ks in keys.values() for k in ks]
            close = difflib.get_close_matches(rest if prefix in modules else key, every, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UsageError(f"--config {key}: no such setting in torch._inductor.config or torch._dynamo.config{hint}")
        name, k = candidates[0]
        if is_hook(modules[name], k) and raw.lower() not in ("none", "null", ""):
            out.append((modules[name], k, hook_value(key, raw)))
            continue
        out.append((modules[name], k, _coerce(key, raw, keys[name][k])))
    return out


def is_hook(module: Any, key: str) -> bool:
    """Whether a setting holds code the compiler calls (``post_grad_custom_post_pass``, ``joint_custom_post_pass``
    ...): a pass torch's own repro writer leaves out (``_save_config_ignore``) whose default is None (Dynamo's
    ``repro_after``, also left out, is a word)."""
    return key in getattr(module, "_save_config_ignore", ()) and "pass" in key and module._config[key].default is None


def hook_value(key: str, raw: str) -> Any:
    """The code ``--config KEY=FILE.py:NAME`` (or ``module:attr``) hands over for a hook setting, loaded as a
    ``--backend FILE.py:NAME`` is (the file run as a module, its ``if __name__ == "__main__":`` block not):
    only from the command line, since a stream's value for a hook is refused (:mod:`..parent.trust`)."""
    from .pyfile import backend_callable

    if ":" not in raw:
        raise UsageError(f"--config {key}={raw}: {key} holds code; give FILE.py:NAME (a function or pass object)")
    return backend_callable(raw, f"--config {key}=", what="function or pass object")


# Settings that make torch write files into its debug folder (``dynamo.debug_dir_root``, by default
# ./torch_compile_debug in the working directory): Inductor's debug trace (FX graphs, IR, output code,
# cProfile, autotuning results, provenance), the minifier scripts Dynamo's repro_after writes, Dynamo's
# error recordings, AOTInductor's minifier, Triton's proton traces.
DEBUG_WRITERS = {
    "inductor": ("trace.enabled", "trace.compile_profile", "trace.log_autotuning_results",
                 "trace.provenance_tracking_level", "aot_inductor.dump_aoti_minifier", "triton.proton_profiling"),
    "dynamo": ("repro_after", "replay_record_enabled"),
}
# where the user chose that folder: it is theirs then
_DEBUG_DIR_KEYS = {("dynamo", "debug_dir_root"), ("inductor", "trace.debug_dir")}
DEBUG_DIR_ENV = "TORCH_COMPILE_DEBUG_DIR"
_said: set[str] = set()


def _debug_root(resolved: list[tuple[Any, str, Any]]) -> dict[str, Any] | None:
    """``{"debug_dir_root": <store>/torch_compile_debug}`` when the settings turn on a debug file writer
    (:data:`DEBUG_WRITERS`) and nobody chose where its files go (no debug folder setting among them, no
    $TORCH_COMPILE_DEBUG_DIR): a record's settings or --config never write into the working directory."""
    names = {id(config_module(path)): name for name, path in MODULES.items()}
    named = [(names.get(id(module)), key, value) for module, key, value in resolved]
    if any((name, key) in _DEBUG_DIR_KEYS for name, key, _ in named) or os.environ.get(DEBUG_DIR_ENV):
        return None
    writers = [f"{name}.{key}" for name, key, value in named if value and key in DEBUG_WRITERS.get(name or "", ())]
    if not writers:
        return None
    root = store_root().absolute() / "torch_compile_debug"
    if writers[0] not in _said:  # once a process: a minify search applies the same settings many times
        _said.add(writers[0])
        print(f"note: {writers[0]} writes debug files: into {root}, not the working directory "
              "(--config dynamo.debug_dir_root=DIR puts them elsewhere)", file=sys.stderr, flush=True)
    return {"debug_dir_root": str(root)}


def apply_config(cfg: dict[str, str]) -> ExitStack:
    """Apply the settings; closing the returned stack restores them. A setting that writes debug files
    writes them under the store (:func:`_debug_root`), never into the working directory."""
    stack = ExitStack()
    resolved = resolve(cfg)
    # Inductor's vector ISA, cached per process, is picked again under these settings, and again once
    # they are put back (the callback runs after every patch is undone)
    isa = any(m is config_module(MODULES["inductor"]) and k in VEC_ISA_SETTINGS for m, k, _ in resolved)
    if isa:
        stack.callback(forget_vec_isa)
    for module, key, value in resolved:
        stack.enter_context(module.patch({key: value}))
    if isa:
        forget_vec_isa()
    debug = _debug_root(resolved)
    if debug:
        stack.enter_context(config_module(MODULES["dynamo"]).patch(debug))
    return stack


def worker_settings() -> dict[str, str]:
    """Every setting of the dynamo, inductor, functorch and fx configs that is not at its default in
    this process, whoever set it (a model file at module level, an environment variable torch reads
    through its ``Config`` entries, ``--config``; one a config module reads into its default at import,
    as ``TORCHINDUCTOR_FREEZING``, is that default here as in torch's own repro writer), as ``{"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}``: what
    ``torch._dynamo.debug_utils.generate_config_string`` writes into PyTorch's own repros, less what it
    skips, less machine-specific settings and values that do not survive as text
    (``pt2kit_portable.collect_settings``, which capture's boot runs in the user's script too)."""
    out = collect_settings({name: config_module(path) for name, path in MODULES.items()})
    # where this machine writes debug files: not the graph's
    return {k: v for k, v in out.items() if tuple(k.split(".", 1)) not in _DEBUG_DIR_KEYS}


class kept_settings(kept_compiler_state):  # a context manager, named as one is used
    """Settings changed inside the block (a model file run at module level), and Inductor's decomposition table,
    are put back on leaving it (pt2kit_portable's kept_compiler_state), so a warm worker that loaded one model
    file judges the next candidate under its own config only; Inductor picks its vector ISA again where the
    block changed the settings it is picked by."""

    def __exit__(self, *exc: object) -> bool:
        super().__exit__(*exc)
        if any(c.partition(".")[2] in VEC_ISA_SETTINGS for c in self.changed if c.startswith("inductor.")):
            forget_vec_isa()
        return False
