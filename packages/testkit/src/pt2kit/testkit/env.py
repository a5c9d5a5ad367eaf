"""The environment a tool started by a test should get: the test run's own, as it was before any test ran.

An Inductor compile inside the test process (a test's own verdict: ``torch.compile``, PyTorch's ``same()``)
writes into ``os.environ``: ``TORCHINDUCTOR_CACHE_DIR`` where it was unset, and
``_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR`` (an address in that process, set before each C++ module loads).
A tool or repro handed that environment is one the run's fork server refuses (what torch read at import
would differ), so each started a fresh Python instead: in one run of tests/real, "forked 0, refused 42".

Guaranteed: :func:`start_env` is ``os.environ`` as it was when this module was first imported (a
conftest imports testkit before any test runs), plus the caller's overrides.
"""

from __future__ import annotations

import os

_START = dict(os.environ)


def start_env(**extra: str) -> dict[str, str]:
    """A copy of the environment the test run started with, updated with ``extra``."""
    return {**_START, **extra}
