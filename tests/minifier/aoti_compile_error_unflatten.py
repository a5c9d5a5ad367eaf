"""test/inductor/test_minifier.py (a version holding _test_aoti)::test_aoti_cpu_compile_error_unflatten (cpu):
dict inputs and a keyword input."""
import torch
import torch._inductor.config

# the settings MinifierTestBase.setUpClass patches for every test
torch._inductor.config.pattern_matcher = False
torch._inductor.config.compile_threads = 1
torch._inductor.config.cpp.vec_isa_ok = False

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "compile_error"


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(10, 16)
        self.relu = torch.nn.ReLU()
        self.sigmoid = torch.nn.Sigmoid()

    def forward(self, inp, *, k):
        x = inp["x"]
        y = inp["y"]
        x = self.fc1(x)
        y = self.fc1(y)
        k = self.fc1(k)
        x = self.relu(x)
        x = self.sigmoid(x)
        return x + y + k


with torch.no_grad():
    model = Model().to("cpu")
    val = torch.randn(8, 10).to("cpu")
    example_inputs = ({"x": val.clone(), "y": val.clone()},)
    kwargs = {"k": val.clone()}
    ep = torch.export.export(model, example_inputs, kwargs)
    torch._inductor.aoti_compile_and_package(ep)
