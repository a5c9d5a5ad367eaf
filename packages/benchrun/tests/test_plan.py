"""The sweep's plan: backends as given, shards that partition the jobs, LPT balance by durations."""

from __future__ import annotations

import pytest

from pt2kit.benchrun.plan import JobSpec, backends_of, durations_from, parse_backend, parse_shard, shard_jobs
from pt2kit.runtime.common.errors import UsageError
from pt2kit.schema import Bench


def _jobs(n: int) -> list[JobSpec]:
    return [JobSpec(model=f"m{i // 2}.py", label=f"m{i // 2}.py", backend=("eager", "inductor")[i % 2], device="cpu")
            for i in range(n)]


def test_backends_in_order_each_once():
    assert backends_of(["eager,inductor", "inductor:max-autotune", "eager"]) == ["eager", "inductor",
                                                                                "inductor:max-autotune"]
    assert backends_of(None) == ["inductor"]
    assert parse_backend("my_backends.py:fast") == ("callable", "my_backends.py:fast")
    with pytest.raises(UsageError):
        backends_of(["eager,,inductor"])
    # told before the sweep runs a model: benchrun ran one eagerly (its first call said) before this line
    with pytest.raises(UsageError, match=r"^--backend nothere\.py:fn: no such file nothere\.py$"):
        backends_of(["eager,nothere.py:fn"])


@pytest.mark.parametrize("n_jobs, shards", [(1, 1), (5, 2), (7, 3), (3, 5)])
def test_shards_by_count_partition_the_jobs(n_jobs, shards):
    jobs = _jobs(n_jobs)
    parts = [shard_jobs(jobs, i, shards) for i in range(1, shards + 1)]
    assert sorted(j.key for p in parts for j in p) == sorted(j.key for j in jobs)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_durations_balance_better_than_counts():
    jobs = _jobs(6)
    records = [Bench(v=1, run="r", model=j.label, backend=j.backend, wall_s=w)
               for j, w in zip(jobs, [100, 1, 100, 1, 1, 1], strict=True)]
    d = durations_from(records)
    by_time = [sum(d[j.key] for j in shard_jobs(jobs, i, 2, d)) for i in (1, 2)]
    by_count = [sum(d[j.key] for j in shard_jobs(jobs, i, 2)) for i in (1, 2)]
    assert sorted(by_time) == [102, 102] and max(by_count) == 201
    # a job the earlier run lacks costs the median, and every shard computes the same plan
    partial = {k: v for k, v in d.items() if not k.startswith("m2.py")}
    first = [shard_jobs(jobs, i, 3, partial) for i in (1, 2, 3)]
    assert first == [shard_jobs(jobs, i, 3, partial) for i in (1, 2, 3)]
    assert sorted(j.key for p in first for j in p) == sorted(j.key for j in jobs)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shards(text):
    with pytest.raises(UsageError):
        parse_shard(text)
