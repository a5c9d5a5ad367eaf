"""Which store blobs saved streams still need, and the sweep that deletes the rest (``pt2kit gc``).
Reads streams as data: nothing named in them is opened but the store's own blobs, read as text.

Guarantees:

* gc never deletes what a given stream needs: a blob any line of any given stream references,
  whatever the kind (records of kinds this version does not know are searched too), and, through
  them, every tensor file a referenced captured model file loads (its record's ``captured.tensors``;
  for a stream written before that field, the model file's ``_load`` lines, read from the store
  checked against its sha256, never run).
* gc never sweeps a store on the word of another store's stream: an input whose headers name only
  other stores is refused (one line, nothing deleted) unless this store holds every blob it
  references (a store moved or copied with its streams). A set of streams none of whose blobs is in
  this store (``/dev/null``, an empty pipe, a stream with no blobs, or blobs only elsewhere) would
  delete the whole store, so the command refuses it unless told (``--allow-no-refs``); with no
  stream at all it never runs.
* The one thing outside ``<store>/blobs`` it removes is a ``<store>/.capture-<run>/`` scratch dir of a
  ``pt2kit capture`` that is gone (killed before it wrote its records: its ``owner`` file names a
  process of this host that no longer runs; without one, older than the grace period); a link named
  so is never followed. One a ``with pt2kit.capture()`` block left (its :data:`BLOCK`: a notebook
  kernel killed in compiled code) is what ``pt2kit.capture.recover()`` reads: kept until older than the
  grace period (:func:`recoverable`).
* Nothing else outside ``<store>/blobs`` is touched, and nothing through a link: ``blobs`` and each
  ``blobs/XX`` shard are opened with ``O_NOFOLLOW`` (a symlinked ``blobs`` is refused, a symlinked
  or foreign-device shard skipped), every look-up and unlink is relative to those opened folders,
  and ``unlink`` removes a symlink itself, never its target. A folder, FIFO or device named like a
  blob or a temporary file is skipped, never descended into.
* Only names of the store's own blob form, and temporary files of writers that are gone, are
  candidates; of those, a file modified less than the grace period ago (``--prune``, default 14
  days as git's ``gc.pruneExpire``) is kept: a writer still running (``kdiff`` writing heatmaps
  beside a gc loop) has not written its records yet. ``Store.put`` refreshes the time of a blob it
  finds already there, so a blob written again counts as new.
* A deletion that fails is recorded and the sweep goes on: the caller always gets the full tally.

Not guaranteed: that a blob a writer made *older* than the grace period and has not yet referenced
(a run longer than ``--prune``) survives: the grace period is the only guard against a racing
writer, so ``--prune`` must exceed the longest run; the tally's sizes against files another
process changes during the sweep; durability of the deletions (no fsync of the shard folders).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from pt2kit.schema import BlobError, BlobRef, Store, read_stream
from pt2kit.schema.store import temp_owner
from pt2kit.schema.stream import decode_line

from ..common.errors import UsageError

_BLOB = re.compile(r"[0-9a-f]{64}(?:\.[A-Za-z0-9_-]{1,16}){0,3}")
_AGE = re.compile(r"(\d{1,9})([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DEFAULT_PRUNE = "14d"  # `pt2kit gc --prune`'s default, as git's gc.pruneExpire
# in a scratch dir: a ``with pt2kit.capture()`` block's options, there until its records are written
BLOCK = "block.json"


def parse_age(text: str) -> float:
    """``--prune``'s value in seconds: ``now`` (0) or a count with a unit, ``30m``, ``12h``, ``14d``, ``2w``."""
    t = text.strip().lower()
    if t == "now":
        return 0.0
    m = _AGE.fullmatch(t)
    if m is None:
        raise UsageError(f"--prune {text!r}: expected now or an age such as 30s, 30m, 12h, 14d or 2w")
    return float(int(m.group(1)) * _UNIT_S[m.group(2)])


