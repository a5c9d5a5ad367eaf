"""An accelerator's capabilities, as fxcheck checks graphs against them; loaded from TOML.

    name = "npu-v1"
    description = "fp32/bf16 only, 16-element alignment, no convolutions"
    dtypes = ["float32", "bfloat16"]   # allowed; integer/bool tensors are checked only if one is listed
    align = 16                         # every dimension of size >= align_min_size is a multiple of this
    align_min_size = 2                 # default 2: dimensions of size 1 are exempt
    align_scope = "tiled"              # tiled: activations (GEMM M/N/K, conv channels); all: every tensor
    max_tensor_bytes = 67108864        # per materialised tensor (views do not count)
    contiguous = true                  # compute ops must receive contiguous tensors
    deny = ["aten.convolution", "aten.relu_.default"]  # an overload or a whole op packet
    backward = true                    # also capture and check the backward graphs
    strict = false                     # fxcheck exits 1 on findings (the library backend raises)

Unlike records, a profile forbids unknown keys: a typo in a capability must not pass silently.
"""

from __future__ import annotations

import msgspec


class Profile(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    name: str = "custom"
    description: str = ""
    dtypes: list[str] | None = None
    align: int | None = None
    align_min_size: int = 2
    align_scope: str = "tiled"  # (1.3) tiled | all
    max_tensor_bytes: int | None = None
    contiguous: bool = False
    deny: list[str] = []
    backward: bool = False
    strict: bool = False


class ProfileError(ValueError):
    """A profile file that cannot be read or does not fit the Struct (one line)."""


def profile_from_toml(text: str, where: str = "<profile>") -> Profile:
    import tomllib  # lazy: only profile files need it

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{where}: not TOML: {e}") from None
    try:
        return msgspec.convert(data, Profile)
    except msgspec.ValidationError as e:
        raise ProfileError(f"{where}: {e}") from None
