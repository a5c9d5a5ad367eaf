"""timm ViT-Tiny with random weights (GPU machine: timm imports torchvision)."""
import timm
import torch

torch.manual_seed(0)
model = timm.create_model("vit_tiny_patch16_224", pretrained=False).eval()
example_inputs = (torch.randn(4, 3, 224, 224),)
