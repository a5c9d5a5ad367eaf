"""A forward that writes its input and a buffer in place before using them: a run that starts from
the buffer a run before it halved computes from other values (kdiff's sides must each start from the
file's values: the inputs are copied per side, the buffer is written back)."""
import torch


class Halve(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.register_buffer("scale", torch.full((4,), 2.0))

    def forward(self, x):
        x.mul_(0.5)
        self.scale.mul_(0.5)
        return self.fc(x) * self.scale


torch.manual_seed(0)
model = Halve()
example_inputs = (torch.randn(3, 8),)


def _writes_the_input_twice_halved(gm, example_inputs):
    """AOTAutograd's forward returns the batch's new value for the runtime to write back: this one returns
    it doubled (x * 0.5 * 2), while the graph's own math uses the right value: outputs and gradients pass."""
    from functorch.compile import make_boxed_func

    out = next(n for n in gm.graph.nodes if n.op == "output")
    outs = list(out.args[0])
    for i, o in enumerate(outs):
        src = o.args[0] if isinstance(o, torch.fx.Node) and o.target == torch.ops.aten.mul.Tensor else None
        if isinstance(src, torch.fx.Node) and src.op == "placeholder" and tuple(src.meta["val"].shape) == (3, 8):
            with gm.graph.inserting_before(out):
                outs[i] = gm.graph.call_function(torch.ops.aten.mul.Tensor, (o, 2.0))
            break
    out.args = (tuple(outs),)
    gm.recompile()
    return make_boxed_func(gm.forward)


def bad_write(gm, example_inputs):
    """A backend whose forward writes the batch back wrong (see above); its backward is AOTAutograd's own."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=_writes_the_input_twice_halved,
                        bw_compiler=lambda g, _: make_boxed_func(g.forward))(gm, example_inputs)


def good(gm, example_inputs):
    """The same AOTAutograd backend writing the batch back right (AOTAutograd's default partitioner: the
    min-cut one of aot_eager and Inductor recomputes ``scale * 0.5`` in the backward from the buffer already
    halved, PyTorch's own wrong gradients, pytorch/pytorch#197039)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=lambda g, _: make_boxed_func(g.forward),
                        bw_compiler=lambda g, _: make_boxed_func(g.forward))(gm, example_inputs)
