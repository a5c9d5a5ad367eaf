"""The content-addressed blob store.

Guarantees:

* A blob lives at ``<root>/blobs/<sha256[:2]>/<sha256><ext>``; the same bytes are stored once, and
  storing them again refreshes the file's time, so ``pt2kit gc``'s grace period counts from the
  last write.
* A blob's name is its sha256, and that is checked wherever its bytes are used, by one rule
  (:func:`file_matches`): :meth:`Store.read` checks what it read; :meth:`Store.put` and
  :meth:`Store.put_file`, finding a blob of that name already there, hash it and replace it when its
  bytes are not the ones named (a same-size corrupt or tampered blob is never kept as "stored");
  a captured model file hashes each tensor file before ``torch.load`` reads it.
* Every file (blobs and anything written with :func:`atomic_write`) is written under a temporary
  name in the same directory and renamed into place, so a killed process never leaves a half
  written file behind a name a record points at. (Safe against process death, not power loss:
  nothing is fsynced.)
* A stream is data, so a :class:`~pt2kit.schema.records.BlobRef` read from one is untrusted. Only a
  path of the form the store writes (``blobs/<2 hex>/<its own sha256>[.ext]``) is ever resolved,
  and only to a regular file inside ``<root>/blobs`` after symlinks are followed. Anything else
  (an absolute path, ``..``, a symlink out, ``/dev/zero``, a FIFO) is refused by
  :func:`blob_path_problem` / :meth:`Store.locate` *before* the file system is touched where the
  form alone is wrong, so a refusal never says whether such a file exists.
* :meth:`Store.read` reads at most the ref's size (and never more than ``limit``), never blocks on
  a FIFO or device, and checks size and sha256: any mismatch is a :class:`BlobError`.
* The root is ``--store``, else ``$PT2KIT_STORE``, else ``./pt2kit-out``. A record's
  :class:`~pt2kit.schema.records.BlobRef` holds the path relative to the root, so a store directory
  can be moved or copied with the stream.

Not guaranteed:

* Durability: nothing is fsynced, so a power loss may lose or truncate recent files.
* That a blob a stream names is still there: ``pt2kit gc`` removes blobs no stream it is shown refers
  to (once older than its grace period), and a stream read on another machine finds its blobs only if the store
  directory was copied with it.
* A bound on the store's size: nothing evicts but ``pt2kit gc``.
* That a blob's extension says what its bytes are: it is the writer's word (a reader checks size and
  sha256, not the format).
* That a blob no reader or writer has touched since it was corrupted is found: nothing scans the store.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from pt2kit_portable import BLOB_PATH, blob_path

from .records import BlobRef

DEFAULT_STORE = "pt2kit-out"
STORE_ENV = "PT2KIT_STORE"


class BlobError(Exception):
    """A blob is missing, refused, or its bytes do not match its reference."""


# What Store.put writes: blobs/<sha[:2]>/<sha><ext>, ext a short suffix such as .txt or .tar.gz (the
# layout is pt2kit_portable's: capture's boot and the model files it writes know it too)
_BLOB_PATH = re.compile(BLOB_PATH)

READ_LIMIT = 512 * 1024 * 1024


def blob_path_problem(ref: BlobRef) -> str | None:
    """Why a ref's path may not be resolved at all (from its text alone), or None when its form is sound."""
    p = ref.path
    if not isinstance(p, str) or not p:
        return "empty path"
    if p.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", p):
        return "absolute path"
    if ".." in p.replace("\\", "/").split("/"):
        return "path contains '..'"
    if "\x00" in p:
        return "path contains a NUL byte"
    m = _BLOB_PATH.fullmatch(p)
    if m is None:
        return "not a store blob path (blobs/XX/SHA256[.ext])"
    if m.group(2) != ref.sha256 or m.group(1) != ref.sha256[:2]:
        return "path does not match its sha256"
    if not isinstance(ref.size, int) or ref.size < 0:
        return "negative size"
    return None


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes, read in chunks (a tensor saved with --values all may be gigabytes)."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _chunks(fd: int, limit: int) -> Iterator[bytes]:
    """The file's bytes from ``fd``, in chunks, up to ``limit`` bytes in all."""
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return
        yield chunk
        left -= len(chunk)


