"""Capability profiles: shipped TOML files, user files, environment variables and flags.

Precedence, lowest first: the profile (``--profile``, else ``$PT2KIT_PROFILE``), the peer's
``MOCK_ALIGNMENT`` / ``MOCK_MAX_MEMORY`` / ``MOCK_STRICT``, ``PT2KIT_*`` variables, then flags.
Needs no torch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from pt2kit.runtime.common.errors import UsageError
from pt2kit.schema import Profile
from pt2kit.schema.profile import ProfileError, profile_from_toml

if TYPE_CHECKING:
    from .job import ProfileFlags

SHIPPED = Path(__file__).parent / "profiles"

DTYPES = {
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex128", "complex64", "complex32",
    "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool",
}
ALIASES = {"fp64": "float64", "double": "float64", "fp32": "float32", "float": "float32", "fp16": "float16",
           "half": "float16", "bf16": "bfloat16", "long": "int64", "int": "int32", "cfloat": "complex64",
           "cdouble": "complex128"}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.I)


def shipped_profiles() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.toml"))


def load_profile(name_or_path: str) -> Profile:
    path = Path(name_or_path)
    if not path.suffix and not path.exists():
        path = SHIPPED / f"{name_or_path}.toml"
        if not path.exists():
            raise UsageError(f"--profile {name_or_path}: no such file or shipped profile "
                             f"(shipped: {', '.join(shipped_profiles())})")
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"--profile {name_or_path}: cannot read: {e.strerror}") from None
    try:
        return _validated(profile_from_toml(text, str(path)), str(path))
    except ProfileError as e:
        raise UsageError(str(e)) from None


def parse_dtypes(value: str | list[str], where: str) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    out = []
    for item in items:
        d = item.strip().removeprefix("torch.").lower()
        if not d:
            continue
        d = ALIASES.get(d, d)
        if d not in DTYPES:
            raise UsageError(f"{where}: unknown dtype {item.strip()!r} (e.g. float32, bfloat16, int64)")
        out.append(d)
    return out


def parse_bytes(value: str | int, where: str) -> int:
    if isinstance(value, int):
        return value
    m = _SIZE.match(value)
    if not m:
        raise UsageError(f"{where}: expected a size in bytes such as 67108864 or 64MiB, got {value!r}")
    unit = (m.group(2) or "B").upper().rstrip("B").rstrip("I")
    power = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}[unit]
    return int(float(m.group(1)) * 1024**power)


def _bool(value: str, where: str) -> bool:
    low = value.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise UsageError(f"{where}: expected 1/0 or true/false, got {value!r}")


def _int(value: str, where: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"{where}: expected an integer, got {value!r}") from None


def _validated(p: Profile, where: str) -> Profile:
    if p.dtypes is not None:
        p.dtypes = parse_dtypes(p.dtypes, where)
    if p.align is not None and p.align < 1:
        raise UsageError(f"{where}: align must be at least 1")
    if p.align_scope not in ("tiled", "all"):
        raise UsageError(f"{where}: align_scope must be tiled or all, not {p.align_scope!r}")
    return p


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "MOCK_ALIGNMENT" in environ:
        out["align"] = _int(environ["MOCK_ALIGNMENT"], "MOCK_ALIGNMENT")
    if "MOCK_MAX_MEMORY" in environ:
        out["max_tensor_bytes"] = parse_bytes(environ["MOCK_MAX_MEMORY"], "MOCK_MAX_MEMORY")
    if "MOCK_STRICT" in environ:
        out["strict"] = _bool(environ["MOCK_STRICT"], "MOCK_STRICT")
    readers = {
        "PT2KIT_DTYPES": ("dtypes", parse_dtypes),
        "PT2KIT_ALIGN": ("align", _int),
        "PT2KIT_MAX_TENSOR_BYTES": ("max_tensor_bytes", parse_bytes),
        "PT2KIT_CONTIGUOUS": ("contiguous", _bool),
        "PT2KIT_STRICT": ("strict", _bool),
        "PT2KIT_BACKWARD": ("backward", _bool),
        "PT2KIT_DENY": ("deny", lambda v, w: [d.strip() for d in v.split(",") if d.strip()]),
    }
    for var, (field, read) in readers.items():
        if var in environ:
            out[field] = read(environ[var], var)
    return out


def merge(base: Profile, overrides: Mapping[str, Any] | msgspec.Struct) -> Profile:
    """``base`` with every override that is not None (a mapping, or fxcheck's ProfileFlags) over it."""
    if isinstance(overrides, msgspec.Struct):
        overrides = msgspec.structs.asdict(overrides)
    data = msgspec.to_builtins(base)
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return _validated(msgspec.convert(data, Profile), "profile")
    except msgspec.ValidationError as e:
        raise UsageError(f"profile: {e}") from None


def resolve(profile_arg: str | None, flags: ProfileFlags,
            environ: Mapping[str, str] | None = None) -> Profile:
    environ = os.environ if environ is None else environ
    name = profile_arg or environ.get("PT2KIT_PROFILE")
    base = load_profile(name) if name else Profile()
    return merge(merge(base, env_overrides(environ)), flags)
