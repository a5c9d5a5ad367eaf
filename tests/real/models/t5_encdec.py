"""T5 encoder-decoder (transformers, random weights): an EncoderDecoderCache among its outputs."""
import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
config = T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                  decoder_start_token_id=0)
model = T5ForConditionalGeneration(config).eval()
example_inputs = {"input_ids": torch.randint(0, 128, (2, 10)), "decoder_input_ids": torch.randint(0, 128, (2, 6)),
                  "attention_mask": torch.ones(2, 10, dtype=torch.long)}