def file_matches(path: str | os.PathLike[str], sha256: str, size: int) -> bool:
    """Whether the file holds exactly the bytes named: its size, then its sha256 (the blob's name). False
    for anything but a regular file (a symlink is not followed, a FIFO never blocks, a device is not read);
    FileNotFoundError when it is not there; another OSError when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):  # a symlink: never a blob the store wrote
            return False
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return False
        h, got = hashlib.sha256(), 0
        for chunk in _chunks(fd, size + 1):  # one byte more than promised shows a file that grew
            h.update(chunk)
            got += len(chunk)
        return got == size and h.hexdigest() == sha256
    finally:
        os.close(fd)


def store_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    return Path(explicit or os.environ.get(STORE_ENV) or DEFAULT_STORE)


# atomic_write's temporary name: .<name>.<writer's pid>.<8 hex>.tmp
_TEMP_NAME = re.compile(r"\..+\.(\d+)\.[0-9a-f]{8}\.tmp")


def temp_owner(name: str) -> int | None:
    """The pid of the writer whose temporary file (from :func:`atomic_write`) this name is, else None."""
    m = _TEMP_NAME.fullmatch(name)
    return int(m.group(1)) if m else None


def sweep_temp_files(root: str | os.PathLike[str], pid: int) -> int:
    """Remove the temporary files process ``pid`` left under ``root`` (a killed writer's); how many went."""
    root = Path(root)
    if not root.is_dir():
        return 0
    gone = 0
    for path in root.rglob(f".*.{pid}.*.tmp"):
        if temp_owner(path.name) == pid and path.is_file() and not path.is_symlink():
            try:
                path.unlink()
                gone += 1
            except OSError:
                pass
    return gone


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


class Store:
    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = store_root(root).absolute()

    def path(self, ref: BlobRef) -> Path:
        """Where a blob this store wrote lives (no checks: for refs this process made)."""
        return self.root / ref.path

    def locate(self, ref: BlobRef) -> Path | None:
        """The real path of a ref's blob when it is a regular file inside this store, None when it is
        not there; :class:`BlobError` when the ref may not be followed (see the module's header)."""
        problem = blob_path_problem(ref)
        if problem:
            raise BlobError(f"blob path refused: {problem}")
        blobs = os.path.realpath(self.root / "blobs")
        try:
            real = os.path.realpath(self.root / ref.path)
        except (OSError, ValueError):
            return None
        # checked before anything is looked up there, so a refusal says nothing about the target
        if os.path.commonpath([blobs, real]) != blobs:
            raise BlobError("blob path refused: it resolves outside the store")
        try:
            st = os.stat(real)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise BlobError("blob path refused: not a regular file")
        return Path(real)

    def put(self, data: bytes, media_type: str, ext: str = "") -> BlobRef:
        digest = hashlib.sha256(data).hexdigest()
        rel = blob_path(digest, ext)
        if not self._kept(self.root / rel, digest, len(data)):
            atomic_write(self.root / rel, data)
        return BlobRef(path=rel, sha256=digest, size=len(data), media_type=media_type)

    def put_file(self, path: str | os.PathLike[str], media_type: str, ext: str) -> BlobRef:
        """Move the file at ``path`` into the store under its sha256, as :meth:`put` stores bytes,
        without reading it into memory; copied when a rename cannot (another file system)."""
        path = Path(path)
        digest, size = file_sha256(path), path.stat().st_size
        rel = blob_path(digest, ext)
        dest = self.root / rel
        if self._kept(dest, digest, size):
            return BlobRef(path=rel, sha256=digest, size=size, media_type=media_type)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, dest)  # atomic: a reader sees the old file or the whole new one
        except OSError:  # another file system (the user's TORCH_TRACE), or a shard we may not write
            return self.put(path.read_bytes(), media_type, ext)
        return BlobRef(path=rel, sha256=digest, size=size, media_type=media_type)

    @staticmethod
    def _kept(dest: Path, digest: str, size: int) -> bool:
        """Whether a blob already at ``dest`` holds these bytes (then it is freshened, as git freshens an
        object: new to `pt2kit gc`'s grace period); False when it is missing or corrupt (to be replaced)."""
        try:
            if not file_matches(dest, digest, size):
                return False
        except FileNotFoundError:  # gone, or swept meanwhile
            return False
        except OSError:  # another user's blob we may not read: not ours to replace
            return True
        try:
            os.utime(dest)
        except OSError:  # another user's intact blob: there all the same
            pass
        return True

    def put_text(self, text: str, media_type: str = "text/plain", ext: str = ".txt") -> BlobRef:
        return self.put(text.encode(), media_type, ext)

    def read(self, ref: BlobRef, limit: int = READ_LIMIT) -> bytes:
        """The blob's bytes, checked against its ref; :class:`BlobError` for anything else."""
        if isinstance(ref.size, int) and ref.size > limit:
            raise BlobError(f"blob {ref.path} is {ref.size} bytes, over the {limit}-byte limit on what is read")
        real = self.locate(ref)
        if real is None:
            raise BlobError(f"blob {ref.path} is missing from store {self.root}")
        try:
            # O_NONBLOCK: a FIFO swapped in after locate() cannot hang us; O_NOFOLLOW: nor a new symlink.
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            raise BlobError(f"blob {ref.path} is missing from store {self.root}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise BlobError("blob path refused: not a regular file")
            chunks = list(_chunks(fd, ref.size + 1))  # one byte more than promised shows a size mismatch
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
            raise BlobError(f"blob {ref.path} in store {self.root} does not match its sha256")
        return data
