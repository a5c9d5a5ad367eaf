"""A one-layer BERT masked-LM (transformers, random weights) with a ReLU feed-forward, so its backward
graph holds aten.threshold_backward (ReLU's gradient) and native_layer_norm_backward. The LM head
matters: a loss of the mean of BertModel's own output (a fresh LayerNorm's, unit weight) has a zero
gradient upstream, which would make every gradient check vacuous."""
import torch
from transformers import BertConfig, BertForMaskedLM

torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=32, hidden_act="relu")
model = BertForMaskedLM(config).eval()  # --mode train turns dropout on
example_inputs = {"input_ids": torch.randint(0, 64, (2, 8))}
