"""torchvision Faster R-CNN (MobileNetV3 backbone) with random weights: top-k and NMS over random scores."""
import torch
import torchvision

torch.manual_seed(0)
model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
    weights=None, weights_backbone=None, num_classes=5).eval()
example_inputs = ([torch.rand(3, 320, 320), torch.rand(3, 320, 320)],)
