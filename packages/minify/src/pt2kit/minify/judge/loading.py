"""What a query and its repro load before they judge: the user's files (a backend, a pass handed over as
``--config HOOK=FILE.py:NAME``) and the config a candidate compiles under; ``Untestable``, what a repro
that cannot judge here raises (exit :data:`UNTESTABLE`). Split from :mod:`.harness`, which runs the sides.

Imports only the standard library besides pt2kit_portable (torch's config modules by name, where a config
is applied): a repro embeds by source what of it its check reaches (:mod:`..parent.embed`), and only a config that
holds code reaches the file loading (:func:`apply_code_config`), only one that holds a decomposition Inductor's
table (:func:`apply_decomposing_config`); :func:`apply_config` alone otherwise.
"""

import contextlib
import importlib
import importlib.util
import os

from pt2kit_portable import exception_line, installed_decompositions, kept_compiler_state

UNTESTABLE = 125  # what `git bisect run` reads as "this revision cannot be tested": neither good nor bad


class Untestable(Exception):
    """The repro cannot judge the failure here: no such device, no backend file, a graph eager cannot run."""


CODE = "pt2kit:code"  # a setting's value ("pt2kit:code", FILE, NAME): the pass NAME of FILE (--config HOOK=FILE.py:NAME)
# a config's key that is no config module: {"aten.silu.default": a decomposition}, put into Inductor's table (a
# model file's top level installed it: minify's filecode)
DECOMPOSITIONS = "torch._inductor.decomposition"
_loaded_code = {}


def load_file_attr(path, name, what):
    """NAME of the Python file at ``path``, run as a module (its ``__main__`` block not): the user's
    ``what`` (a backend, a pass); Untestable in one line where the file is missing, does not load or lacks it.
    What its top level does to the compiler's settings and Inductor's decomposition table is put back
    (pt2kit_portable's kept_compiler_state): a script that sets ``post_grad_custom_post_pass`` there would
    otherwise keep its pass on in every later compile of the process, where the repro's CONFIG says which
    settings it runs under, and a warm worker judges candidates without it as failing all the same."""
    if not os.path.isfile(path):
        raise Untestable(f"the {what} file {path} is missing")
    try:
        spec = importlib.util.spec_from_file_location(f"{what}_file", path)
        mod = importlib.util.module_from_spec(spec)
        with kept_compiler_state():
            spec.loader.exec_module(mod)
    except Exception as e:
        raise Untestable(f"the {what} file {path} does not load: {exception_line(e)}") from None
    if not callable(getattr(mod, name, None)):
        raise Untestable(f"the {what} file {path} has no {what} {name}")
    return getattr(mod, name)


def load_code(path, name):
    """The pass a hook setting was handed on minify's command line (--config HOOK=FILE.py:NAME), loaded
    once a process."""
    if (path, name) not in _loaded_code:
        _loaded_code[(path, name)] = load_file_attr(path, name, "pass")
    return _loaded_code[(path, name)]


def is_code(value):
    """Whether a setting's value is code handed over as FILE.py:NAME (("pt2kit:code", FILE, NAME))."""
    return isinstance(value, tuple) and len(value) == 3 and value[0] == CODE


def apply_config(config):
    """{module: {key: value}} (torch._inductor.config ...), as context managers; a config that puts a
    decomposition into Inductor's table (DECOMPOSITIONS) is :func:`apply_decomposing_config`'s."""
    stack = contextlib.ExitStack()
    for module, settings in config.items():
        stack.enter_context(importlib.import_module(module).patch(settings))
    return stack


def apply_decomposing_config(config):
    """:func:`apply_config`, the decompositions under DECOMPOSITIONS put into Inductor's table for as long
    (a repro carries the table's code only where its config holds one: :func:`.plan.sides`)."""
    stack = contextlib.ExitStack()
    if DECOMPOSITIONS in config:
        stack.enter_context(installed_decompositions(config[DECOMPOSITIONS]))
    stack.enter_context(apply_config({m: s for m, s in config.items() if m != DECOMPOSITIONS}))
    return stack


def apply_code_config(config):
    """:func:`apply_decomposing_config`, each value ("pt2kit:code", FILE, NAME) first loaded as that code
    (:func:`load_code`)."""
    return apply_decomposing_config({module: {k: load_code(v[1], v[2]) if is_code(v) else v
                                              for k, v in settings.items()} for module, settings in config.items()})
