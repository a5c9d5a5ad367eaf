"""Reading what AOT Inductor's intermediate value printer wrote to the C stdout (torch-free).

The printer (``aot_inductor.debug_intermediate_value_printer``) has three outputs, all parsed here:

* mode 2 (print): per tensor argument a block ``[  after_launch - KERNEL - buf2  ]:``, the tensor's
  values, ``[ CPUFloatType{4,8} ]``, then ``Number of elements: 32``, ``Dtype: float32``,
  ``Mean value: ...``, ``Min value``, ``Max value``, ``Device``, ``Size``, ``Stride`` and more;
  a scalar argument is one line ``[  before_launch - KERNEL - s0: 8  ]``; the model's inputs come
  first as ``[  aoti_model_inputs - arg2_1  ]:``.
* mode 3 (names): ``[ before_launch: KERNEL ]`` and ``[ after_launch: KERNEL ]``.
* mode 1 (save): ``aoti_torch_save_tensor_handle: Saved tensor to PATH``.

The stock printer counts no NaN or Inf. It prints every value, so the counts are taken from the
value lines; when those are cut short the counts come from min/max (a NaN makes both NaN, an Inf
makes one of them infinite), and the argument says so.

Lines a model prints itself are ignored; a half-written block (the process died inside it) keeps
what it had.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

INPUTS = "aoti_model_inputs"

_BLOCK = re.compile(r"^\[\s+(before_launch|after_launch) - (.+?) - ([^\s:]+)\s+\]:\s*$")
_INPUT = re.compile(r"^\[\s+aoti_model_inputs - ([^\s:]+)\s+\]:\s*$")
_SCALAR = re.compile(r"^\[\s+(before_launch|after_launch) - (.+?) - ([^\s:]+): (\S+)\s+\]\s*$")
_NAME = re.compile(r"^\[ (before_launch|after_launch): (\S+) \]\s*$")
_SAVED = re.compile(r"aoti_torch_save_tensor_handle: Saved tensor to (.+?)\s*$")
_TYPE = re.compile(r"^\[ ([A-Za-z]+?)(Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool|ComplexFloat|"
                   r"ComplexDouble|ComplexHalf|Float8_e4m3fn|Float8_e5m2|Float8_e4m3fnuz|Float8_e5m2fnuz|"
                   r"UInt16|UInt32|UInt64)Type\{([\d,]*)\} \]\s*$")
_FIELD = re.compile(r"^([A-Z][A-Za-z ]+): (.*)$")

# c10 scalar type names in "[ CPUFloatType{4,8} ]" -> torch dtype names
_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16", "Long": "int64",
    "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool",
    "ComplexFloat": "complex64", "ComplexDouble": "complex128", "ComplexHalf": "complex32",
    "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2": "float8_e5m2", "Float8_e4m3fnuz": "float8_e4m3fnuz",
    "Float8_e5m2fnuz": "float8_e5m2fnuz", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
}
# the "Dtype:" line (a C++ type name on some versions) when the bracket line is missing
_DTYPE_WORDS = {"long int": "int64", "long": "int64", "int": "int32", "float": "float32", "double": "float64",
                "c10::Half": "float16", "c10::BFloat16": "bfloat16", "bool": "bool", "unsigned char": "uint8",
                "signed char": "int8", "short": "int16", "short int": "int16"}


@dataclass
class Arg:
    """One argument as the printer showed it."""

    name: str
    numel: int | None = None
    dtype: str | None = None
    shape: list[int] | None = None
    stride: list[int] | None = None
    device: str | None = None
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    nan: int | None = None
    inf: int | None = None
    counts_exact: bool = False
    value: float | None = None  # a scalar argument
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class Launch:
    """One kernel launch: its order, name, and the arguments printed before and after it."""

    launch: int
    kernel: str
    before: list[Arg] = field(default_factory=list)
    after: list[Arg] = field(default_factory=list)
    started: bool = False  # its before_launch line was seen
    finished: bool = False  # its after_launch line was seen


@dataclass
class PrinterLog:
    inputs: list[Arg] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)  # mode 1: the files written, in order
    other: int = 0  # lines that were none of the printer's

    @property
    def last_started(self) -> Launch | None:
        """The launch that was running when the output stops: started and not finished."""
        for la in reversed(self.launches):
            if la.started and not la.finished:
                return la
        return None


def _num(text: str) -> float | None:
    t = text.strip().lower().lstrip("+")
    try:
        return float(t)  # handles nan, -nan, inf, -inf
    except ValueError:
        return None


def _ints(text: str) -> list[int] | None:
    t = text.strip().strip("[]()")
    if not t:
        return []
    try:
        return [int(p) for p in t.split(",") if p.strip()]
    except ValueError:
        return None


class _Values:
    """Counts of values, NaN and Inf in a block's printed values."""

    def __init__(self) -> None:
        self.n = self.nan = self.inf = 0

    def add(self, line: str) -> None:
        s = line.strip()
        if s.startswith("Columns ") and " to " in s:
            parts = s.split()[4:]  # "Columns 1 to 6 v1 v2 ..."
        elif s.endswith(" *") or s.endswith("=") or s.startswith("("):
            return  # a scale factor "1e-22 *" or a slice header "(1,.,.) ="
        else:
            parts = s.split()
        for p in parts:
            v = _num(p)
            if v is None:
                continue
            self.n += 1
            if math.isnan(v):
                self.nan += 1
            elif math.isinf(v):
                self.inf += 1


