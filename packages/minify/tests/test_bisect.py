"""minify's bisection decisions (pt2kit.minify.parent.bisect), torch-free: the workers replaced by a planted
compiler whose culprit is known, so each rule is checked in milliseconds (the real compiles, with torch's
own switches, are test_minify_cli.py's and test_train.py's: the relu bug in a forward and a backward
graph, the eager backend showing a NaN, a user backend calling no Inductor)."""

from __future__ import annotations

from typing import Any

from pt2kit.minify.parent.bisect import bisect
from pt2kit.minify.parent.bisected import doc, line

PLAN = {"inductor": [{"name": "pre_grad_passes"}, {"name": "joint_graph_passes"}, {"name": "post_grad_passes"},
                     {"name": "inductor_fallback_random", "config": {"torch._inductor.config": {"fallback_random": "True"}}},
                     {"name": "cudagraphs"}, {"name": "lowerings"}],
        "aot_eager_decomp_partition": [
            {"name": "aot_eager_decomp_partition_cse", "config": {"torch._functorch.config": {"cse": "False"}}},
            {"name": "decomposition"}]}
FAILURE = {"kind": "accuracy", "signature": "accuracy"}


class Planted:
    """A pool whose compiler fails per ``fails(backend, config, switch)``; a census sees ``applied``."""

    def __init__(self, fails: Any, applied: dict[str, int], workers: int = 2, keeps: bool = True,
                 installs: list[str] | None = None, dies: bool = False) -> None:
        self.dies = dies  # a crash: a failing run's worker dies, so the applications it counted never come back
        self.fails, self.applied, self.workers, self.asked = fails, applied, [None] * workers, []
        self.installs = installs or []  # ops a backend of the user's puts into Inductor's decomposition table
        self.keeps = keeps  # whether this torch keeps a user's backend under the switches

    def ask(self, op: str, payload: Any) -> dict[str, Any]:
        assert op == "bisect_plan"
        return {"t": "done", "result": {b: PLAN.get(b, []) for b in payload["backends"]}}

    def map(self, op: str, payloads: list[Any]) -> list[dict[str, Any]]:
        assert op == "bisect"
        out = []
        for p in payloads:
            self.asked.append(p)
            q, sw = p["query"], p["switch"]
            bad = self.fails(q["backend"], q["config"], sw)
            apps = []
            if sw is not None:
                names = self.applied if sw["subsystem"] is None else {sw["subsystem"]: self.applied.get(sw["subsystem"], 0)}
                apps = [[s, i, sw["subsystem"] is None or i <= sw["limit"], f"{s} #{i}"]
                        for s, n in names.items() for i in range(n)]
            if bad and self.dies:
                out.append({"t": "died", "signal": "SIGABRT"})
                continue
            out.append({"t": "done", "result": {"fails": bad, "signature": "accuracy" if bad else "passes",
                                                "applications": apps, "switched": self.keeps or not p["keep"],
                                                "installed": self.installs if ":" in q["backend"] else []}})
        return out


def _run(pool: Planted, tested: str = "inductor") -> dict[str, Any]:
    return bisect(pool, {"backend": tested, "config": {}}, FAILURE, tested, lambda m: None)


def test_a_post_grad_pass_application_is_found_by_search_and_checked_off_and_on():
    def fails(backend, config, sw):  # applications 0..k of post_grad_passes on: fails from the 6th on
        if backend != "inductor":
            return False
        return not (sw and sw["subsystem"] == "post_grad_passes" and sw["limit"] < 5)

    pool = Planted(fails, {"pre_grad_passes": 2, "post_grad_passes": 12, "lowerings": 3})
    b = _run(pool)
    assert (b["backend"], b["subsystem"], b["application"], b["applications"]) == ("inductor", "post_grad_passes", 5, 12)
    assert b["what"] == "post_grad_passes #5" and b["found"]
    assert b["env"] == {"TORCH_BISECT_BACKEND": "inductor", "TORCH_BISECT_SUBSYSTEM": "post_grad_passes",
                        "TORCH_BISECT_MAX": "5"}
    assert b["off"]["setting"].endswith("TORCH_BISECT_MAX=4") and not b["off"]["fails"] and b["on"]["fails"]
    # joint_graph_passes and cudagraphs were never applied: not tried; the search is k-ary, not a run a count
    tried = [p["switch"]["subsystem"] for p in pool.asked if p["switch"] and p["switch"]["subsystem"] and p["switch"]["limit"] == -1]
    assert tried == ["pre_grad_passes", "post_grad_passes"] and b["steps"] == len(pool.asked) < 14
    assert "TORCH_BISECT_MAX=5 python repro.py  # fails (exit 1)" in doc(b)
    assert "TORCH_BISECT_MAX=4 python repro.py  # passes (exit 0)" in doc(b)


def test_a_crash_whose_census_died_is_still_bisected_to_the_application():
    # Inductor's planted relu crash (SIGABRT in the kernel) killed the census run, so no application was
    # counted and every counted subsystem went untried: "switching off none of its subsystems makes it pass"
    def fails(backend, config, sw):  # lowerings' applications 0..k on: dies from the 3rd on
        return backend == "inductor" and not (sw and sw["subsystem"] == "lowerings" and sw["limit"] < 2)

    b = bisect(Planted(fails, {"lowerings": 9}, dies=True), {"backend": "inductor", "config": {}},
               {"kind": "crash", "signature": "SIGABRT"}, "inductor", lambda m: None)
    assert (b["subsystem"], b["application"], b["applications"], b["found"]) == ("lowerings", 2, None, True)
    assert b["verdict"] == "Inductor: lowerings, application 2" and b["on"]["signature"] == "died with SIGABRT"
    assert b["off"]["setting"].endswith("TORCH_BISECT_MAX=1") and not b["off"]["fails"]


