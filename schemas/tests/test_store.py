from __future__ import annotations

import hashlib
import os

import pytest

from pt2kit.schema import BlobError, Store
from pt2kit.schema.store import atomic_write, store_root


def test_put_is_content_addressed_and_read_checks(tmp_path):
    s = Store(tmp_path)
    ref = s.put(b"def forward(x): ...\n", "text/x-python", ".py")
    digest = hashlib.sha256(b"def forward(x): ...\n").hexdigest()
    assert ref.path == f"blobs/{digest[:2]}/{digest}.py" and ref.size == 20 and ref.sha256 == digest
    assert s.put(b"def forward(x): ...\n", "text/x-python", ".py") == ref
    assert s.read(ref) == b"def forward(x): ...\n"
    s.path(ref).write_bytes(b"def forward(x): evil\n")
    with pytest.raises(BlobError, match="does not match its sha256"):
        s.read(ref)
    s.path(ref).unlink()
    with pytest.raises(BlobError, match="is missing"):
        s.read(ref)


@pytest.mark.parametrize("how", ["put", "put_file"])
def test_storing_again_replaces_a_same_size_corrupt_blob(tmp_path, how):
    """A blob is named by its sha256: one already there with the right size but other bytes (tampered, or a
    bit flipped) is replaced, not kept as "stored" with only its time touched."""
    s = Store(tmp_path / "store")
    data = b"weights" * 100

    def store_it():
        if how == "put":
            return s.put(data, "application/octet-stream", ".pt")
        src = tmp_path / "scratch.pt"
        src.write_bytes(data)
        return s.put_file(src, "application/octet-stream", ".pt")

    ref = store_it()
    blob = s.path(ref)
    blob.write_bytes(b"X" + data[1:])  # same size, other bytes
    os.utime(blob, (1, 1))
    with pytest.raises(BlobError, match="does not match its sha256"):
        s.read(ref)
    assert store_it() == ref
    assert blob.read_bytes() == data and s.read(ref) == data
    assert blob.stat().st_mtime > 1  # new to gc's grace period
    store_it()  # an intact one is kept (only freshened)
    assert sorted(p.name for p in blob.parent.iterdir()) == [blob.name]


def test_a_symlink_where_a_blob_belongs_is_replaced_not_read(tmp_path):
    s = Store(tmp_path / "store")
    ref = s.put(b"", "text/plain", ".txt")  # size 0: a link to /dev/zero would pass a size check
    s.path(ref).unlink()
    s.path(ref).symlink_to("/dev/zero")
    assert s.put(b"", "text/plain", ".txt") == ref
    assert not s.path(ref).is_symlink() and s.path(ref).read_bytes() == b""


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    atomic_write(tmp_path / "d" / "report.html", "<p>x</p>")
    assert os.listdir(tmp_path / "d") == ["report.html"]


def test_atomic_write_failure_keeps_old_file(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_text("old")

    def boom(*a):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write(target, "new")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]


def test_store_root_precedence(monkeypatch, tmp_path):
    monkeypatch.delenv("PT2KIT_STORE", raising=False)
    assert str(store_root()) == "pt2kit-out"
    monkeypatch.setenv("PT2KIT_STORE", str(tmp_path))
    assert store_root() == tmp_path
    assert str(store_root("explicit")) == "explicit"
