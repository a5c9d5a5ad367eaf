"""Reading and writing the NDJSON record stream.

Guarantees:

* Lines are read from files, directories of ``*.ndjson``/``*.jsonl`` files or stdin (``-``) as the
  data arrives: nothing waits for more input than is there, so a tool works on a live pipe.
* Every line gets its envelope (``kind``, ``v``, ``run``) checked; only the kinds a tool asks for
  are decoded in full. A line of a kind this package does not know is yielded with ``record=None``
  and its bytes untouched, so it can be forwarded byte for byte.
* A bad line stops the read with :class:`StreamError`, whose message is one line naming the
  source, the line number and (for a record that does not fit its kind) the field path. Lines
  yielded before it were complete and valid.
* No line is longer than the line cap, :data:`LINE_CAP` (256 MiB) or ``$PT2KIT_LINE_CAP`` (bytes,
  or with a K/M/G suffix: binary units). A longer one (``/dev/zero``, a binary file, a writer gone
  mad) stops the read with ``FILE:LINE: line longer than ...`` as soon as its pieces pass the cap, so a
  reader holds at most about the cap in memory whatever it is given; it does not read on to the end.
* A record of a newer major stops the read with :class:`NewerSchemaError`; an older major is
  upgraded through :mod:`.migrations`.
* :class:`RecordWriter` writes one record per line and flushes after each record it makes, so a
  reader downstream sees it at once and a killed tool leaves only whole lines behind.

Not guaranteed: memory bounded by anything but the line cap (a reader holds a whole line, so a
line just under the cap costs about the cap, once per reader); durability (a flush hands the line
to the OS, no fsync); a writer's line arriving whole when another process appends to the same file
without a lock (lines past the pipe buffer's atomic size may interleave).
"""

from __future__ import annotations

import os
import re
import secrets
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec

from . import migrations
from .records import KINDS, SCHEMA_MAJOR, AnyRecord, Record

STREAM_SUFFIXES = (".ndjson", ".jsonl")
LINE_CAP = 256 * 1024 * 1024
LINE_CAP_ENV = "PT2KIT_LINE_CAP"

R = TypeVar("R", bound=Record)


class StreamError(Exception):
    """Bad input on a stream: the message is one line, ready for a user."""


class NewerSchemaError(StreamError):
    """A record was written with a newer schema major than this package reads."""


class _Envelope(msgspec.Struct):
    kind: str
    v: int
    run: str


_envelope = msgspec.json.Decoder(_Envelope)
_decoders = {kind: msgspec.json.Decoder(cls) for kind, cls in KINDS.items()}
_any = msgspec.json.Decoder(AnyRecord)


@dataclass(slots=True)
class Line:
    """One line of a stream (``raw`` without its newline). ``record`` is set when its kind was asked for."""

    raw: bytes
    kind: str
    v: int
    run: str
    source: str
    lineno: int
    record: Any = None

    @property
    def known(self) -> bool:
        return self.kind in KINDS


def _newer_message(where: str, v: int) -> str:
    return (
        f"{where}: record of schema v{v}, but this pt2kit-schema reads v{SCHEMA_MAJOR}; "
        f"upgrade with: pip install -U 'pt2kit-schema>={v}.0' (and the pt2kit tools)"
    )


def _envelope_error(raw: bytes, where: str, e: Exception) -> StreamError:
    if isinstance(e, UnicodeDecodeError):
        return StreamError(f"{where}: invalid UTF-8 at byte {e.start} of the line")
    if isinstance(e, msgspec.ValidationError):
        return StreamError(f"{where}: not a pt2kit record: {e}")
    if "truncated" in str(e):
        return StreamError(f"{where}: truncated line (was the writer killed mid-line?)")
    return StreamError(f"{where}: not JSON: {e}")


