"""A failure that lives in a layout (issue 57, class 1). ``g`` is one row expanded to four (stride 0, over a
storage of 12), as ``.sum().backward()`` hands a gradient on. ``dense_reader``, a torch.compile backend with a
planted bug, reads each tensor input as a dense row-major block of its storage from its storage offset, as a
kernel written for contiguous inputs does when it skips the stride check: right on a contiguous input, wrong
on an expanded or overlapping one. A repro that rebuilds ``g`` contiguous passes."""
import torch


class Scale(torch.nn.Module):
    def forward(self, g, x):
        return torch.relu(g * x + 1)


def dense_reader(gm, example_inputs):
    def run(*args):
        return gm(*(torch.as_strided(a, a.shape, torch.empty(a.shape).stride(), a.storage_offset())
                    if isinstance(a, torch.Tensor) else a for a in args))

    return run


torch.manual_seed(0)
model = Scale()
example_inputs = (torch.randn(4, 3)[:1].expand(4, 3), torch.randn(4, 3))