def _refs(obj: Any, out: dict[str, dict[str, Any]]) -> None:
    if isinstance(obj, dict):
        sha, path = obj.get("sha256"), obj.get("path")
        if isinstance(sha, str) and isinstance(path, str) and "size" in obj:
            out.setdefault(Path(path).name, obj)
        for v in obj.values():
            _refs(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _refs(v, out)


@dataclass
class Source:
    """One input stream: the stores its headers name, and the blobs (by file name) its lines reference."""

    name: str
    stores: set[str] = field(default_factory=set)
    blobs: dict[str, dict[str, Any]] = field(default_factory=dict)  # file name -> the reference as written


def referenced(sources: Iterable[str]) -> list[Source]:
    """Each input's stores and the blobs (``<sha256><ext>``) any of its lines points at."""
    out: dict[str, Source] = {}
    for line in read_stream(list(sources), want=()):
        src = out.setdefault(line.source, Source(line.source))
        if line.kind == "header" or b'"sha256"' in line.raw:
            try:
                obj = msgspec.json.decode(line.raw)
            except UnicodeDecodeError:  # a string that is no UTF-8: the one line every reader gives (exit 2)
                decode_line(line.raw, line.source, line.lineno, None)
                raise
            store = obj.get("store") if line.kind == "header" and isinstance(obj, dict) else None
            if isinstance(store, str) and store:
                src.stores.add(store)
            _refs(obj, src.blobs)
    return list(out.values())


# how a captured model file loads a saved tensor: _load('<sha256>', <size>, ...) (pt2kit_capture_write.py)
_LOADS = re.compile(rb"_load\('([0-9a-f]{64})', (\d{1,15}),")
MODEL_FILE_LIMIT = 64 * 1024 * 1024


def needed(store_root: Path, sources: list[Source]) -> set[str]:
    """Every blob the streams need, transitively: what they reference, and the tensor files each
    referenced model file loads (a stream from before ``captured.tensors`` names only the file), read
    from the store as text, checked against its sha256, never run."""
    store = Store(store_root)
    keep: set[str] = set()
    for src in sources:
        keep.update(src.blobs)
        for name, ref in src.blobs.items():
            if not name.endswith(".py") or not isinstance(ref.get("size"), int):
                continue
            try:
                text = store.read(msgspec.convert(ref, BlobRef), limit=MODEL_FILE_LIMIT)
            except (BlobError, msgspec.ValidationError):
                continue  # missing, refused or corrupt: names nothing we could trust
            keep.update(f"{sha.decode()}.pt" for sha, _ in _LOADS.findall(text))
    return keep


def _same_dir(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def present(store_root: Path, names: Iterable[str]) -> set[str]:
    """The names of the store's own blob form that are in ``<store>/blobs`` (a link counts: it is ours to keep)."""
    return {n for n in names if _BLOB.fullmatch(n) and os.path.lexists(store_root / "blobs" / n[:2] / n)}


def other_store_problem(store_root: Path, sources: list[Source]) -> str | None:
    """Why an input must not steer a sweep of this store: its headers name only other stores and it is
    not a copy of this one (a store moved with its streams holds every blob they reference). One that
    references no blob keeps nothing either way: the caller's "no blob" guard judges it."""
    for src in sources:
        if not src.stores or any(_same_dir(st, store_root) for st in src.stores):
            continue
        missing = len(src.blobs) - len(present(store_root, src.blobs))
        if missing:
            return (f"{src.name}: its runs wrote their blobs to store {', '.join(sorted(src.stores))}, not "
                    f"{store_root} ({missing} of its {len(src.blobs)} blobs are not here): give --store "
                    f"{sorted(src.stores)[0]}, or only streams of this store; nothing deleted")
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Sweep:
    deleted: list[Path] = field(default_factory=list)  # deleted, or would be under --dry-run
    young: list[tuple[Path, float]] = field(default_factory=list)  # unneeded, spared by the grace period: age in s
    failed: list[tuple[Path, str]] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)  # named like ours, but a folder, FIFO, device or link out
    keep: int = 0
    bytes: int = 0


def blobs_problem(store_root: Path) -> str | None:
    """Why ``<store>/blobs`` may not be swept at all, or None (also None when it does not exist)."""
    blobs = store_root / "blobs"
    try:
        st = os.lstat(blobs)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{blobs}: {e.strerror}"
    if stat.S_ISLNK(st.st_mode):
        return (f"{blobs} is a symbolic link (to {os.readlink(blobs)}): gc sweeps only the store's own "
                "folder, never through a link; nothing deleted")
    if not stat.S_ISDIR(st.st_mode):
        return f"{blobs} is not a folder; nothing deleted"
    return None


_DIR = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)


def _open_dir(name: str | Path, dir_fd: int | None = None) -> int | None:
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except OSError:  # a symlink (ELOOP/ENOTDIR), gone, unreadable: not ours to walk
        return None


