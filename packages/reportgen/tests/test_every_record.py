"""Every record the schema accepts renders in every format and compares: built from the Structs
themselves (msgspec.inspect), with optional fields left out, numbers 0, negative and huge, and NaN/Inf
wherever a field is a ``Num``. reportgen exits 0 on a report and 0 or 1 on a comparison, never 3."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import msgspec.inspect as mi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rgtest import cli

from pt2kit.schema import Bench, Latency, Record, read_stream
from pt2kit.schema.records import RECORD_TYPES

BIG = 1.7976931348623157e308
FLOATS = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, BIG, -BIG, 1e300]),
                   st.floats(allow_nan=False, allow_infinity=False))  # JSON carries no NaN in a plain float
INTS = st.one_of(st.sampled_from([0, -1, 1, 2**63 - 1, -(2**63)]), st.integers(-(2**63), 2**63 - 1))


def strategy(t: mi.Type) -> st.SearchStrategy:
    """Values of a msgspec type, as the schema's reader accepts them."""
    if isinstance(t, mi.NoneType):
        return st.none()
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.IntType):
        return INTS
    if isinstance(t, mi.FloatType):
        return FLOATS
    if isinstance(t, mi.StrType):
        return st.text(max_size=12)
    if isinstance(t, mi.LiteralType):
        return st.sampled_from(t.values)
    if isinstance(t, mi.UnionType):
        return st.one_of(*(strategy(x) for x in t.types))
    if isinstance(t, mi.ListType):
        return st.lists(strategy(t.item_type), max_size=3)
    if isinstance(t, mi.DictType):
        return st.dictionaries(strategy(t.key_type), strategy(t.value_type), max_size=3)
    if isinstance(t, mi.StructType):
        return struct(t.cls)
    raise AssertionError(f"no strategy for {t}: the schema grew a type this test must learn")


def struct(cls: type) -> st.SearchStrategy:
    fields = {}
    for f in mi.type_info(cls).fields:
        if f.name == "v":
            fields[f.name] = st.just(1)
        elif f.required:
            fields[f.name] = strategy(f.type)
        else:  # left out (its default) or given
            fields[f.name] = st.one_of(st.just(f.default if f.default is not msgspec.NODEFAULT else
                                               f.default_factory()), strategy(f.type))
    return st.builds(cls, **fields)


RECORDS = st.one_of(*(struct(cls) for cls in RECORD_TYPES))
# a run as a sweep makes one: the same few (model, backend) benchmarks and findings before and after
MODELS = st.sampled_from(["m.py", "n.py"])


def _paired(r: Record, model: str) -> Record:
    return msgspec.structs.replace(r, model=model) if hasattr(r, "model") else r


def _stream(records: list[Record]) -> bytes:
    data = b"".join(msgspec.json.encode(r) + b"\n" for r in records)
    assert len(list(read_stream(["-"], stdin=io.BytesIO(data)))) == len(records)  # schema-valid, as generated
    return data


def _run(tmp_path: Path, name: str, records: list[Record]) -> str:
    path = tmp_path / name
    path.write_bytes(_stream(records))
    return str(path)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(st.lists(st.tuples(RECORDS, MODELS), min_size=1, max_size=6),
       st.lists(st.tuples(RECORDS, MODELS), min_size=1, max_size=6))
def test_every_schema_valid_record_renders_and_compares(tmp_path, before, after):
    a = _run(tmp_path, "before.ndjson", [_paired(r, m) for r, m in before])
    b = _run(tmp_path, "after.ndjson", [_paired(r, m) for r, m in after])
    for fmt in ("html", "json", "md", "text"):
        code, err = cli([a, b, "--format", fmt, "-o", str(tmp_path / f"report.{fmt}"), "--quiet"])
        assert code == 0, err
        code, err = cli(["--compare", a, b, "--format", fmt, "-o", str(tmp_path / f"cmp.{fmt}"), "--quiet"])
        assert code in (0, 1), err


def _bench(**kw: float | None) -> Bench:
    lat = Latency(n=5, mean=0.001, median=0.001, min=0.001, max=0.001)
    return Bench(v=1, run="r", model="m.py", backend="inductor", eager=lat, latency=lat, **kw)


def test_a_zero_speedup_and_a_missing_interval_bound_compare_and_render(tmp_path):
    # seen: ZeroDivisionError (exit 3) on speedup 0.0, TypeError on speedup_hi null; the page failed alike
    cases = [("zero", dict(speedup=0.0, speedup_lo=0.0, speedup_hi=0.0)),
             ("nohi", dict(speedup=1.5, speedup_lo=1.4, speedup_hi=None)),
             ("fast", dict(speedup=2.0, speedup_lo=1.9, speedup_hi=2.1))]
    runs = {name: _run(tmp_path, f"{name}.ndjson", [_bench(**kw)]) for name, kw in cases}
    code, err = cli(["--compare", runs["fast"], runs["zero"], "-o", str(tmp_path / "z.txt")])
    assert code == 1, err
    text = (tmp_path / "z.txt").read_text()
    assert "REGRESSION  m.py × inductor (cpu): 2.00x [1.90, 2.10] -> 0.00x [0.00, 0.00]  (slower: less speedup)" in text
    code, err = cli(["--compare", runs["zero"], runs["fast"], "-o", str(tmp_path / "f.txt")])
    assert code == 0 and "improved    m.py × inductor (cpu)" in (tmp_path / "f.txt").read_text(), err
    # one bound missing: the speedup is shown without an interval, and no verdict is drawn from half of one
    code, err = cli(["--compare", runs["fast"], runs["nohi"], "-o", str(tmp_path / "h.txt")])
    assert code == 0 and "unchanged   m.py × inductor (cpu): 2.00x [1.90, 2.10] -> 1.50x  (within" in \
        (tmp_path / "h.txt").read_text(), err
    for name in ("zero", "nohi"):
        for fmt in ("html", "md", "text", "json"):
            code, err = cli([runs[name], "--format", fmt, "-o", str(tmp_path / f"{name}.{fmt}")])
            assert code == 0, err
    assert "0.00×</b> [0.00, 0.00]" in (tmp_path / "zero.html").read_text()
    assert "1.50×</b></td>" in (tmp_path / "nohi.html").read_text()
