"""What a stream asks minify to minify: each model's first failure of each kind (a failing `diff`, a
`crash`, a `violation`, a `kernel` with a NaN/Inf finding), as one typed :class:`Target` each; and a
`model` record whose ``captured.check`` says ``pt2kit capture --check`` failed that call, where no `diff`
of it came (kdiff, when it ran on it, judged it: its verdict stands).

Guarantees: every line is forwarded as it is read (by the Session); a model file is run only once its
`model` record passed the stream trust rules (pt2kit.runtime.parent.trust); the config a target runs under is
its model record's, then the `--config` of the header of the run that wrote the failing record, then
this command line's. Not guaranteed: that a failure whose model record never came is minified (it is
skipped with a warning), nor that a second failure of the same kind of the same model is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pt2kit.runtime.common.text import summary_line
from pt2kit.runtime.parent.piped import PipedModel, read_piped
from pt2kit.runtime.parent.session import Session
from pt2kit.schema import Crash, Diff, Error, Header, Kernel, Model, Violation

from ..job import Job
from ..records import Want, checked, unkept, wanted

HINT = "give a MODEL.py, or pipe records: `kdiff m.py | minify`"
Failing = Diff | Crash | Violation | Kernel


@dataclass(frozen=True)
class Target:
    label: str  # the model, as the failing record names it
    record: Failing | Model  # the failing record it came with (a model record: its failed --check)
    where: str  # source:line of that record
    want: Want  # the failure minify keeps of it (:func:`.records.wanted`)
    seen: dict[str, str]  # the config the run that wrote it had (its header's, over this command line's)
    model: PipedModel | None = None  # None: the stream had no model record for it

    @property
    def config(self) -> dict[str, str]:
        """The model record's config, with the run that found the failure's own over it."""
        return {**(self.model.config if self.model else {}), **self.seen}


@dataclass
class Piped:
    targets: list[Target] = field(default_factory=list)
    models: dict[str, PipedModel] = field(default_factory=dict)  # by label: every model record the stream had
    # why a failure the stream names has no graph to cut (a torch.export.export that raised: capture's crash
    # record of stage "export"), "SOURCE:LINE: why" each
    graphless: list[str] = field(default_factory=list)
    # what a tool before minify stopped on (("SOURCE:LINE", message) each): its error record says that it
    # judged nothing (or not everything), so an empty stream of failures is no all-clear
    refused: list[tuple[str, str]] = field(default_factory=list)
    # a crash naming no graph (the command's own end, "SOURCE:LINE: Exception: message" each): with no model
    # record beside it, the command failed before any graph was kept
    unnamed: list[str] = field(default_factory=list)
    # the argv of the capture run each such crash came from (its header's), in the same order: the script it
    # ran is what minify reduces at the source level (:mod:`.script`)
    commands: list[list[str]] = field(default_factory=list)


def read(s: Session, job: Job, on_model: Callable[[PipedModel], None] = lambda m: None) -> Piped:
    """Read stdin to its end (each line forwarded), and what it asks minify to do; ``on_model`` hears of
    each model record as it comes (its trust checks passed)."""
    from pt2kit.runtime.parent.trust import stream_config_for

    out = Piped()
    found: list[Target] = []
    told: set[str] = set()
    checks: list[tuple[PipedModel, str, Want]] = []  # model records holding a call --check failed: where, what
    judged: set[str] = set()  # the models a diff judged
    runs: dict[str, tuple[dict[str, str], str]] = {}  # each upstream run's --config: its findings were seen so
    argvs: dict[str, list[str]] = {}  # each capture run's argv (its header's): the command it ran
    for line, model in read_piped(s, device=job.device, hint=HINT, config=job.config, stream_config=job.stream_config,
                                  also=[Header, Diff, Crash, Violation, Kernel, Error]):
        rec = line.record
        where = f"{line.source}:{line.lineno}"
        if model is not None:
            out.models[model.label] = model
            on_model(model)
            check = checked(model.record.captured)
            if check is not None:
                checks.append((model, where, check))
        elif isinstance(rec, Header):
            runs[rec.run] = (dict(rec.config), where)
            if rec.tool == "capture":
                argvs[rec.run] = list(rec.argv)
        elif isinstance(rec, Error):
            out.refused.append((where, rec.message))
        elif isinstance(rec, Failing):
            if isinstance(rec, Diff):
                judged.add(rec.model)
            why = unkept(rec)
            if why and why not in told:
                told.add(why)
                s.say(f"{where}: {why}")
            w = wanted(rec)
            label = getattr(rec, "model", None)
            if isinstance(rec, Crash) and rec.stage == "export" and label is None:
                out.graphless.append(f"{where}: {rec.exception}: {rec.message}")
            elif isinstance(rec, Crash) and label is None:  # the command's own end: no graph named
                out.unnamed.append(f"{where}: " + ": ".join(x for x in (rec.exception, summary_line(rec.message or "")) if x))
                out.commands.append(argvs.get(rec.run, []))
            if w and label and not any(t.label == label and t.want.kind == w.kind for t in found):
                run_cfg, run_where = runs.get(rec.run, ({}, ""))
                found.append(Target(label, rec, where, w, stream_config_for(
                    run_cfg, job.config, run_where, use=job.stream_config,
                    what=f"the header of the run that wrote this {line.kind}")))
    for model, where, check in checks:  # `capture --check nan | minify`: the check's failure, unless kdiff judged it
        if model.label not in judged and not any(t.label == model.label for t in found):
            run_cfg, run_where = runs.get(model.record.run, ({}, ""))
            found.append(Target(model.label, model.record, where, check, stream_config_for(
                run_cfg, job.config, run_where, use=job.stream_config, what="the header of the run that wrote this model")))
    out.targets = [replace(t, model=out.models.get(t.label)) for t in found]
    return out