def sweep(store_root: Path, keep_names: set[str], *, grace_s: float, dry_run: bool,
          now: float | None = None) -> Sweep:
    """Delete (unless ``dry_run``) what no stream needs under ``<store_root>/blobs``; the tally."""
    out = Sweep()
    now = time.time() if now is None else now
    root_fd = _open_dir(store_root.resolve())
    if root_fd is None:
        return out
    try:
        blobs_fd = _open_dir("blobs", root_fd)
    finally:
        os.close(root_fd)
    if blobs_fd is None:
        return out
    try:
        dev = os.fstat(blobs_fd).st_dev
        for sub in sorted(os.listdir(blobs_fd)):
            if not re.fullmatch(r"[0-9a-f]{2}", sub):
                continue
            shard_fd = _open_dir(sub, blobs_fd)
            if shard_fd is None:
                out.skipped.append(store_root / "blobs" / sub)
                continue
            try:
                if os.fstat(shard_fd).st_dev != dev:  # a mount point: another file system's files
                    out.skipped.append(store_root / "blobs" / sub)
                    continue
                _sweep_shard(shard_fd, store_root / "blobs" / sub, keep_names, (now, grace_s), dry_run, out)
            finally:
                os.close(shard_fd)
    finally:
        os.close(blobs_fd)
    return out


def _sweep_shard(fd: int, where: Path, keep_names: set[str], clock: tuple[float, float], dry_run: bool,
                 out: Sweep) -> None:
    now, grace_s = clock
    try:
        names = sorted(os.listdir(fd))
    except OSError as e:
        out.failed.append((where, e.strerror or str(e)))
        return
    for name in names:
        owner = temp_owner(name)
        if owner is None and not (_BLOB.fullmatch(name) and name.startswith(where.name)):
            continue  # not something the store wrote: never ours to delete
        if owner is None and name in keep_names:
            out.keep += 1
            continue
        if owner is not None and _alive(owner):
            continue
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue  # gone meanwhile
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            out.skipped.append(where / name)
            continue
        age = now - st.st_mtime
        if grace_s > 0 and age < grace_s:
            out.young.append((where / name, max(age, 0.0)))
            continue
        if not dry_run:
            try:
                os.unlink(name, dir_fd=fd)  # relative to the opened shard: a link is removed, never followed
            except FileNotFoundError:
                continue
            except OSError as e:
                out.failed.append((where / name, e.strerror or str(e)))
                continue
        out.deleted.append(where / name)
        out.bytes += st.st_size


def scratch_owner() -> str:
    """What ``pt2kit capture`` writes in its scratch dir's ``owner`` file: ``pid start-time host`` of this
    process (the start time tells a reused pid from the owner), read back by :func:`stale_scratch`."""
    import platform

    return f"{os.getpid()} {_started(os.getpid()) or '-'} {platform.node()}\n"


def _started(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, /proc's field 22), None where there is no /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def stale_scratch(store_root: Path, grace_s: float, now: float | None = None) -> list[Path]:
    """``<store>/.capture-<run>/`` scratch dirs whose ``pt2kit capture`` is gone (killed with SIGKILL, its
    machine rebooted): its ``owner`` file (:func:`scratch_owner`) names a process of this host that no
    longer runs, or a pid now reused by another process (its start time differs). A dir without an owner
    file (an older capture) goes once older than the grace period; one of another host is kept."""
    import platform

    now = time.time() if now is None else now
    out = []
    for d in sorted(store_root.glob(".capture-*")) if store_root.is_dir() else ():
        if d.is_symlink() or not d.is_dir():
            continue
        try:
            pid, started, host = (d / "owner").read_text().split()
            gone = host == platform.node() and not (_alive(int(pid)) and _started(int(pid)) in (started, None))
        except FileNotFoundError:
            gone = now - d.stat().st_mtime >= grace_s
        except (OSError, ValueError):
            continue
        if gone:
            out.append(d)
    return out


def recoverable(scratch: Path, grace_s: float, now: float | None = None) -> bool:
    """Whether a scratch dir of a capture that is gone (:func:`stale_scratch`) is a block's whose records
    ``pt2kit.capture.recover()`` can still write (its :data:`BLOCK`), younger than the grace period (its
    newest of the dir and the file: a block that ran for hours died at the end of them)."""
    now = time.time() if now is None else now
    try:
        seen = max(scratch.stat().st_mtime, (scratch / BLOCK).stat().st_mtime)
    except OSError:
        return False
    return now - seen < grace_s
