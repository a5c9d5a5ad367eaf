"""One float64 reference: kdiff's (the run that decided the failure), minify's for every candidate, and the
repro's, run as a standalone script with pt2kit not importable, give the same values bit for bit."""

import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from pt2kit.kdiff import backends  # noqa: E402
from pt2kit.minify.judge import harness  # noqa: E402
from pt2kit.minify.parent.embed import closure  # noqa: E402

# as minify writes a candidate: an aten graph as a module, its constants fed in as inputs
MODELS = textwrap.dedent('''
    class HalfCast(torch.nn.Module):
        """A mixed-precision block: a softmax through float16 and back, a bfloat16 round trip, float32 casts
        by keyword and by position, a float32 constant."""

        def forward(self, x, w):
            h = torch.ops.prims.convert_element_type.default(x, torch.float16)  # rounds: the model asks it to
            s = torch.ops.aten._softmax.default(torch.ops.aten.mm.default(
                torch.ops.aten._to_copy.default(h, dtype=torch.float32), w), -1, False)
            b = torch.ops.aten._to_copy.default(torch.ops.aten._to_copy.default(x, dtype=torch.bfloat16),
                                                dtype=torch.float32)
            third = torch.ops.prims.convert_element_type.default(torch.ops.aten.div.Tensor(x, 3), torch.float32)
            c = torch.ops.aten.full.default([3], 0.1, dtype=torch.float32, device=x.device)
            return (s, b + 1e-3, third, torch.ops.aten.mul.Tensor(c, 7))


    class Cond(torch.nn.Module):
        """torch.cond on a float32 cast of the input (a cast inside a branch: torch.cond traces its branches
        itself, outside any mode, and refuses branches whose dtypes then differ)."""

        def forward(self, x):
            def big(t):
                return (t * 3).sin()

            def small(t):
                return t.cos() / 3

            y = torch.ops.aten._to_copy.default(x, dtype=torch.float32)
            return (torch.cond(y.sum() > 0, big, small, (y,)), torch.cond(y.sum() < 0, big, small, (y,)))
''')

namespace = {"torch": torch}
exec(MODELS, namespace)


def _inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, generator=g)
    return {"HalfCast": [x, torch.randn(3, 3, generator=g)], "Cond": [x.abs() + 0.5]}


def _kdiff(name, inputs):
    """kdiff's eager64 side, as kdiff's work runs it: backends.prepare, called under backends.context."""
    side = backends.resolve("eager64", role="ref")
    model, args = backends.prepare(namespace[name](), inputs, side)
    with torch.no_grad(), backends.context(side):
        return list(model(*args))


REPRO_MAIN = '''
if __name__ == "__main__":
    out = {}
    for name, inputs in torch.load(sys.argv[1], weights_only=True).items():
        out[name] = run_float64(globals()[name](), fresh(inputs), eager_outputs)
    torch.save(out, sys.argv[2])
'''


@pytest.fixture(scope="module")
def repro_values(tmp_path_factory):
    d = tmp_path_factory.mktemp("repro")
    torch.save(_inputs(), d / "inputs.pt")
    script = d / "reference.py"
    # what repro.py holds of the float64 run (embedded by source), with every import of pt2kit made to fail:
    # the repro must not need it
    check = closure([harness.run_float64, harness.fresh, harness.eager_outputs])
    script.write_text("import sys\nsys.modules['pt2kit'] = sys.modules['pt2kit_portable'] = None\n"
                      + "\n".join(check.imports) + "\n\n" + MODELS + "\n\n" + check.source() + REPRO_MAIN)
    p = subprocess.run([sys.executable, str(script), str(d / "inputs.pt"), str(d / "out.pt")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return torch.load(d / "out.pt", weights_only=True)


def _bits(t):
    assert t.dtype == torch.float64
    return t.contiguous().view(torch.int64)


@pytest.mark.parametrize("name", ["HalfCast", "Cond"])
def test_kdiffs_minifys_and_the_repros_float64_references_are_the_same_bits(name, repro_values):
    inputs = _inputs()[name]
    kdiff = _kdiff(name, inputs)
    minify = harness.run_float64(namespace[name](), harness.fresh(inputs), harness.eager_outputs)
    repro = repro_values[name]
    assert len(kdiff) == len(minify) == len(repro)
    for i, (k, m, r) in enumerate(zip(kdiff, minify, repro, strict=True)):
        assert torch.equal(_bits(k), _bits(m)), f"{name} output {i}: minify's candidate reference differs from kdiff's"
        assert torch.equal(_bits(k), _bits(r)), f"{name} output {i}: the repro's reference differs from kdiff's"


def test_the_reference_rounds_where_the_model_casts_to_half_and_nowhere_else():
    x, w = _inputs()["HalfCast"]
    s, b, third, c = _kdiff("HalfCast", [x, w])
    x64 = x.double()
    # float16 and bfloat16 round as in the float32 model; every float32 cast stays float64, unrounded
    assert torch.equal(s, torch.softmax(x64.half().double() @ w.double(), -1))
    assert torch.equal(b, x64.bfloat16().double() + 1e-3)
    assert torch.equal(third, x64 / 3)
    assert torch.equal(c, torch.full([3], 0.1, dtype=torch.float64) * 7)
