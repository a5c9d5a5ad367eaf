"""Numeric flags' ranges (pt2kit.runtime.common.flags): what each refuses, in the one line the user sees."""

from __future__ import annotations

import math

import pytest

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.flags import (
    MAX_SECONDS,
    SEED_MAX,
    SEED_MIN,
    check_finite,
    check_range,
    check_seconds,
    check_seed,
    worker_cap,
)


def test_finite_refuses_nan_infinities_negatives_and_past_the_bound():
    assert check_finite("--atol", 0.0) == 0.0
    assert check_finite("--atol", None) is None
    for bad in (math.nan, math.inf, -math.inf, -1e-9):
        with pytest.raises(UsageError, match=r"^--atol .*: expected a finite number >= 0$"):
            check_finite("--atol", bad)
    with pytest.raises(UsageError, match=r"^--budget 0.0: expected a finite number > 0$"):
        check_finite("--budget", 0.0, positive=True)
    with pytest.raises(UsageError, match=r"^--x 11: expected a finite number >= 0 and <= 10$"):
        check_finite("--x", 11, at_most=10)


def test_seconds_are_bounded_where_timers_still_work():
    assert check_seconds("--timeout", MAX_SECONDS) == MAX_SECONDS
    with pytest.raises(UsageError) as e:
        check_seconds("--timeout", 1e300)  # threading.Timer overflows on this: no timeout at all
    assert str(e.value) == "--timeout 1e+300: expected a finite number > 0 and <= 604800"


def test_range_names_its_bounds():
    assert check_range("--repeat", 3, 3, 10000) == 3
    assert check_range("--repeat", None, 3, 10000) is None
    with pytest.raises(UsageError) as e:
        check_range("--repeat", 10_000_000_000_000, 3, 10000)
    assert str(e.value) == "--repeat 10000000000000: expected from 3 to 10000"
    with pytest.raises(UsageError) as e:
        check_range("--jobs", 0, 1, what="a number of workers")
    assert str(e.value) == "--jobs 0: expected a number of workers >= 1"


def test_seeds_are_torchs_range():
    assert check_seed("--seed", SEED_MIN) == -(2**63)
    assert check_seed("--seed", SEED_MAX) == 2**64 - 1
    for bad in (SEED_MIN - 1, SEED_MAX + 1, 999999999999999999999999999):
        with pytest.raises(UsageError) as e:
            check_seed("--seed", bad)
        assert str(e.value) == f"--seed {bad}: expected a seed torch accepts, from -2**63 to 2**64-1"


def test_worker_cap_is_what_cpus_and_memory_serve(monkeypatch):
    import pt2kit.runtime.common.flags as flags

    monkeypatch.setattr(flags, "usable_cpus", lambda: 16)
    monkeypatch.setattr(flags, "available_memory", lambda: 3 * 2**30)
    assert worker_cap(2**30) == (3, "16 usable CPU(s), 3.0 GiB of memory available at about 1 GiB a worker")
    monkeypatch.setattr(flags, "available_memory", lambda: 100 * 2**20)  # less than one worker's worth: still one
    assert worker_cap(2**30)[0] == 1
    monkeypatch.setattr(flags, "available_memory", lambda: None)
    assert worker_cap(2**30) == (16, "16 usable CPU(s)")


def test_a_renamed_flag_takes_either_name_and_refuses_both_when_they_differ():
    from pt2kit.runtime.common.flags import renamed

    assert renamed("--backend", None, "--test", "eager") == "eager"
    assert renamed("--backend", "eager", "--test", None) == "eager"
    assert renamed("--backend", "eager", "--test", "eager") == "eager"
    assert renamed("--backend", None, "--test", None) is None
    with pytest.raises(UsageError, match=r"^--test is --backend's old name: give one$"):
        renamed("--backend", "inductor", "--test", "eager")
