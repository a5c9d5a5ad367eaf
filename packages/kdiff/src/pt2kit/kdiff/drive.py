"""kdiff's parent side: the model given, or each piped `model` record, with ``--mode`` left unsaid taken
from the record's ``train`` (a model a tool upstream ran as a training step is diffed as one) and
``--backend`` left unsaid from the backend its script compiled with (:mod:`pt2kit.runtime.common.backends`:
a registered name or aoti travels; a backend that is code is exit 2 with the ``--backend`` to give).

Guarantees: with MODEL, exactly ``Session.each_model``; a piped record is checked, forwarded, said on
stderr and labelled as each_model does (:func:`pt2kit.runtime.parent.piped.read_piped`).
"""

from __future__ import annotations

from typing import Any

from .job import Job
from .narrate import Narrator

TARGET = "pt2kit.kdiff.work:run"
HINT = "give a MODEL.py, or pipe records: `fxcheck m.py | kdiff`"


def run(s: Any, job: Job) -> int:
    from msgspec.structs import replace

    from pt2kit.runtime.common.backends import INDUCTOR, piped_backend
    from pt2kit.runtime.common.outcome import CannotJudge, unrunnable
    from pt2kit.runtime.parent.child import COMPILER
    from pt2kit.runtime.parent.piped import read_piped
    from pt2kit.runtime.parent.preflight import preflight

    if job.model is not None:
        return s.each_model(replace(job, test=job.test or INDUCTOR), target=TARGET, narrator=Narrator, hint=HINT)
    code = 0
    s.warm((*COMPILER, TARGET.partition(":")[0]))
    preflight(s, backend=job.test, device=job.device, config=job.config)  # before the stream is read or said
    for _, m in read_piped(s, device=job.device, hint=HINT, config=job.config, stream_config=job.stream_config):
        if m is None:
            continue
        # capture found its model file does not run here: judged only for eager raising where compiled returns
        cannot = unrunnable(m.label, m.record)
        test = piped_backend(job.test, m.record.captured, f"{m.where}: {m.label}", "kdiff", s.warn,
                             config=job.config)
        s.say(f"{m.where}: running model file {m.spec} named by the stream" + ("" if job.test else f" (backend {test})"))
        one = job.for_piped(m, mode=job.mode or ("train" if m.train else "infer"), test=test,
                            unrunnable=None if cannot is None else str(cannot))
        try:
            code = max(code, s.run_model(TARGET, one, Narrator(s.say, m.label, one, _called(m))))
        except CannotJudge as e:  # this graph cannot be judged (nothing to compare): the stream's next one can
            code = max(code, s.refuse(e, m.label))
    return code


def _called(m: Any) -> tuple[str, str] | None:
    """(the model file, the user's line that called its compiled code) of a graph ``pt2kit capture`` kept."""
    from pt2kit.runtime.common.pyfile import parse_spec

    cap = m.record.captured
    line = (cap.called_from or cap.source) if cap is not None else None
    return (str(parse_spec(m.spec)[0]), line) if line else None
