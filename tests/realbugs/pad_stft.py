"""F.pad followed by stft: Inductor's _fft_r2c fallback asserts on the output strides

issue: https://github.com/pytorch/pytorch/issues/179807
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: crash,lowering
issue57: -
stage: inductor
op: aten._fft_r2c
file: torch/_meta_registrations.py
changed: _fft_r2c's meta strides match the eager kernel's output, so the fallback's assert_size_stride holds
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self._window = torch.hann_window(320)

    def forward(self, x):
        x = F.pad(x, (0, 318))
        return x.stft(n_fft=512, hop_length=160, win_length=320,
                      return_complex=True, window=self._window, pad_mode="constant")


model = Model()
x = torch.randn(2, 2)

ret_eager = model(x.clone())
print(f"Eager OK: {ret_eager.shape}")

compiled = torch.compile(model)
ret_compiled = compiled(x.clone())
print(f"Compile OK: {ret_compiled.shape}")
torch.testing.assert_close(ret_compiled, ret_eager)
