"""The precision settings an accuracy verdict runs under: PyTorch's accuracy harness's, or the model's own.

Imports only the standard library at import time (torch inside the functions that use it) and no
``__future__``: minify's repro.py embeds this file verbatim, so a repro judges under the settings its
queries were judged under, and minify's parent reads HARNESS without importing torch. So its one
private torch API (``torch._inductor.config.fallback_random``) stays here, not in :mod:`..shims.torchapi`: a
repro is torch-only by contract (as minify's harness.py).

Guarantees:

* :data:`HARNESS` is what ``benchmarks/dynamo/common.py`` sets under ``--accuracy``
  (``setup_determinism`` and ``inductor_config.fallback_random = True``): TF32 off for cuBLAS
  matmuls and cuDNN, deterministic cuDNN, no cuDNN benchmark, oneDNN deterministic, no
  reduced-precision reduction in the math SDPA kernel, ``CUBLAS_WORKSPACE_CONFIG=":4096:8"``,
  Inductor's ``fallback_random`` (random ops draw eager's numbers). Also float32 oneDNN matmuls in
  IEEE (what ``set_float32_matmul_precision("highest")`` gives on CPU). Not taken from the harness:
  ``torch.use_deterministic_algorithms(True)`` (it makes ops without a deterministic kernel raise and
  fills uninitialised memory with NaN, changing what an arbitrary model computes; the harness keeps
  a list of models it breaks) and its patched ``torch.manual_seed`` (every run here is seeded).
* :func:`precision_state` reads the effective settings under the same keys and never raises:
  torch's new ``fp32_precision`` API and the legacy ``allow_tf32`` flags are both read, the new
  one first (reading a legacy flag after the new API set it raises in torch >= 2.9).
* :func:`use_precision` applies such a dict (HARNESS, or a state read before); keys this torch
  lacks are skipped; ``inductor=False`` leaves Inductor's config alone (a user's ``--config`` wins).
  :func:`use_cpu_precision` applies the part a run on the CPU reads (a repro made on the CPU carries it alone).
  CUBLAS_WORKSPACE_CONFIG only takes effect in a process that has not used cuBLAS yet.
* :func:`reduced_modes` names the reduced-precision modes of a state ("TF32 matmul", "TF32 cuDNN",
  "bf16 CPU matmul"...), :func:`differences` every setting that is not the harness's.
"""

import contextlib
import importlib
import os

HARNESS = {
    "matmul": "ieee",  # cuBLAS float32 matmuls: ieee | tf32
    "cudnn": "ieee",  # cuDNN float32 convolutions and RNNs: ieee | tf32
    "cpu_matmul": "ieee",  # oneDNN float32 matmuls: ieee | tf32 | bf16
    "cudnn_benchmark": False,
    "cudnn_deterministic": True,
    "mkldnn_deterministic": True,
    "sdp_reduced_reduction": False,  # fp16/bf16 reduced-precision reduction in the math SDPA kernel
    "cublas_workspace": ":4096:8",  # CUBLAS_WORKSPACE_CONFIG
    "fallback_random": True,  # torch._inductor.config.fallback_random
}

_NAMES = {"matmul": "matmul", "cudnn": "cuDNN", "cpu_matmul": "CPU matmul"}
_ON = {"cuda": ("matmul", "cudnn"), "cpu": ("cpu_matmul",)}


def _fp32(path, legacy=None):
    """The effective float32 precision of one backend: its own new-API setting, else its parents',
    else the legacy flag ("tf32" when set); "ieee" where torch has neither."""
    import torch

    b = torch.backends
    nodes = [b]
    for part in path:
        nodes.append(getattr(nodes[-1], part, None))
    for node in reversed(nodes):
        value = getattr(node, "fp32_precision", None) if node is not None else None
        if isinstance(value, str) and value != "none":
            return value
    if legacy is not None:
        with contextlib.suppress(RuntimeError, AttributeError):
            return "tf32" if legacy() else "ieee"
    return "ieee"


def _get(fn, default=None):
    try:
        return fn()
    except (RuntimeError, AttributeError):
        return default


def precision_state():
    """The settings in force now, under :data:`HARNESS`'s keys."""
    import torch

    b = torch.backends
    sdp = getattr(b.cuda, "fp16_bf16_reduction_math_sdp_allowed", None)
    return {
        "matmul": _fp32(("cuda", "matmul"), lambda: b.cuda.matmul.allow_tf32),
        "cudnn": _fp32(("cudnn", "conv"), lambda: b.cudnn.allow_tf32),
        "cpu_matmul": _fp32(("mkldnn", "matmul")),
        "cudnn_benchmark": bool(b.cudnn.benchmark),
        "cudnn_deterministic": bool(b.cudnn.deterministic),
        "mkldnn_deterministic": bool(_get(lambda: b.mkldnn.deterministic, False)),
        "sdp_reduced_reduction": bool(_get(sdp, False)) if sdp is not None else False,
        "cublas_workspace": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "fallback_random": bool(_get(lambda: importlib.import_module("torch._inductor.config").fallback_random, False)),
    }


