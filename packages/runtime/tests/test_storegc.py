"""`pt2kit gc` on a store, as a user (and an attacker sharing the machine) would run it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from test_catalog import _run, pt2kit

from pt2kit.schema import Graph, Header, Store
from pt2kit.schema.stream import RecordWriter

OLD = time.time() - 30 * 86400  # older than the default grace period (14 days)


def _aged(*paths: Path, when: float = OLD) -> None:
    for p in paths:
        os.utime(p, (when, when), follow_symlinks=False)


def _store_with(tmp_path: Path, *texts: str) -> tuple[Store, list, Path]:
    """A store holding ``texts`` as old blobs, and a stream referencing the first."""
    store = Store(tmp_path / "store")
    refs = [store.put_text(t, ext=".txt") for t in texts]
    _aged(*(store.root / r.path for r in refs))
    s = tmp_path / "s.ndjson"
    _run(s, "r1", "fxcheck", (Graph, {"phase": "dynamo", "code": refs[0]}))
    return store, refs, s


def test_gc_deletes_only_unreferenced_blobs_of_the_store_form(tmp_path):
    store = Store(tmp_path / "store")
    kept = store.put_text("kept", ext=".txt")
    gone = store.put_text("gone", ext=".txt")
    also_kept = store.put(b"\x89PNG", "image/png", ".png")
    s = tmp_path / "s.ndjson"
    _run(s, "r1", "fxcheck", (Graph, {"phase": "dynamo", "code": kept}))
    with open(s, "ab") as f:  # a kind this version does not know still keeps its blobs
        f.write(b'{"kind":"future","v":1,"run":"r9","blob":{"path":"' + also_kept.path.encode()
                + b'","sha256":"' + also_kept.sha256.encode() + b'","size":4,"media_type":"image/png"}}\n')
    root = store.root / "blobs"
    foreign = root / "notes.txt"
    foreign.write_text("mine")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    sha = "ab" * 32
    (root / "ab").mkdir(exist_ok=True)
    (root / "ab" / f"{sha}.txt").symlink_to(outside)
    dead_tmp = root / "ab" / f".{sha}.txt.999999.deadbeef.tmp"
    dead_tmp.write_text("partial")
    _aged(store.root / gone.path, root / "ab" / f"{sha}.txt", dead_tmp)

    r = pt2kit("gc", "--store", str(store.root), str(s), "--dry-run")
    assert r.returncode == 0, r.stderr
    listed = sorted(Path(p).name for p in r.stdout.decode().splitlines())
    assert listed == sorted([Path(gone.path).name, f"{sha}.txt", dead_tmp.name])
    assert (store.root / gone.path).exists()

    r = pt2kit("gc", "--store", str(store.root), str(s))
    assert r.returncode == 0 and "deleted 3 file(s)" in r.stderr.decode() and "kept 2 blob(s)" in r.stderr.decode()
    assert not (store.root / gone.path).exists() and not dead_tmp.exists()
    assert (store.root / kept.path).exists() and (store.root / also_kept.path).exists()
    assert foreign.read_text() == "mine" and outside.read_text() == "keep me"


def test_gc_needs_streams_and_a_store(tmp_path):
    r = pt2kit("gc", "--store", str(tmp_path))
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1
    s = tmp_path / "s.ndjson"
    _run(s, "r1", "fxcheck")
    r = pt2kit("gc", "--store", str(tmp_path / "nope"), str(s))
    assert r.returncode == 2 and "no such store" in r.stderr.decode()


def test_gc_never_follows_a_symlinked_blobs_folder_out_of_the_store(tmp_path):
    # the attack of issue 36: STORE/blobs a link to another folder holding a blob-named file
    store, _refs, s = _store_with(tmp_path, "kept")
    elsewhere = tmp_path / "elsewhere"
    victim = elsewhere / "cd" / ("cd" * 32 + ".txt")
    victim.parent.mkdir(parents=True)
    victim.write_text("the user's")
    _aged(victim)
    (store.root / "blobs").rename(tmp_path / "real-blobs")
    (store.root / "blobs").symlink_to(elsewhere)
    r = pt2kit("gc", "--store", str(store.root), str(s), "--prune", "now")
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "is a symbolic link" in err and "nothing deleted" in err
    assert victim.read_text() == "the user's"


def test_gc_skips_a_symlinked_shard_and_what_is_not_a_file(tmp_path):
    store, refs, s = _store_with(tmp_path, "kept", "gone")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / ("ef" * 32 + ".txt")
    victim.write_text("the user's")
    _aged(victim)
    (store.root / "blobs" / "ef").symlink_to(elsewhere)
    # a folder named like a temp file, then one like a blob, then a FIFO: gc stopped at the first
    shard = (store.root / refs[1].path).parent
    odd = [shard / f".x.{2**22 + 1}.deadbeef.tmp", shard / (shard.name + "0" * 62), shard / (shard.name + "1" * 62)]
    odd[0].mkdir()
    odd[1].mkdir()
    os.mkfifo(odd[2])
    _aged(*odd)
    r = pt2kit("gc", "--store", str(store.root), str(s), "--prune", "now")
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert err.splitlines()[-1] == ("pt2kit: deleted 1 file(s), 0.0 MB; kept 1 blob(s) the streams reference and 0 "
                                    "younger than --prune now; skipped 4 not a blob file (a folder, a link out, a device)")
    assert victim.read_text() == "the user's" and all(p.exists() for p in odd)
    assert not (store.root / refs[1].path).exists() and (store.root / refs[0].path).exists()


def test_gc_spares_what_is_younger_than_the_grace_period(tmp_path):
    # a writer still running (kdiff beside a gc loop) has blobs its records do not name yet
    store, refs, s = _store_with(tmp_path, "kept", "old")
    fresh = store.put_text("being written", ext=".png")
    tmp = store.root / "blobs" / "00" / f".{'0' * 64}.png.{2**22 + 1}.deadbeef.tmp"  # no pid is so high
    tmp.parent.mkdir(exist_ok=True)
    tmp.write_text("half")  # its writer is gone, but only just: another host's pid, maybe
    r = pt2kit("gc", "-n", "--store", str(store.root), str(s))
    out, err = r.stdout.decode().splitlines(), r.stderr.decode().splitlines()
    assert r.returncode == 0 and out == [str(store.root / refs[1].path)]
    assert sorted(ln.split()[3] for ln in err[:-1]) == sorted([f"{store.root / fresh.path}:", f"{tmp}:"])
    assert all(ln.endswith("younger than --prune 14d") and "would keep" in ln for ln in err[:-1])
    assert err[-1].endswith("kept 1 blob(s) the streams reference and 2 younger than --prune 14d")
    r = pt2kit("gc", "--store", str(store.root), str(s), "--prune", "2w")
    assert r.returncode == 0 and "deleted 1 file(s)" in r.stderr.decode()
    assert (store.root / fresh.path).exists() and tmp.exists() and not (store.root / refs[1].path).exists()
    _aged(store.root / fresh.path, when=time.time() - 7200)
    r = pt2kit("gc", "--store", str(store.root), str(s), "--prune", "1h")
    assert r.returncode == 0 and not (store.root / fresh.path).exists() and tmp.exists()
    r = pt2kit("gc", "--store", str(store.root), str(s), "--prune", "NOW")
    assert r.returncode == 0 and not tmp.exists() and (store.root / refs[0].path).exists()


def test_a_blob_written_again_counts_as_new(tmp_path):
    store, refs, s = _store_with(tmp_path, "kept", "written again")
    assert store.put_text("written again", ext=".txt") == refs[1]
    assert time.time() - (store.root / refs[1].path).stat().st_mtime < 3600
    r = pt2kit("gc", "--store", str(store.root), str(s))
    assert r.returncode == 0 and (store.root / refs[1].path).exists()


@pytest.mark.parametrize("value", ["", "soon", "2.weeks.ago", "-1d", "14", "1y", "9999999999d"])
def test_gc_refuses_a_bad_prune_age_before_reading_anything(tmp_path, value):
    store, refs, _s = _store_with(tmp_path, "kept", "old")
    r = pt2kit("gc", "--store", str(store.root), "--prune", value, str(tmp_path / "missing.ndjson"))
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1, err
    assert err.startswith(f"pt2kit: error: --prune {value!r}: expected now or an age such as")
    assert (store.root / refs[1].path).exists()


@pytest.mark.parametrize("how", ["devnull", "stdin", "no-blobs"])
def test_gc_refuses_streams_that_reference_nothing_unless_told(tmp_path, how):
    store, refs, _s = _store_with(tmp_path, "a", "b")
    bare = tmp_path / "bare.ndjson"
    _run(bare, "r2", "fxcheck")
    source, stdin = {"devnull": ("/dev/null", b""), "stdin": ("-", b""), "no-blobs": (str(bare), b"")}[how]
    r = pt2kit("gc", "--store", str(store.root), source, stdin=stdin)
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "reference no blob" in err and "--allow-no-refs" in err
    assert all((store.root / ref.path).exists() for ref in refs)
    r = pt2kit("gc", "--store", str(store.root), source, "--allow-no-refs", stdin=stdin)
    assert r.returncode == 0 and "deleted 2 file(s)" in r.stderr.decode()
    assert not any((store.root / ref.path).exists() for ref in refs)


def _stream_of(path: Path, store_root: Path, *refs) -> Path:
    """A stream as a tool writes it: a header naming its store, a record per blob."""
    with open(path, "ab") as f:
        w = RecordWriter(f, run="r1")
        w.emit_new(Header, tool="kdiff", tool_version="9.9", argv=[], time="t", host="h", python="3",
                   store=str(store_root))
        for ref in refs:
            w.emit_new(Graph, phase="dynamo", code=ref)
    return path


def test_gc_refuses_a_stream_of_another_store_even_when_it_shares_a_blob(tmp_path):
    """`pt2kit gc --store A --prune now B.ndjson`, B's blobs in store B: A's own blobs are on no stream
    given, so gc used to empty A. The same script captured into both stores shares a blob or two, so
    counting the references A holds is not enough: B's header names its store."""
    a, refs_a, _ = _store_with(tmp_path, "a1", "a2", "shared")
    b = Store(tmp_path / "b")
    refs_b = [b.put_text(t, ext=".txt") for t in ("b1", "shared")]
    stream = _stream_of(tmp_path / "b.ndjson", b.root, *refs_b)
    for args in ([], ["--allow-no-refs"], ["--dry-run"]):
        r = pt2kit("gc", "--store", str(a.root), "--prune", "now", str(stream), *args)
        err = r.stderr.decode()
        assert r.returncode == 2 and err.count("\n") == 1 and r.stdout == b"", err
        assert err == (f"pt2kit: error: {stream}: its runs wrote their blobs to store {b.root}, not {a.root} "
                       f"(1 of its 2 blobs are not here): give --store {b.root}, or only streams of this store; "
                       "nothing deleted\n")
        assert all((a.root / ref.path).exists() for ref in refs_a)
    # with A's own stream beside it, B's is still refused: it keeps nothing of A's, and says nothing of A
    own = _stream_of(tmp_path / "a.ndjson", a.root, refs_a[0])
    r = pt2kit("gc", "--store", str(a.root), "--prune", "now", str(own), str(stream))
    assert r.returncode == 2 and all((a.root / ref.path).exists() for ref in refs_a)