class _Parser:
    def __init__(self) -> None:
        self.log = PrinterLog()
        self.cur: Arg | None = None
        self.values: _Values | None = None

    def _launch_for(self, when: str, kernel: str) -> Launch:
        la = self.log.launches[-1] if self.log.launches else None
        # a new launch starts at a before line once the last one has an after line, or at a new name
        if la is None or la.kernel != kernel or (when == "before_launch" and la.finished):
            la = Launch(len(self.log.launches), kernel)
            self.log.launches.append(la)
        if when == "before_launch":
            la.started = True
        else:
            la.finished = True
            la.started = True
        return la

    def _close(self) -> None:
        a, vals = self.cur, self.values
        if a is not None and vals is not None:
            if a.numel is not None and vals.n == a.numel:
                a.nan, a.inf, a.counts_exact = vals.nan, vals.inf, True
            else:  # values cut short: what min/max/mean can tell
                vals_nan = any(x is not None and math.isnan(x) for x in (a.min, a.max, a.mean))
                vals_inf = any(x is not None and math.isinf(x) for x in (a.min, a.max))
                a.nan, a.inf = int(vals_nan), int(vals_inf)
        self.cur = self.values = None

    def feed(self, line: str) -> None:
        line = line.rstrip("\r\n")
        m = _BLOCK.match(line)
        if m:
            self._close()
            la = self._launch_for(m.group(1), m.group(2))
            self.cur = Arg(m.group(3))
            self.values = _Values()
            (la.before if m.group(1) == "before_launch" else la.after).append(self.cur)
            return
        m = _INPUT.match(line)
        if m:
            self._close()
            self.cur = Arg(m.group(1))
            self.values = _Values()
            self.log.inputs.append(self.cur)
            return
        m = _SCALAR.match(line)
        if m:
            self._close()
            la = self._launch_for(m.group(1), m.group(2))
            v = _num(m.group(4))
            arg = Arg(m.group(3), numel=1, value=v, nan=int(v is not None and math.isnan(v)),
                      inf=int(v is not None and math.isinf(v)), counts_exact=True)
            (la.before if m.group(1) == "before_launch" else la.after).append(arg)
            return
        m = _NAME.match(line)
        if m:
            self._close()
            self._launch_for(m.group(1), m.group(2))
            return
        m = _SAVED.search(line)
        if m:
            self._close()
            self.log.saved.append(m.group(1))
            return
        if self.cur is None:
            self.log.other += 1
            return
        self._block_line(line)

    def _block_line(self, line: str) -> None:
        a = self.cur
        assert a is not None and self.values is not None
        m = _TYPE.match(line)
        if m:
            a.dtype = _DTYPES.get(m.group(2), a.dtype)
            dev = m.group(1).lower()
            a.device = a.device or ("cpu" if dev == "cpu" else dev or None)
            dims = _ints(m.group(3))
            if a.shape is None and dims is not None:
                a.shape = dims
            return
        m = _FIELD.match(line)
        if not m:
            if a.numel is None:  # values come before the fields
                self.values.add(line)
            return
        key, val = m.group(1).strip(), m.group(2).strip()
        if key == "Number of elements":
            a.numel = int(val) if val.isdigit() else None
        elif key == "Dtype":
            a.dtype = a.dtype or _DTYPE_WORDS.get(val, val)
        elif key in ("Mean value", "Mean"):
            a.mean = _num(val)
        elif key in ("Min value", "Min"):
            a.min = _num(val)
        elif key in ("Max value", "Max"):
            a.max = _num(val)
        elif key == "Device":
            a.device = val
        elif key == "Size":
            a.shape = _ints(val)
        elif key == "Stride":
            a.stride = _ints(val)
        elif key in ("Requires grad",):
            a.extra[key] = val
            self._close()  # the last line of a block
        else:
            a.extra[key] = val


def parse(lines: Iterable[str]) -> PrinterLog:
    """The printer's launches (and, for mode 1, the files it saved), in order."""
    p = _Parser()
    for line in lines:
        p.feed(line)
    p._close()
    return p.log


def parse_file(path: str) -> PrinterLog:
    """:func:`parse` of a file; a file that was never written is an empty log."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse(f)
    except FileNotFoundError:
        return PrinterLog()

