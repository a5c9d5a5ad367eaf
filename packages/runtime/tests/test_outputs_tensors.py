from __future__ import annotations

import dataclasses
from collections import OrderedDict, namedtuple

import pytest

from pt2kit.runtime.worker.outputs import flatten

torch = pytest.importorskip("torch")


@dataclasses.dataclass
class Out:
    logits: object
    hidden: object


def test_names_follow_pytree_key_paths():
    t = torch.zeros(1)
    P = namedtuple("P", "a b")
    names = [n for n, _ in flatten((t, {"k": [t, t]}, Out(t, None), P(t, 2), OrderedDict(z=t)))]
    assert names == ["out[0]", "out[1]['k'][0]", "out[1]['k'][1]", "out[2].logits", "out[2].hidden",
                     "out[3].a", "out[3].b", "out[4]['z']"]
    assert flatten(t) == [("out", t)]


def test_tensor_store_roundtrip_uses_weights_only(tmp_path):
    import io

    from pt2kit.runtime.common.tensors import save_tensor, tensor_meta
    from pt2kit.schema import Store

    s = Store(tmp_path)
    x = torch.arange(12.0).reshape(3, 4).t()
    ref = save_tensor(s, x)
    assert ref.media_type == "application/x-pytorch" and ref.path.endswith(".pt")
    assert torch.equal(torch.load(io.BytesIO(s.read(ref)), weights_only=True), x)  # a plain tensor: no pickle needed
    meta = tensor_meta("x", x)
    assert meta.shape == [4, 3] and meta.stride == [1, 4] and meta.dtype == "float32"


class _Layer:
    def __init__(self, k: object, v: object) -> None:
        self.keys, self.values = k, v
        self.dtype = torch.float32  # metadata: never a leaf
        self.is_initialized = True


class _Cache:
    """Shaped like transformers' DynamicCache: unknown to pytree, tensors two attributes down."""

    def __init__(self, layers: list[_Layer]) -> None:
        self.layers = layers
        self.offloading = False
        self._private = torch.ones(1)
        self.me = self  # a cycle ends the walk


def test_objects_pytree_does_not_know_are_walked_through_their_tensors():
    from pt2kit.runtime.worker.outputs import is_plain

    t = torch.zeros(2)
    out = {"logits": t, "past_key_values": _Cache([_Layer(t, t), _Layer(t, t)]), "empty": _Cache([])}
    names = [n for n, _ in flatten(out)]
    assert names == ["out['logits']", "out['past_key_values'].layers[0].keys", "out['past_key_values'].layers[0].values",
                     "out['past_key_values'].layers[1].keys", "out['past_key_values'].layers[1].values", "out['empty']"]
    opaque = flatten(out)[-1][1]
    assert isinstance(opaque, _Cache) and not is_plain(opaque) and is_plain(None) and is_plain(3.5)


def _njt(*lengths: int, width: int = 3):
    return torch.nested.nested_tensor([torch.arange(n * width, dtype=torch.float32).reshape(n, width)
                                       for n in lengths], layout=torch.jagged)


def test_a_jagged_tensor_is_described_by_its_ragged_size_and_offsets():
    from pt2kit.runtime.common.tensors import first_jagged, jagged, nested_from, tensor_meta

    x = _njt(2, 4)
    meta = tensor_meta("inputs[1]", x)
    assert meta.shape[0] == 2 and meta.shape[2] == 3 and str(meta.shape[1]).startswith("j")  # j1, j2...: torch's count
    assert (meta.layout, meta.offsets, meta.stride, meta.dtype) == ("jagged", [0, 2, 6], None, "float32")
    j = jagged(x)
    assert j.ragged_dim == 1 and j.values.shape == (6, 3) and j.offsets.tolist() == [0, 2, 6]
    back = nested_from(j.values, j.offsets, j.ragged_dim)
    assert [t.tolist() for t in back.unbind()] == [t.tolist() for t in x.unbind()]
    assert jagged(torch.zeros(2, 3)) is None and jagged(None) is None
    assert first_jagged((torch.zeros(1), {"mask": x})) == "inputs[1]['mask']"
    assert first_jagged((torch.zeros(1),)) is None


def test_a_jagged_leaf_is_compared_as_its_values_and_its_offsets():
    from pt2kit.runtime.common.tensors import unjag

    x, t = _njt(2, 4), torch.ones(1)
    leaves = unjag([("out[0]", x), ("out[1]", t)])
    assert [n for n, _ in leaves] == ["out[0]", "out[0].offsets()", "out[1]"]
    assert leaves[0][1].shape == (6, 3) and leaves[1][1].tolist() == [0, 2, 6] and leaves[2][1] is t
