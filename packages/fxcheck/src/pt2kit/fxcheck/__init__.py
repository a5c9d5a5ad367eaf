"""fxcheck: capture every graph a model compiles to and check it against an accelerator's capabilities.

Library use::

    import pt2kit.fxcheck as fxcheck
    be = fxcheck.backend("npu-bf16", strict=False, align=16)
    torch.compile(model, backend=be)(x)
    be.findings  # violation records

For tools built on fxcheck (minify's constraint repros): ``resolve_profile(name_or_file, flags)`` reads a
profile as the command does, ``flags`` a ``ProfileFlags`` (the profile flags, typed: None is not given);
``parse_dtypes(text, flag)`` reads --dtypes; ``graph_view(gm, phase)`` is the
checked view of an aten graph and ``run_checks(view, profile)`` its violations.

Importing this package does not import torch; each name imports it when first used.
"""

from pt2kit.runtime.api import exports

__version__ = "1.7.6"

_PUBLIC = {"backend": ".checker", "resolve_profile": ".profiles:resolve", "parse_dtypes": ".profiles",
           "graph_view": ".graphview:build", "run_checks": ".checks", "ProfileFlags": ".job"}
__all__ = ["__version__", *_PUBLIC]
__getattr__, __dir__ = exports(__name__, _PUBLIC)
