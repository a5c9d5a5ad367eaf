"""The rule users rely on (issue 55): pt2kit writes only where they asked, and never over a file it did not
write in this run. Checked before the work and again at the moment of writing; links that dangle or loop
are one line; the files a stream names are inputs too."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.parent import writes
from pt2kit.runtime.parent.writes import check_output, write_output

KEEP = "pt2kit writes over no file of yours: remove it, or name another path"
EARLIER = {  # what each kind of pt2kit output begins with: an earlier run's, which the same -o replaces
    "repro.py": '#!/usr/bin/env python3\n"""A standalone repro made by pt2kit minify 0.10.10 on torch 2.13.\n',
    "report.html": '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta name="generator" content="pt2kit reportgen 1">',
    "run.ndjson": '{"kind":"header","v":1,"run":"r","tool":"fxcheck"}\n',
    "report.md": "## pt2kit report\n\n3 records\n",
    "report.txt": "pt2kit report: 3 records\n",
    "report.json": '{\n "pt2kit_report": 1,\n "counts": {}\n}\n',
    "cmp.txt": "pt2kit comparison: a -> b\n",
    "cmp.json": '{\n "pt2kit_comparison": 1,\n "before": "a"\n}\n',
}


def test_a_users_file_is_refused_before_the_work_and_at_the_write(tmp_path):
    mine = tmp_path / "ck.py"
    mine.write_text("print('my script')\n")
    with pytest.raises(UsageError) as e:
        check_output("-o", mine)
    assert str(e.value) == f"-o {mine}: exists and is not pt2kit's output (it carries no pt2kit marker); {KEEP}"
    with pytest.raises(UsageError) as e:
        write_output(mine, "repro", flag="-o")  # unchecked before: the write checks on its own
    assert str(e.value) == f"-o {mine}: exists and is not pt2kit's output (it carries no pt2kit marker); {KEEP}"
    assert mine.read_text() == "print('my script')\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.py"]  # no temporary file left


@pytest.mark.parametrize("name", sorted(EARLIER))
def test_an_earlier_runs_output_carries_the_marker_and_is_replaced(tmp_path, name):
    old = tmp_path / name
    old.write_text(EARLIER[name])
    assert check_output("-o", old) == old
    write_output(old, "new", flag="-o")
    assert old.read_text() == "new"


def test_an_empty_file_is_mktemps_and_may_be_written(tmp_path):
    empty = tmp_path / "tmp.XXXX"
    empty.touch()
    check_output("-o", empty)
    write_output(empty, "page")
    assert empty.read_text() == "page"


def test_a_file_made_since_the_check_is_never_replaced_even_with_a_marker(tmp_path):
    run = writes.Outputs()
    out = tmp_path / "report.html"
    run.check("-o", out)
    out.write_text(EARLIER["report.html"])  # the script (under triage) made it while the run worked
    with pytest.raises(UsageError) as e:
        run.write("-o", out, "page")
    assert str(e.value) == (f"-o {out}: was made by someone else while this run worked (it was not there when the "
                            f"run began); {KEEP}")
    assert out.read_text() == EARLIER["report.html"]


def test_what_this_run_wrote_it_may_write_again(tmp_path):
    run = writes.Outputs()
    out = tmp_path / "notes"  # no marker: only this run's having written it lets it be replaced
    run.write("-o", out, "one")
    run.write("-o", out, "two")
    assert out.read_text() == "two"
    with pytest.raises(UsageError, match="exists and is not pt2kit's output"):
        writes.Outputs().write("-o", out, "three")


def test_a_dangling_link_is_never_written_through(tmp_path):
    link = tmp_path / "repro.py"
    link.symlink_to(tmp_path / "elsewhere" / "x.py")
    for call in (lambda: check_output("-o", link), lambda: write_output(link, "x")):
        with pytest.raises(UsageError) as e:
            call()
        assert str(e.value) == (f"-o {link}: is a symbolic link to {tmp_path / 'elsewhere' / 'x.py'}, which does "
                                "not exist; pt2kit makes no file through a link: name the file itself, or another path")
    assert not (tmp_path / "elsewhere").exists() and link.is_symlink()


def test_a_loop_of_links_is_one_line(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    line = f"-o {loop}: is a loop of symbolic links (too many levels); name another path"
    for call in (lambda: check_output("-o", loop), lambda: write_output(loop, "x")):
        with pytest.raises(UsageError) as e:
            call()
        assert str(e.value) == line
    with pytest.raises(UsageError) as e:  # O_EXCL: the link itself is a name that exists
        writes.Outputs().create("-o", loop)
    assert str(e.value) == f"-o {loop}: exists, and this run did not write it; {KEEP}"
    with pytest.raises(UsageError) as e:
        check_output("-o", loop / "repro.py")  # the loop is a folder on the way
    assert str(e.value) == f"-o {loop / 'repro.py'}: is a loop of symbolic links (too many levels); name another path"


def test_create_is_a_new_file_or_one_line(tmp_path):
    run = writes.Outputs()
    fd = run.create("", tmp_path / "a.ndjson")
    os.close(fd)
    with pytest.raises(UsageError) as e:
        run.create("", tmp_path / "a.ndjson")
    assert str(e.value) == f"{tmp_path / 'a.ndjson'}: exists, and this run did not write it; {KEEP}"
    (tmp_path / "b.ndjson").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="exists, and this run did not write it"):
        run.create("", tmp_path / "b.ndjson")
    assert not (tmp_path / "nowhere").exists()


def test_an_input_a_stream_named_after_the_check_is_refused_at_the_write(tmp_path):
    script = tmp_path / "repro.py"  # the user ran an earlier repro under capture: a marker, and an input
    script.write_text(EARLIER["repro.py"])
    run = writes.Outputs([("stdin", "-")])
    run.check("-o", script)
    model = SimpleNamespace(file=str(tmp_path / "store" / "m.py"), captured=SimpleNamespace(
        command=["python", str(script), "--cfg=x.yaml"], source=f"{script}:12", called_from=None,
        backend_code=f"{tmp_path / 'be.py'}:mybk", code_settings={"inductor.post_grad_custom_post_pass": "p.py:f"}))
    assert writes.named_by(model)[:1] + writes.named_by(model)[2:] == [
        ("the model file", str(tmp_path / "store" / "m.py")),
        ("the captured command's argument", str(script)), ("the captured command's argument", "--cfg=x.yaml"),
        ("the captured command's argument", "x.yaml"), ("the captured function's file", str(script)),
        ("the backend file", str(tmp_path / "be.py")), ("the code file", "p.py")]
    run.add_inputs(writes.named_by(model))
    with pytest.raises(UsageError) as e:
        run.write("-o", script, "the repro")
    assert str(e.value) == (f"-o {script}: is the same file as the captured command's argument {script}; writing "
                            "it would overwrite an input")
    assert script.read_text() == EARLIER["repro.py"]
