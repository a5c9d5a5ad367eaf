"""SwitchTransformers encoder-decoder (transformers, random weights): top-1 expert routing with library graph breaks.
One sparse layer each side: 18 graphs, 343 nodes (2 layers each: 20 graphs, 475 nodes; the same breaks, each
expert's nonzero() in the router)."""
import torch
from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

torch.manual_seed(0)
config = SwitchTransformersConfig(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1,
                                  num_heads=4, num_experts=4, expert_capacity=8, decoder_start_token_id=0,
                                  encoder_sparse_step=1, decoder_sparse_step=1)
model = SwitchTransformersForConditionalGeneration(config).eval()
example_inputs = {"input_ids": torch.randint(0, 128, (2, 8)), "decoder_input_ids": torch.randint(0, 128, (2, 4))}
