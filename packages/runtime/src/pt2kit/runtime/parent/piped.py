"""The models a piped stream names: what ``fxcheck m.py | kdiff`` hands kdiff, read from stdin.

:func:`read_piped` reads stdin through the Session (each line forwarded to stdout as read) and yields
each line with, for a `model` record, its checked :class:`PipedModel`; :func:`each_piped` yields only
the models, each said on stderr. ``ModelJob.for_piped(model)`` (:mod:`..common.job`) is the one way a tool
turns one into the job its worker runs.

Guarantees: a stream is data (see :mod:`.trust`): a model file it names is checked before anything runs,
a record's config is merged under the command line's (which wins) after its unsafe keys are refused;
this tool's header is written at the first model record (so it names that record's device), before
the error line of a bad stream, or at the end when no model came. Not guaranteed: that the model file
is the one the upstream tool ran (it is read again, by path, when the worker runs it); that a stream
with no model record is an error (it is a warning, unless the upstream run said it crashed or failed).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from pt2kit.schema import Model, StreamError
from pt2kit.schema.stream import Line

from ..common.backends import inductor_options
from ..common.errors import UsageError
from ..common.text import summary_line
from .trust import check_model_file, stream_config_for, stream_settings

__all__ = ["PipedModel", "read_piped", "each_piped", "upstream_end", "piped", "piped_models", "piped_labelled"]


class PipedModel(msgspec.Struct, frozen=True, kw_only=True):
    """(2.9) A `model` record of a piped stream, checked: what a tool runs for it."""

    spec: str  # MODEL.py[:NAME], its file checked by the trust rules
    device: str | None  # the command line's --device, else the record's
    config: dict[str, str]  # the record's settings and config under the command line's, unsafe keys refused
    where: str  # source:line of the record (``<stdin>:2``)
    record: Model  # the record itself (pt2kit capture's ``captured``, ``train``)

    @property
    def label(self) -> str:
        """What the records a tool writes about it name, so a downstream tool finds the model record they
        belong to: ``m.py``, or ``train.py[0/1]`` for a graph ``pt2kit capture`` took (a blob named by its hash)."""
        return self.record.model

    @property
    def train(self) -> bool:
        """The record's ``train``: a tool upstream ran it as a training step."""
        return bool(self.record.train)

    def say(self, s: Any) -> None:
        """The stderr line every tool writes before it runs a model file a stream named."""
        s.say(f"{self.where}: running model file {self.spec} named by the stream")


def each_piped(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True
) -> Iterator[PipedModel]:
    """Each `model` record on stdin, checked and said on stderr, as it comes (``s``: the tool's Session;
    stdin is forwarded as read). Build its worker's job with ``job.for_piped(model)``."""
    for _, model in read_piped(s, device=device, hint=hint, config=config, stream_config=stream_config):
        if model is not None:
            model.say(s)
            yield model


def read_piped(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True,
    also: Sequence[type] = (),
) -> Iterator[tuple[Line, PipedModel | None]]:
    """Each line of stdin, forwarded as read, with its :class:`PipedModel` for a `model` record, for a tool
    that also wants other kinds (``also``); the tool says when it runs one (:meth:`PipedModel.say`).

    A stream is data (see :mod:`.trust`): each model file is checked before anything runs; the record's
    settings and config are merged under ``config`` (the command line's, which wins) after its unsafe
    keys are refused, or dropped when ``stream_config`` is False. This tool's header comes at the first
    model record, with its device (``device`` or the record's), so the upstream lines before it are
    forwarded first; warns when no model came."""
    lines = s.read(["-"], want=[Model, *also], hint=hint)
    models = 0
    cli = dict(config or {})
    last: Line | None = None
    for line in _header_before_errors(s, lines, device, cli):
        last = line
        model = None
        if line.kind == "model" and line.record is not None:
            models += 1
            if not s.header_written:  # its part starts here, so the header can name the device
                s.begin(device=device or line.record.device, config=cli)
            model = _checked(s, line, device, cli, stream_config)
        elif line.kind == "header" and getattr(line.record, "traces", None) and line.kind in {
                k.__struct_config__.tag for k in also}:
            # pt2kit capture's traces of processes that kept no graph: work for a tool that reads them
            models += 1
            if not s.header_written:
                s.begin(device=device, config=cli)
        yield line, model
    if not models:
        s.begin(device=device, config=cli)
        ended = upstream_end(last)
        if ended:
            raise UsageError(f"no model record on stdin to work on: {ended}")
        s.warn("no model records on stdin: nothing to do")


