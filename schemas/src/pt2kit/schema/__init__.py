"""pt2kit-schema: the record stream every pt2kit tool reads and writes. Never imports torch."""

from .profile import Profile, ProfileError, profile_from_toml
from .records import (
    KINDS,
    RECORD_TYPES,
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
    num,
)
from .store import BlobError, Store, atomic_write, blob_path_problem, store_root, sweep_temp_files, temp_owner
from .stream import (
    Line,
    NewerSchemaError,
    RecordWriter,
    StreamError,
    decode,
    encode,
    new_run_id,
    read_stream,
)

__version__ = "1.9.0"

__all__ = [
    "KINDS", "RECORD_TYPES", "SCHEMA_MAJOR", "Accuracy", "Advice", "AnyRecord", "Bench", "BlobError", "BlobRef",
    "CompileTime", "Crash", "Diff", "Divergence", "Error", "Graph", "GraphBreak", "Guard", "Header", "Kernel",
    "KernelArg", "KernelTime", "Latency", "Memory", "Line", "Metrics", "Model", "NewerSchemaError", "Num", "Precision", "Record",
    "RecordWriter", "Recompile", "Report", "Repro", "Stats", "Store", "StreamError", "TensorMeta",
    "Tie", "Variant", "Violation", "Profile", "ProfileError", "profile_from_toml", "as_float", "atomic_write", "blob_path_problem", "decode", "encode", "new_run_id", "num",
    "read_stream", "store_root", "sweep_temp_files", "temp_owner",
]
