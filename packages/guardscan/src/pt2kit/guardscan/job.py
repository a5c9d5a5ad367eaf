"""guardscan's options, typed: the one Struct the flags build, the parent runs and the worker decodes."""

from __future__ import annotations

import msgspec

from pt2kit.runtime.common.backends import is_code
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.flags import check_range
from pt2kit.runtime.common.job import ModelJob

from .variants import parse_vary


class Job(ModelJob, frozen=True, kw_only=True):
    trace: str | None = None  # --trace DIR: read a TORCH_TRACE directory (or one log) in place of a model
    vary: list[str] = msgspec.field(default_factory=list)  # --vary specs, checked here, applied in the worker
    default_vary: bool = True  # dim 0 of every tensor input doubled, then halved
    dynamic: bool | None = None  # torch.compile(dynamic=...); None: automatic dynamic shapes
    recompile_limit: int | None = None  # None: torch's
    backend: str = "eager"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("--recompile-limit", self.recompile_limit, 1)
        for v in self.vary:
            parse_vary(v)  # a bad spec is exit 2 before anything loads
        if is_code(self.backend):  # torch.compile is handed a name: guards and breaks are Dynamo's, not the backend's
            raise UsageError(f"--backend {self.backend}: guardscan takes a name torch registers (eager, aot_eager, "
                             "inductor...); to test a backend of your own, use kdiff --backend FILE.py:NAME")
        if self.trace is not None and self.model is not None:
            raise UsageError("give a MODEL.py or --trace DIR, not both")
        if self.trace is not None:
            self.refuse_run_options("a trace directory's graphs were compiled by the script that wrote it")

    def run_options(self) -> list[str]:
        """The options given that change how guardscan compiles and calls a graph it runs itself."""
        given = {"--vary": bool(self.vary), "--no-default-vary": not self.default_vary,
                 "--dynamic/--no-dynamic": self.dynamic is not None, "--recompile-limit": self.recompile_limit is not None,
                 "--backend": self.backend != "eager", "--device": self.device is not None, "--config": bool(self.config)}
        return [name for name, on in given.items() if on]

    def refuse_run_options(self, why: str) -> None:
        """A trace is read, never run: an option that would change the run cannot be used, and is said, never
        dropped silently (exit 2)."""
        if given := self.run_options():
            raise UsageError(f"{', '.join(given)}: {why}, and guardscan reads its trace without running anything; "
                             "drop it, or run the model: guardscan MODEL.py")
