"""The models a piped stream names: what ``fxcheck m.py | kdiff`` hands kdiff, read from stdin.

:func:`piped` reads stdin through the Session (each line forwarded to stdout as read) and yields each
line with, for a `model` record, its checked (spec, device, config, where); :func:`piped_models` only
the models. A tool calls them as ``s.piped(...)`` / ``s.piped_models(...)``, which delegate here.

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

from pt2kit.schema import Model, StreamError
from pt2kit.schema.stream import Line

from .backends import inductor_options
from .errors import UsageError
from .trust import check_model_file, stream_config_for, stream_settings

__all__ = ["piped", "piped_models", "piped_labelled", "upstream_end"]


def piped_models(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True
) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(spec, device, config) of each `model` record on stdin, which is forwarded as read (``s``: the
    tool's Session).

    A stream is data (see :mod:`.trust`): each model file is checked before anything runs and
    named on stderr; the record's config is merged under ``config`` (the command line's, which
    wins) after its unsafe keys are refused, or dropped when ``stream_config`` is False. This tool's
    header comes at the first model record, with its device (``device`` or the record's), so the
    upstream lines before it are forwarded first; warns when no model came.
    """
    for spec, dev, cfg, _ in piped_labelled(s, device=device, hint=hint, config=config, stream_config=stream_config):
        yield spec, dev, cfg


def piped_labelled(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True
) -> Iterator[tuple[str, str, dict[str, str], str]]:
    """:func:`piped_models`, each with the record's own label (``m.py``, or ``train.py[0/1]`` for a graph
    ``pt2kit capture`` took, whose file is a blob named by its hash): what the records a tool writes
    about it name, so a downstream tool finds the model record they belong to."""
    for line, model in piped(s, device=device, hint=hint, config=config, stream_config=stream_config):
        if model is not None:
            s.say(f"{model[3]}: running model file {model[0]} named by the stream")
            yield model[0], model[1], model[2], line.record.model  # type: ignore[union-attr]


def piped(
    s: Any, *, device: str | None, hint: str, config: dict[str, str] | None = None, stream_config: bool = True,
    also: Sequence[type] = (),
) -> Iterator[tuple[Line, tuple[str, str, dict[str, str], str] | None]]:
    """:func:`piped_models`'s reading, for a tool that also wants other kinds (``also``): each line
    with, for a model record, its checked (spec, device, config, where); the tool says when it
    runs one."""
    lines = s.read(["-"], want=[Model, *also], hint=hint)
    models = 0
    cli = dict(config or {})
    last: Line | None = None
    for line in _header_before_errors(s, lines, device, cli):
        last = line
        model = None
        if line.kind == "model" and line.record is not None:
            models += 1
            m = line.record
            where = f"{line.source}:{line.lineno}"
            if not s.header_written:  # its part starts here, so the header can name the device
                s.begin(device=device or m.device, config=cli)
            spec = check_model_file(m.file, m.entry, where)
            # the script's torch.compile(options=...) for Inductor are settings it compiled under
            settings, dropped = stream_settings({**(m.settings or {}), **inductor_options(m.captured)})
            if dropped and stream_config:
                s.say(f"{where}: not taking {', '.join(dropped)} from the model record's settings: a stream "
                  "may not set them (the model file sets its own again when it runs)")
            cfg = stream_config_for({**settings, **(m.config or {})}, dict(config or {}), where, use=stream_config)
            if m.config and not stream_config:
                s.say(f"{where}: ignoring the model record's config ({', '.join(sorted(m.config))}): "
                  "--no-config-from-stream")
            model = (spec, device or m.device, cfg, where)
        yield line, model
    if not models:
        s.begin(device=device, config=cli)
        ended = upstream_end(last)
        if ended:
            raise UsageError(f"no model record on stdin to work on: {ended}")
        s.warn("no model records on stdin: nothing to do")


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
    import msgspec

    try:
        r = msgspec.json.decode(last.raw)
    except msgspec.DecodeError:
        return None
    where = f"{last.source}:{last.lineno}"
    if last.kind == "crash":
        why = ": ".join(str(x) for x in (r.get("exception") or r.get("signal"), r.get("message")) if x)
        return (f"{where}: the run upstream crashed during {r.get('stage') or 'its work'}"
                + (f" of {r['model']}" if r.get("model") else "") + (f" ({why})" if why else "")
                + " before writing one")
    return f"{where}: the run upstream stopped with an error before writing one ({r.get('message')})"