def test_a_config_change_that_makes_it_pass_is_the_answer_in_torchs_order():
    def fails(backend, config, sw):
        return backend == "inductor" and config.get("torch._inductor.config", {}).get("fallback_random") != "True"

    b = _run(Planted(fails, {"post_grad_passes": 4, "lowerings": 1}))
    assert b["subsystem"] == "inductor_fallback_random" and b["config"] == "torch._inductor.config.fallback_random=True"
    assert b["found"] and b["env"] == {} and b["off"]["setting"] == b["config"] and not b["off"]["fails"]
    assert "Checked: torch._inductor.config.fallback_random=True: passes; backend inductor: fails." in \
        doc(b).replace("\n", " ") and "fallback_random=True makes it pass; checked: off, it passes" in line(b)


def test_a_config_the_repro_already_runs_under_is_not_flipped():
    # the accuracy harness's precision sets fallback_random: flipping it to True is the same compile
    pool = Planted(lambda backend, config, sw: backend == "inductor", {"lowerings": 1})
    bisect(pool, {"backend": "inductor", "config": {}}, {**FAILURE, "precision": {"fallback_random": True}},
           "inductor", lambda m: None)
    assert not [p for p in pool.asked if "fallback_random" in str(p["query"]["config"])]


def test_a_failure_aot_eager_shows_is_aotautogradss_and_eager_passing_is_the_check():
    b = _run(Planted(lambda backend, config, sw: backend != "eager", {"lowerings": 1}))
    assert b["backend"] == "aot_eager" and "subsystem" not in b and b["found"]
    assert b["chain"] == {"eager": False, "aot_eager": True, "aot_eager_decomp_partition": True, "inductor": True}
    assert b["off"]["setting"] == "backend eager" and b["on"]["setting"] == "backend aot_eager"
    assert b["verdict"] == "AOTAutograd: eager passes, aot_eager fails"


def test_a_decomposition_is_bisected_in_aot_eager_decomp_partition_after_a_census_of_it():
    def fails(backend, config, sw):
        if backend in ("eager", "aot_eager"):
            return False
        return not (sw and sw["subsystem"] == "decomposition" and sw["limit"] < 2)

    b = _run(Planted(fails, {"decomposition": 3, "lowerings": 2}))
    assert (b["backend"], b["subsystem"], b["application"], b["found"]) == ("aot_eager_decomp_partition",
                                                                           "decomposition", 2, True)


def test_nothing_that_flips_is_said_and_not_claimed():
    b = _run(Planted(lambda backend, config, sw: backend == "inductor", {"lowerings": 2}))
    assert b["backend"] == "inductor" and "subsystem" not in b
    assert "switching off none of its subsystems (pre_grad_passes" not in b["verdict"]  # never applied: not named
    assert b["verdict"].endswith("switching off none of its subsystems (inductor_fallback_random, lowerings) makes it "
                                 "pass")


def test_a_repro_that_no_longer_fails_tells_no_stage():
    b = _run(Planted(lambda backend, config, sw: False, {}))
    assert not b.get("found") and "does not fail with inductor" in b["verdict"] and "backend" not in b


def test_a_backend_of_the_users_is_bisected_in_inductor_only_where_it_calls_inductor_and_torch_keeps_it():
    own = "/src/backends.py:wrapped"

    def fails(backend, config, sw):  # the user's backend calls Inductor, whose lowering 1 of 2 is wrong
        return backend == own and not (sw and sw["subsystem"] == "lowerings" and sw["limit"] < 1)

    b = _run(Planted(fails, {"lowerings": 2}), own)
    assert (b["backend"], b["subsystem"], b["application"], b["found"]) == (own, "lowerings", 1, True)
    assert b["env"] == {} and b["verdict"].startswith(f"{own} (a backend of your own) calls Inductor: Inductor: lowerings")
    b = _run(Planted(fails, {"lowerings": 2}, keeps=False), own)  # a torch that would swap in Inductor
    assert "subsystem" not in b and "cannot keep a backend of your own" in b["verdict"] and b["chain"][own]
    b = _run(Planted(fails, {}), own)  # no application of Inductor's seen: the backend calls none
    assert "calls no Inductor" in b["verdict"] and "subsystem" not in b


def test_a_decomposition_a_backend_of_the_users_installs_is_named_as_why_no_stage_is_told():
    # tests/bisect/wrong_decomp.py: PyTorch's bisector names aot_eager_decomp_partition's decomposition on the script
    # (its top level changed the table for every backend); handed over as a backend that installs it when called,
    # aot_eager_decomp_partition passes and no Inductor subsystem flips it: no false stage, and why
    own = "/src/wrong_decomp.py:inductor_with_wrong_silu"
    b = _run(Planted(lambda backend, config, sw: backend == own, {"lowerings": 2}, installs=["aten.silu.default"]), own)
    assert "subsystem" not in b and b["chain"] == {"eager": False, "aot_eager": False,
                                                   "aot_eager_decomp_partition": False, own: True}
    assert "puts its own decomposition of aten.silu.default into Inductor's table, which PyTorch's bisector cannot " \
           "switch off with your backend kept" in b["verdict"] and b["verdict"].endswith("no stage told")
