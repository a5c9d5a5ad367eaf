"""BERT-base (transformers, 110M parameters, random weights): batch 8, sequence 128, with an attention mask. Needs transformers."""

import torch
from transformers import BertConfig, BertModel

torch.manual_seed(0)
torch.set_float32_matmul_precision("high")  # TF32 matmuls on CUDA, as performance work runs them
model = BertModel(BertConfig()).eval()
example_inputs = {
    "input_ids": torch.randint(0, 30522, (8, 128)),
    "attention_mask": torch.ones(8, 128, dtype=torch.long),
}
