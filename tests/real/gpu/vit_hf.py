"""The model of issue 30: a stock transformers ViTModel (32x32 images, patch 8, hidden 64, 2 layers,
random weights). Its patch embedding is a convolution, which cuDNN runs in TF32 unless told not to."""
import torch
from transformers import ViTConfig, ViTModel

torch.manual_seed(0)
config = ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=128)
model = ViTModel(config).eval()
example_inputs = (torch.randn(4, 3, 32, 32),)
