"""BERT encoder (transformers, random weights) called with keyword arguments and a padding mask.
One layer: a second runs the same module code again (the same ops, mask, cache entry kind), doubling
every tool's trace and compile and showing nothing more."""
import torch
from transformers import BertConfig, BertModel

torch.manual_seed(0)
config = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=64)
model = BertModel(config).eval()
input_ids = torch.randint(0, 128, (2, 16))
attention_mask = torch.ones(2, 16, dtype=torch.long)
attention_mask[1, 10:] = 0  # the second sequence is padded
example_inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
