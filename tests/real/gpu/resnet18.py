"""torchvision ResNet-18 with random weights (GPU machine: torchvision imports there)."""
import torch
import torchvision

torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
example_inputs = (torch.randn(8, 3, 224, 224),)
