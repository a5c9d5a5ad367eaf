"""The test command's `suite` runs every package's tests in one pytest (noxfile), so a test module shares its xdist
worker with other packages' modules. This conftest, at the root, holds what that sharing needs and nothing else.

Each test module starts with torch's compiler settings (``torch._inductor.config``, ``torch._dynamo.config``) as they
were before it and leaves them so: torch itself changes them in place in a process that compiles (an AOT Inductor
compile writes ``aot_inductor.metadata``), and a later module of another package that reads the process's settings
(capture's boot collecting them, kdiff's) would read the leftover. Each package's own tests ran in a worker of
their own before, and `nox -s tests` still runs them so.
"""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(autouse=True, scope="module")
def _compiler_settings_put_back():
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    # save_config/load_config: torch's ConfigModule API (torch/utils/_config_module.py), on 2.11 and 2.13
    saved = [(c, c.save_config()) for c in (inductor_config, dynamo_config)]
    yield
    with warnings.catch_warnings():  # loading sets deprecated no-op settings back, each with a FutureWarning
        warnings.simplefilter("ignore")
        for config, state in saved:
            config.load_config(state)