def test_gc_refuses_streams_whose_blobs_are_none_of_this_stores(tmp_path):
    """A stream with no header (or one naming this store) whose references all lie elsewhere keeps nothing
    here: as good as an empty stream, refused the same way."""
    a, refs_a, _ = _store_with(tmp_path, "a1", "a2")
    elsewhere = Store(tmp_path / "b").put_text("b1", ext=".txt")
    stream = _stream_of(tmp_path / "elsewhere.ndjson", a.root, elsewhere)
    r = pt2kit("gc", "--store", str(a.root), "--prune", "now", str(stream))
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1, err
    assert "reference 1 blob(s), none of them in" in err and "--allow-no-refs" in err
    assert all((a.root / ref.path).exists() for ref in refs_a)


def test_gc_takes_the_stream_of_a_store_moved_with_it(tmp_path):
    """A store copied elsewhere with its streams (the header still names the old place) holds every blob
    they reference: that stream may steer the copy's gc."""
    import shutil

    old, refs, _ = _store_with(tmp_path, "kept", "gone")
    stream = _stream_of(tmp_path / "moved.ndjson", old.root, refs[0])
    moved = tmp_path / "moved"
    shutil.copytree(old.root, moved)
    r = pt2kit("gc", "--store", str(moved), "--prune", "now", str(stream))
    assert r.returncode == 0, r.stderr
    assert (moved / refs[0].path).exists() and not (moved / refs[1].path).exists()


