"""The content-addressed blob store.

Guarantees:

* A blob lives at ``<root>/blobs/<sha256[:2]>/<sha256><ext>``; the same bytes are stored once.
* Every file (blobs and anything written with :func:`atomic_write`) is written under a temporary
  name in the same directory and renamed into place, so a killed process never leaves a half
  written file behind a name a record points at. (Safe against process death, not power loss:
  nothing is fsynced.)
* :meth:`Store.read` checks size and sha256 and raises :class:`BlobError` on any mismatch.
* The root is ``--store``, else ``$PT2KIT_STORE``, else ``./pt2kit-out``. A record's
  :class:`~pt2kit.schema.records.BlobRef` holds the path relative to the root, so a store directory
  can be moved or copied with the stream.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from .records import BlobRef

DEFAULT_STORE = "pt2kit-out"
STORE_ENV = "PT2KIT_STORE"


class BlobError(Exception):
    """A blob is missing or its bytes do not match its reference."""


def store_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    return Path(explicit or os.environ.get(STORE_ENV) or DEFAULT_STORE)


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
        p = Path(ref.path)
        return p if p.is_absolute() else self.root / p

    def put(self, data: bytes, media_type: str, ext: str = "") -> BlobRef:
        digest = hashlib.sha256(data).hexdigest()
        rel = f"blobs/{digest[:2]}/{digest}{ext}"
        dest = self.root / rel
        if not (dest.exists() and dest.stat().st_size == len(data)):
            atomic_write(dest, data)
        return BlobRef(path=rel, sha256=digest, size=len(data), media_type=media_type)

    def put_text(self, text: str, media_type: str = "text/plain", ext: str = ".txt") -> BlobRef:
        return self.put(text.encode(), media_type, ext)

    def read(self, ref: BlobRef) -> bytes:
        p = self.path(ref)
        try:
            data = p.read_bytes()
        except OSError:
            raise BlobError(f"blob {ref.path} is missing from store {self.root}") from None
        if len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
            raise BlobError(f"blob {ref.path} in store {self.root} does not match its sha256")
        return data
