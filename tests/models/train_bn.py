"""A training script as a user writes it: torch's own modules in an nn.Sequential with BatchNorm, AdamW,
two steps (what `pt2kit capture -- python train_bn.py | kdiff --mode train` takes). The eager backend
keeps it cheap: Dynamo hands every backend the same graph, and that graph is what capture keeps."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
step = torch.compile(model, backend="eager")
for _ in range(2):
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 4, (4,))
    loss = torch.nn.functional.cross_entropy(step(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", round(loss.item(), 4))