def _checked(s: Any, line: Line, device: str | None, cli: dict[str, str], stream_config: bool) -> PipedModel:
    m = line.record
    where = f"{line.source}:{line.lineno}"
    spec = check_model_file(m.file, m.entry, where)
    # the script's torch.compile(options=...) for Inductor are settings it compiled under
    settings, dropped = stream_settings({**(m.settings or {}), **inductor_options(m.captured)})
    if dropped and stream_config:
        s.say(f"{where}: not taking {', '.join(dropped)} from the model record's settings: a stream "
              "may not set them (the model file sets its own again when it runs)")
    cfg = stream_config_for({**settings, **(m.config or {})}, dict(cli), where, use=stream_config)
    if m.config and not stream_config:
        s.say(f"{where}: ignoring the model record's config ({', '.join(sorted(m.config))}): "
              "--no-config-from-stream")
    return PipedModel(spec=spec, device=device or m.device, config=cfg, where=where, record=m)


# -- the tuple forms, for tools released before 2.9 (benchrun 0.3.0 calls Session.piped_models, 0.3.1
# piped_labelled; kdiff 2.4.0, guardscan 2.1.1 and minify 0.5.0 Session.piped): thin views of the above,
# until runtime 3.0 --
def piped_models(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True
) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(spec, device, config) of each :func:`each_piped` model."""
    for m in each_piped(s, device=device, hint=hint, config=config, stream_config=stream_config):
        yield m.spec, m.device, m.config  # type: ignore[misc]


def piped_labelled(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True
) -> Iterator[tuple[str, str, dict[str, str], str]]:
    """(spec, device, config, label) of each :func:`each_piped` model."""
    for m in each_piped(s, device=device, hint=hint, config=config, stream_config=stream_config):
        yield m.spec, m.device, m.config, m.label  # type: ignore[misc]


def piped(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True,
    also: Sequence[type] = (),
) -> Iterator[tuple[Line, tuple[str, str, dict[str, str], str] | None]]:
    """:func:`read_piped`, each model as (spec, device, config, where)."""
    for line, m in read_piped(s, device=device, hint=hint, config=config, stream_config=stream_config, also=also):
        yield line, None if m is None else (m.spec, m.device, m.config, m.where)  # type: ignore[misc]


def _header_before_errors(s: Any, lines: Iterator[Line], device: str | None,
                          config: dict[str, str]) -> Iterator[Line]:
    """``lines``, with this tool's header written before a bad line's error ends the stream."""
    try:
        yield from lines
    except StreamError:
        if not s.header_written:
            s.begin(device=device, config=config)
        raise


def upstream_end(last: Line | None) -> str | None:
    """Why a stream with no model record has none, when its last line says: a tool upstream crashed or
    stopped with an error before it wrote one (``kdiff m.py | minify`` after kdiff died at load)."""
    if last is None or last.kind not in ("crash", "error"):
        return None
    try:
        r = msgspec.json.decode(last.raw)
    except msgspec.DecodeError:
        return None
    where = f"{last.source}:{last.lineno}"
    if last.kind == "crash":
        # an error is one line: a many-line message is said by its summary line
        why = ": ".join(str(x) for x in (r.get("exception") or r.get("signal"), summary_line(r.get("message") or "")) if x)
        return (f"{where}: the run upstream crashed during {r.get('stage') or 'its work'}"
                + (f" of {r['model']}" if r.get("model") else "") + (f" ({why})" if why else "")
                + " before writing one")
    return f"{where}: the run upstream stopped with an error before writing one ({r.get('message')})"
