"""test/inductor/test_minifier.py (a version holding _test_aoti)::test_aoti_cpu_accuracy_error (cpu)."""
import torch
import torch._inductor.config

# the settings MinifierTestBase.setUpClass patches for every test
torch._inductor.config.pattern_matcher = False
torch._inductor.config.compile_threads = 1
torch._inductor.config.cpp.vec_isa_ok = False

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(10, 16)
        self.relu = torch.nn.ReLU()
        self.sigmoid = torch.nn.Sigmoid()

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu(x)
        x = self.sigmoid(x)
        return x


with torch.no_grad():
    model = Model().to("cpu")
    example_inputs = (torch.randn(8, 10).to("cpu"),)
    ep = torch.export.export(model, example_inputs)
    torch._inductor.aoti_compile_and_package(ep)
