"""Each real-bug script names what a maintainer needs to check a triage of it: the issue, the fix, the stage,
the op and the file the fix changed (tests/realbugs/README.md's table is these fields). No torch here: the
corpus runs in `nox -s realbugs`, which installs the torch the bugs fail on."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("realbugs_run", HERE / "run.py")
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)

KINDS = {"wrong-result", "crash", "lowering", "backward", "dynamic", "hop", "dynamo", "layout", "constant",
         "inplace", "signal"}


def test_the_corpus_holds_twenty_bugs_each_with_every_header_field() -> None:
    bugs = run.bugs()
    assert len(bugs) >= 20, [b.name for b in bugs]
    for bug in bugs:
        h = run.header(bug)
        missing = [f for f in run.FIELDS if not h.get(f)]
        assert not missing, f"{bug.name}: header lacks {missing}"
        assert re.fullmatch(r"https://github\.com/pytorch/pytorch/issues/\d+", h["issue"]), (bug.name, h["issue"])
        assert re.fullmatch(r"https://github\.com/pytorch/pytorch/pull/\d+", h["fix"]) or h["fix"].startswith(
            "not identified"), (bug.name, h["fix"])
        assert h["stage"] in ("dynamo", "aot", "inductor"), (bug.name, h["stage"])
        assert set(h["class"].split(",")) <= KINDS, (bug.name, h["class"])
        assert re.fullmatch(r"-|[1-6](,[1-6])*", h["issue57"]), (bug.name, h["issue57"])


def test_the_readme_table_lists_every_bug_with_its_issue() -> None:
    readme = (HERE / "README.md").read_text()
    for bug in run.bugs():
        issue = run.header(bug)["issue"].rsplit("/", 1)[1]
        assert re.search(rf"^\| `{bug.name}` \|.*#{issue}\b", readme, re.M), bug.name