def decode_line(raw: bytes, source: str, lineno: int, want: frozenset[str] | None) -> Line | None:
    """Check one line's envelope and decode it in full when its kind is in ``want`` (None: all known).

    Returns None for a blank line.
    """
    if raw[:1] != b"{" and not raw.strip():
        return None
    try:
        env = _envelope.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:  # ValidationError is a DecodeError too
        raise _envelope_error(raw, f"{source}:{lineno}", e) from None
    kind, v = env.kind, env.v
    line = Line(raw, kind, v, env.run, source, lineno)
    if v != SCHEMA_MAJOR:
        where = f"{source}:{lineno}"
        if v > SCHEMA_MAJOR:
            raise NewerSchemaError(_newer_message(where, v))
        if v < migrations.oldest_readable():
            raise StreamError(
                f"{where}: record of schema v{v} is older than any this pt2kit-schema can upgrade "
                f"(oldest: v{migrations.oldest_readable()})"
            )
    if kind in KINDS and (want is None or kind in want):
        try:
            if v == SCHEMA_MAJOR:
                line.record = _decoders[kind].decode(raw)
            else:
                obj = migrations.upgrade(msgspec.json.decode(raw))
                line.record = msgspec.convert(obj, KINDS[obj["kind"]])
        except msgspec.ValidationError as e:
            raise StreamError(f"{source}:{lineno}: invalid `{kind}` record: {e}") from None
        except UnicodeDecodeError as e:  # msgspec checks UTF-8 only inside the strings it decodes
            raise _envelope_error(raw, f"{source}:{lineno}", e) from None
    return line


