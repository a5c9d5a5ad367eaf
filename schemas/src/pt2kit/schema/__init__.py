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
    Autocast,
    Bench,
    Bisect,
    BisectRun,
    BlobRef,
    Captured,
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

__version__ = "1.43.1"

__all__ = [
    "__version__", "SCHEMA_MAJOR", "Accuracy", "Advice", "AnyRecord", "Autocast", "Bench", "Bisect", "BisectRun", "BlobError", "BlobRef",
    "Captured", "CompileTime", "Crash", "Diff", "Divergence", "Error", "Graph", "GraphBreak", "Guard", "Header", "Kernel",
    "KernelArg", "KernelTime", "Latency", "Memory", "Metrics", "Model", "Num", "Precision", "Profile", "Record",
    "Recompile", "Report", "Repro", "Stats", "Store", "StreamError", "TensorMeta", "Tie", "Variant", "Violation",
    "as_float", "decode", "encode", "read_stream",
]

# The plumbing that was importable from here up to 1.9.0: a DeprecationWarning, then the name from its
# module. Not in __all__: new code imports it from the module. No package of this tree imports it so any
# more, but pt2kit-runtime 1.x (sweep_temp_files, temp_owner, atomic_write, Line) and the tools released on
# it accept any schema <2, so an install of them meets this version through `pip install -U pt2kit-schema`:
# the README promises them these names through 1.x. It goes with schema 2.0, not before.
_MOVED = {"KINDS": "records", "RECORD_TYPES": "records", "num": "records", "atomic_write": "store",
          "blob_path_problem": "store", "store_root": "store", "sweep_temp_files": "store", "temp_owner": "store",
          "Line": "stream", "NewerSchemaError": "stream", "RecordWriter": "stream", "new_run_id": "stream",
          "ProfileError": "profile", "profile_from_toml": "profile"}


def __getattr__(name: str) -> object:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'pt2kit.schema' has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(f"pt2kit.schema.{name} is plumbing: import it from pt2kit.schema.{module}", DeprecationWarning,
                  stacklevel=2)
    return getattr(importlib.import_module(f".{module}", __name__), name)
