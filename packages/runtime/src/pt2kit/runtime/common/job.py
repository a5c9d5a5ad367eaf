"""The fields every worker job that loads a model shares; each tool's ``job.py`` adds its own.

A Job is the one typed form of a tool's options: ``cli.py`` builds it from the flags, the parent runs
it (:meth:`pt2kit.runtime.parent.session.Session.each_model`), the worker decodes the same Struct. Its
``__post_init__`` checks ranges, so a bad value is exit 2 before anything runs, in every tool alike.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import msgspec

from .caches import ENV
from .flags import check_seconds

if TYPE_CHECKING:
    from typing import Self

    from ..parent.piped import PipedModel


class ModelJob(msgspec.Struct, frozen=True, kw_only=True):
    model: str | None = None  # FILE.py[:NAME]; None: each `model` record on stdin
    device: str | None = None  # None: the record's, or cpu
    config: dict[str, str] = {}
    emit_model: bool = True  # False when the model record came down the pipe (it is forwarded already)
    from_stream: bool = False  # the model was named by a stream: the trust rules of pt2kit.runtime.parent.trust
    stream_config: bool = True  # take a piped model record's config (--no-config-from-stream: False)
    timeout: float | None = None  # the parent's limit on one model's worker, seconds
    # (2.3) the piped model record's label, which the worker's records name (`train.py[0/1]` for a graph
    # `pt2kit capture` took: its file is a blob named by its hash); None: the file's own (label_of)
    label: str | None = None
    # (2.45) the Inductor cache folder of the script that compiled the piped graph (its capture's `cache_dir`):
    # the worker compiles in it (its autotuning read back, not redone) unless the tool's environment named one
    # (`cache_given`: the user's choice wins) (:func:`pt2kit.runtime.common.caches.use_script_cache`)
    script_cache: str | None = None
    cache_given: bool = False

    def __post_init__(self) -> None:
        check_seconds("--timeout", self.timeout)

    def for_piped(self, model: PipedModel, **more: Any) -> Self:
        """(2.9) This job for one model a piped stream named (:func:`pt2kit.runtime.parent.piped.each_piped`): its
        file, device, config, label and script's cache folder, the stream's trust rules on, and no `model`
        record of its own (the stream's is forwarded already); ``more`` sets the tool's own fields, or overrides
        those (kdiff's mode from the record's ``train``, minify's config with the failing run's over the
        record's)."""
        captured = model.record.captured
        fields = {"model": model.spec, "device": model.device, "config": model.config, "label": model.label,
                  "script_cache": getattr(captured, "cache_dir", None), "cache_given": ENV in os.environ}
        return msgspec.structs.replace(self, **{**fields, **more}, emit_model=False, from_stream=True)
