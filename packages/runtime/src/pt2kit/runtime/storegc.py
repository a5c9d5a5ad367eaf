"""Which store blobs saved streams still need, and the sweep that deletes the rest (``pt2kit gc``).
Reads streams as data: nothing named in them is opened.

Guarantees:

* A blob is kept when any line of any given stream references it, whatever the kind (records of
  kinds this version does not know are searched too). A set of streams that references no blob
  at all (``/dev/null``, an empty pipe, a stream with no blobs) would delete the whole store, so
  the command refuses it unless told (``--allow-no-refs``); with no stream at all it never runs.
* Nothing outside ``<store>/blobs`` is touched, and nothing through a link: ``blobs`` and each
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

from pt2kit.schema import read_stream
from pt2kit.schema.store import temp_owner

from .errors import UsageError

_BLOB = re.compile(r"[0-9a-f]{64}(?:\.[A-Za-z0-9_-]{1,16}){0,3}")
_AGE = re.compile(r"(\d{1,9})([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
DEFAULT_PRUNE = "14d"  # `pt2kit gc --prune`'s default, as git's gc.pruneExpire


def parse_age(text: str) -> float:
    """``--prune``'s value in seconds: ``now`` (0) or a count with a unit, ``30m``, ``12h``, ``14d``, ``2w``."""
    t = text.strip().lower()
    if t == "now":
        return 0.0
    m = _AGE.fullmatch(t)
    if m is None:
        raise UsageError(f"--prune {text!r}: expected now or an age such as 30s, 30m, 12h, 14d or 2w")
    return float(int(m.group(1)) * _UNIT_S[m.group(2)])


def _refs(obj: Any, out: set[str]) -> None:
    if isinstance(obj, dict):
        sha, path = obj.get("sha256"), obj.get("path")
        if isinstance(sha, str) and isinstance(path, str) and "size" in obj:
            out.add(Path(path).name)
        for v in obj.values():
            _refs(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _refs(v, out)


def referenced(sources: Iterable[str]) -> set[str]:
    """File names (``<sha256><ext>``) of every blob any line of the streams points at."""
    out: set[str] = set()
    for line in read_stream(list(sources), want=()):
        if b'"sha256"' in line.raw:
            _refs(msgspec.json.decode(line.raw), out)
    return out


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
