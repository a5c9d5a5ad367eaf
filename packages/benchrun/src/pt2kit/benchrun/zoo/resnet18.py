"""ResNet-18 (torchvision, else timm; random weights): batch 32, 3x224x224. Needs torchvision or timm."""

import torch

torch.manual_seed(0)
torch.set_float32_matmul_precision("high")  # TF32 matmuls on CUDA, as performance work runs them
try:
    from torchvision.models import resnet18

    model = resnet18(weights=None)
except Exception as e:  # torchvision missing, or a build that does not match this torch
    try:
        import timm
    except Exception:
        raise ImportError(f"zoo:resnet18 needs torchvision or timm (torchvision: {e})") from None
    model = timm.create_model("resnet18", pretrained=False)
model = model.eval()
example_inputs = (torch.randn(32, 3, 224, 224),)
