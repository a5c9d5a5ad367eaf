"""pt2kit-schema: the record stream every pt2kit tool reads and writes. Never imports torch.

What a user reading or writing streams calls (``__all__`` is the truth):

* the record Structs (``Header``, ``Model``, ``Violation``, ``Diff``, ``Divergence``, ``Kernel``,
  ``Bench``, ``Repro`` ... and the Structs they hold), their base ``Record``, the union ``AnyRecord``
  and ``SCHEMA_MAJOR`` (every record's ``v``); ``Num`` and ``as_float`` for the numbers that may be
  ``"nan"``/``"inf"`` in JSON;
* ``read_stream(sources)`` (lines of files, directories of streams or stdin, each decoded), ``decode``
  and ``encode`` (one line); ``StreamError`` for a line that is not a record;
* ``Store`` (the content-addressed blob store a record's ``BlobRef`` points into), ``BlobError``;
* ``Profile``, the capability profile fxcheck checks graphs against.

Everything else (the writer, temporary-file handling, migrations, ``num``, ``KINDS``...) is pt2kit's own
plumbing, imported from its module (``pt2kit.schema.stream``, ``.store``, ``.records``, ``.profile``)
and free to change in any release.
"""

from .profile import Profile
from .records import (
    SCHEMA_MAJOR,
    Accuracy,
    Advice,
    AnyRecord,
    Bench,
    BlobRef,
    CompileTime,
    Crash,
    Diff,
    Divergence,
    Error,
    Graph,
    GraphBreak,
    Guard,
    Header,
    Kernel,
    KernelArg,
    KernelTime,
    Latency,
    Memory,
    Metrics,
    Model,
    Num,
    Precision,
    Recompile,
    Record,
    Report,
    Repro,
    Stats,
    TensorMeta,
    Tie,
    Variant,
    Violation,
    as_float,
)
from .store import BlobError, Store
from .stream import StreamError, decode, encode, read_stream

__version__ = "1.9.0"

__all__ = [
    "__version__", "SCHEMA_MAJOR", "Accuracy", "Advice", "AnyRecord", "Bench", "BlobError", "BlobRef",
    "CompileTime", "Crash", "Diff", "Divergence", "Error", "Graph", "GraphBreak", "Guard", "Header", "Kernel",
    "KernelArg", "KernelTime", "Latency", "Memory", "Metrics", "Model", "Num", "Precision", "Profile", "Record",
    "Recompile", "Report", "Repro", "Stats", "Store", "StreamError", "TensorMeta", "Tie", "Variant", "Violation",
    "as_float", "decode", "encode", "read_stream",
]