def expand_sources(sources: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Files stay, ``-`` is stdin, a directory gives its stream files in name order."""
    out: list[str] = []
    for s in sources:
        s = os.fspath(s)
        if s == "-":
            out.append(s)
            continue
        p = Path(s)
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*") if f.suffix in STREAM_SUFFIXES and f.is_file())
            if not found:
                raise StreamError(f"{s}: directory holds no *.ndjson or *.jsonl stream")
            out.extend(found)
        elif not p.exists():
            raise StreamError(f"{s}: no such file")
        else:
            out.append(s)
    return out


BLOCK = 1 << 16
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def line_cap() -> int:
    """The longest line a reader takes, in bytes: ``$PT2KIT_LINE_CAP`` when set, else :data:`LINE_CAP`."""
    text = os.environ.get(LINE_CAP_ENV, "").strip()
    if not text:
        return LINE_CAP
    m = re.fullmatch(r"(\d{1,15}) ?([KMG]?)(?:i?B)?", text, re.IGNORECASE)
    if m and int(m.group(1)) > 0:
        return int(m.group(1)) * _UNITS[m.group(2).upper()]
    raise StreamError(f"{LINE_CAP_ENV}={text!r}: expected a size in bytes > 0, e.g. 268435456, 512M or 1G")


def _cap_text(cap: int) -> str:
    for unit in ("G", "M", "K"):
        if cap % _UNITS[unit] == 0:
            return f"{cap // _UNITS[unit]} {unit}iB"
    return f"{cap} bytes"


class _Overlong(Exception):
    """A line passed the cap (read_stream, which counts the lines, names it)."""


def _blocks(source: str, stdin: IO[bytes] | None, cap: int = LINE_CAP) -> Iterator[tuple[bytes, list[bytes]]]:
    """(bytes of whole lines, those lines without their newlines), as the data arrives.

    ``read1`` returns what is there without waiting for a full block, so a live pipe is read as it
    is written, while a file is read a block at a time: one forward write per block, not per line.
    A line longer than ``cap`` raises :class:`_Overlong` once its pieces pass it: the count is kept
    per block, never per line (a read is at most ``cap`` bytes, so a line inside one cannot pass it).
    """
    if source == "-":
        f: Any = stdin if stdin is not None else sys.stdin.buffer
        close = False
    else:
        try:
            f = open(source, "rb")
        except OSError as e:
            raise StreamError(f"{source}: cannot read: {e.strerror}") from None
        close = True
    read = getattr(f, "read1", f.read)
    size = min(BLOCK, cap)
    # A line longer than a block arrives in pieces: keep them in a list and join once, at its newline
    # (``pending += data`` copied the whole line again for every block: quadratic in its length).
    # ``held`` counts their bytes, so an endless line stops at the cap instead of filling memory.
    pending: list[bytes] = []
    held = 0
    try:
        while True:
            data = read(size)
            if not data:
                if pending:
                    last = b"".join(pending)
                    yield last + b"\n", [last]
                return
            end = data.rfind(b"\n")
            if end < 0:
                pending.append(data)
                held += len(data)
                if held > cap:
                    raise _Overlong()
                continue
            if pending:
                if held + data.find(b"\n") > cap:
                    raise _Overlong()
                pending.append(data[: end + 1])
                block = b"".join(pending)
                pending = []
            else:
                block = data[: end + 1]
            held = len(data) - end - 1
            if held:
                pending.append(data[end + 1 :])
            lines = block.split(b"\n")
            lines.pop()
            yield block, lines
    finally:
        if close:
            f.close()


def read_stream(
    sources: Iterable[str | os.PathLike[str]] = ("-",),
    *,
    want: Iterable[type[Record] | str] | None = None,
    forward: IO[bytes] | None = None,
    stdin: IO[bytes] | None = None,
) -> Iterator[Line]:
    """Yield each non-blank line of the sources, in order.

    ``want``: the record types (or kind names) to decode in full; None decodes every known kind.
    ``forward``: when given, valid lines are written there byte for byte (a last line missing its
    newline gets one), each block of lines before any line of it is yielded; at a bad line the
    lines before it are forwarded and yielded, then :class:`StreamError` is raised. A line past
    :func:`line_cap` is a bad line.
    """
    cap = line_cap()
    wanted = None
    if want is not None:
        wanted = frozenset(w if isinstance(w, str) else w.__struct_config__.tag for w in want)
    decoders = {k: d for k, d in _decoders.items() if wanted is None or k in wanted}
    env_decode = _envelope.decode
    any_decode = _any.decode
    write = forward.write if forward is not None else None
    # Written out, without a helper call per line: this loop is the pass-through hot path.
    for source in expand_sources(sources):
        name = "<stdin>" if source == "-" else source
        lineno = 0
        blocks = _blocks(source, stdin, cap)
        while True:
            try:
                block, raws = next(blocks)
            except StopIteration:
                break
            except _Overlong:
                raise StreamError(f"{name}:{lineno + 1}: line longer than {_cap_text(cap)}, the cap on a record's "
                                  f"line (${LINE_CAP_ENV} sets it): is this a stream?") from None
            good: list[Line] = []
            error: StreamError | None = None
            for raw in raws:
                lineno += 1
                if raw[:1] != b"{" and not raw.strip():
                    continue
                if wanted is None:  # one typed decode when it works; the envelope path explains failures
                    try:
                        rec = any_decode(raw)
                        if rec.v == SCHEMA_MAJOR:
                            good.append(Line(raw, rec.__struct_config__.tag, SCHEMA_MAJOR, rec.run, name, lineno, rec))
                            continue
                    except (msgspec.DecodeError, UnicodeDecodeError):
                        pass
                try:
                    env = env_decode(raw)
                    kind = env.kind
                    if env.v != SCHEMA_MAJOR or kind in decoders:
                        line = decode_line(raw, name, lineno, wanted)
                    else:
                        line = Line(raw, kind, env.v, env.run, name, lineno)
                except (msgspec.DecodeError, UnicodeDecodeError) as e:
                    error = _envelope_error(raw, f"{name}:{lineno}", e)
                    break
                except StreamError as e:
                    error = e
                    break
                good.append(line)
            if write is not None:
                write(block if error is None else b"".join(line.raw + b"\n" for line in good))
            yield from good
            if error is not None:
                raise error


def new_run_id() -> str:
    """Sortable and unique enough: UTC time to the second plus 48 random bits."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(6)


class RecordWriter:
    """Writes records of one run to a binary stream."""

    def __init__(self, out: IO[bytes], run: str | None = None) -> None:
        self.out = out
        self.run = run or new_run_id()
        self.count = 0
        self._encoder = msgspec.json.Encoder()

    def make(self, cls: type[R], **fields: Any) -> R:
        """Build a record of this run (``v`` and ``run`` filled in)."""
        return cls(v=SCHEMA_MAJOR, run=self.run, **fields)

    def emit(self, rec: Record) -> Record:
        self.out.write(self._encoder.encode(rec) + b"\n")
        self.out.flush()
        self.count += 1
        return rec

    def emit_new(self, cls: type[R], **fields: Any) -> R:
        rec = self.make(cls, **fields)
        self.emit(rec)
        return rec

    def forward(self, raw: bytes) -> None:
        """Pass a line read elsewhere through unchanged."""
        self.out.write(raw if raw.endswith(b"\n") else raw + b"\n")


def encode(rec: Record) -> bytes:
    return msgspec.json.encode(rec)


def decode(raw: bytes) -> Record:
    """Decode one line of a known kind at the current major (for tests and one-off use)."""
    line = decode_line(raw, "<record>", 1, None)
    if line is None or line.record is None:
        raise StreamError("<record>:1: not a record of a known kind")
    return line.record
