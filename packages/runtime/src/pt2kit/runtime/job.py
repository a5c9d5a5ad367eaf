"""The fields every worker job that loads a model shares; each tool's ``job.py`` adds its own.

A Job is the one typed form of a tool's options: ``cli.py`` builds it from the flags, the parent runs
it (:meth:`pt2kit.runtime.session.Session.each_model`), the worker decodes the same Struct. Its
``__post_init__`` checks ranges, so a bad value is exit 2 before anything runs, in every tool alike.
"""

from __future__ import annotations

import msgspec

from .flags import check_seconds


class ModelJob(msgspec.Struct, frozen=True, kw_only=True):
    model: str | None = None  # FILE.py[:NAME]; None: each `model` record on stdin
    device: str | None = None  # None: the record's, or cpu
    config: dict[str, str] = {}
    emit_model: bool = True  # False when the model record came down the pipe (it is forwarded already)
    from_stream: bool = False  # the model was named by a stream: the trust rules of pt2kit.runtime.trust
    stream_config: bool = True  # take a piped model record's config (--no-config-from-stream: False)
    timeout: float | None = None  # the parent's limit on one model's worker, seconds
    # (2.3) the piped model record's label, which the worker's records name (`train.py[0/1]` for a graph
    # `pt2kit capture` took: its file is a blob named by its hash); None: the file's own (label_of)
    label: str | None = None

    def __post_init__(self) -> None:
        check_seconds("--timeout", self.timeout)