def _set_fp32(path, children, value, legacy=None):
    import torch

    if legacy is not None and value in ("ieee", "tf32"):
        with contextlib.suppress(RuntimeError, AttributeError):
            legacy(value == "tf32")  # first: it resets the new-API settings below it
    node = torch.backends
    for part in path:
        node = getattr(node, part, None)
    for n in [node, *(getattr(node, c, None) for c in children)] if node is not None else ():
        _put_fp32(n, value)


def _put_fp32(node, value):
    """``node.fp32_precision = value`` where ``node`` (a torch.backends one, or None) has that setting and
    holds another value; one this torch refuses is left as it is."""
    if node is not None and getattr(node, "fp32_precision", value) != value:
        with contextlib.suppress(RuntimeError, AttributeError, ValueError):
            node.fp32_precision = value


def use_precision(settings, inductor=True):
    """Apply ``settings`` (keys of :data:`HARNESS`; missing keys are left as they are): those any run reads
    (:func:`use_cpu_precision`), then CUDA's (cuBLAS, cuDNN, the math SDPA kernel, CUBLAS_WORKSPACE_CONFIG)."""
    import torch

    b = torch.backends
    use_cpu_precision(settings, inductor)

    def matmul_flag(on):
        b.cuda.matmul.allow_tf32 = on

    def cudnn_flag(on):
        b.cudnn.allow_tf32 = on

    if "matmul" in settings:
        _set_fp32(("cuda", "matmul"), (), settings["matmul"], matmul_flag)
    if "cudnn" in settings:
        _set_fp32(("cudnn",), ("conv", "rnn"), settings["cudnn"], cudnn_flag)
    if "cudnn_benchmark" in settings:
        b.cudnn.benchmark = bool(settings["cudnn_benchmark"])
    if "cudnn_deterministic" in settings:
        b.cudnn.deterministic = bool(settings["cudnn_deterministic"])
    if "sdp_reduced_reduction" in settings and hasattr(b.cuda, "allow_fp16_bf16_reduction_math_sdp"):
        b.cuda.allow_fp16_bf16_reduction_math_sdp(bool(settings["sdp_reduced_reduction"]))
    if settings.get("cublas_workspace"):
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = settings["cublas_workspace"]
    elif "cublas_workspace" in settings:  # a state precision_state() read where it was unset: unset again
        os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)


def use_cpu_precision(settings, inductor=True):
    """The part of :func:`use_precision` a run on the CPU reads: the float32 matmul level, oneDNN's matmul
    precision and determinism, Inductor's fallback_random (a repro made on the CPU applies this alone)."""
    import torch

    b = torch.backends
    if "matmul" in settings or "cudnn" in settings or "cpu_matmul" in settings:
        # a generic new-API setting (torch.backends.fp32_precision) would stand under the ones set below
        _put_fp32(b, "none")
    if "matmul" in settings:
        # the overall level first, as set_float32_matmul_precision's user set it; then each backend
        level = "medium" if settings.get("cpu_matmul") == "bf16" else \
            "high" if "tf32" in (settings["matmul"], settings.get("cpu_matmul")) else "highest"
        with contextlib.suppress(RuntimeError, AttributeError, ValueError):
            torch.set_float32_matmul_precision(level)
    if "cpu_matmul" in settings:
        _put_fp32(getattr(b.mkldnn, "matmul", None), settings["cpu_matmul"])
    if "mkldnn_deterministic" in settings and hasattr(b.mkldnn, "deterministic"):
        b.mkldnn.deterministic = bool(settings["mkldnn_deterministic"])
    if inductor and "fallback_random" in settings:
        importlib.import_module("torch._inductor.config").fallback_random = bool(settings["fallback_random"])


def reduced_modes(state, device="cuda"):
    """The reduced-precision modes in ``state`` that apply on ``device``, e.g. ["TF32 matmul", "TF32 cuDNN"];
    [] for IEEE float32."""
    keys = _ON.get(str(device).split(":")[0], ())
    return [f"{str(state[k]).upper()} {_NAMES[k]}" for k in keys if state.get(k) not in (None, "ieee", "none")]


def differences(state):
    """Every setting of ``state`` that is not the harness's, as "key=value" (precision modes first)."""
    return [f"{k}={state.get(k)}" for k in HARNESS if state.get(k) != HARNESS[k]]