def test_gc_goes_on_past_a_failed_deletion_and_ends_with_its_summary(tmp_path, monkeypatch, capsys):
    from pt2kit.runtime.__main__ import app

    store, refs, s = _store_with(tmp_path, "kept", "locked", "free")
    locked, free = store.root / refs[1].path, store.root / refs[2].path
    unlink = os.unlink

    def refuse(path, *, dir_fd=None):  # what a read-only shard gives (the tests run as root here)
        if path == locked.name:
            raise PermissionError(13, "Permission denied")
        unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", refuse)
    with pytest.raises(SystemExit) as e:
        app(["gc", "--store", str(store.root), str(s)])
    err = capsys.readouterr().err.splitlines()
    assert e.value.code == 1
    assert f"pt2kit: warning: cannot delete {locked}: Permission denied" in err
    assert err[-1].startswith("pt2kit: deleted 1 file(s)") and err[-1].endswith("; 1 could not be deleted")
    assert locked.exists() and not free.exists()


def test_gc_keeps_a_dead_blocks_scratch_dir_that_recover_reads_until_older_than_prune(tmp_path):
    # a notebook kernel killed in compiled code leaves its `with pt2kit.capture()` block's scratch dir for
    # pt2kit.capture.recover() after the restart: gc removed it as any killed capture's
    import platform

    from pt2kit.runtime.cli.storegc import BLOCK

    store, _, s = _store_with(tmp_path, "kept")
    dirs = {}
    for name in ("block", "old-block", "killed"):
        d = dirs[name] = store.root / f".capture-{name}"
        d.mkdir()
        (d / "owner").write_text(f"{2**22 + 1} 1 {platform.node()}\n")  # no pid is so high: its process is gone
        if name != "killed":
            (d / BLOCK).write_text('{"options": {}, "command": []}')
    _aged(dirs["old-block"] / BLOCK, dirs["old-block"])
    r = pt2kit("gc", "--store", str(store.root), str(s))
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0 and [d.exists() for d in dirs.values()] == [True, False, False], err
    assert err[:2] == [f"pt2kit: removed {dirs[n]}: the scratch dir of a pt2kit capture that is gone"
                       for n in ("killed", "old-block")]
    assert err[-1].endswith("; kept 1 scratch dir(s) of a `with pt2kit.capture()` block whose process died, younger "
                            "than --prune 14d (pt2kit.capture.recover() writes their records; --prune now removes them)")
    r = pt2kit("gc", "--store", str(store.root), str(s), "--prune", "now")
    assert r.returncode == 0 and not dirs["block"].exists() and "kept 1 scratch" not in r.stderr.decode()
