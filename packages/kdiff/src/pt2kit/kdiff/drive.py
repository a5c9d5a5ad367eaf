"""kdiff's parent side: the model given, or each piped `model` record, with ``--mode`` left unsaid taken
from the record's ``train`` (a model a tool upstream ran as a training step is diffed as one) and
``--backend`` left unsaid from the backend its script compiled with (:mod:`pt2kit.runtime.backends`:
a registered name or aoti travels; a backend that is code is exit 2 with the ``--backend`` to give).

Guarantees: with MODEL, exactly ``Session.each_model``; a piped record is checked, forwarded, said on
stderr and labelled as each_model does (:meth:`Session.piped`).
"""

from __future__ import annotations

from typing import Any

from .job import Job
from .narrate import Narrator

TARGET = "pt2kit.kdiff.work:run"
HINT = "give a MODEL.py, or pipe records: `fxcheck m.py | kdiff`"


def run(s: Any, job: Job) -> int:
    from msgspec.structs import replace

    from pt2kit.runtime.backends import INDUCTOR, piped_backend

    if job.model is not None:
        return s.each_model(replace(job, test=job.test or INDUCTOR), target=TARGET, narrator=Narrator, hint=HINT)
    code = 0
    for line, model in s.piped(device=job.device, hint=HINT, config=job.config, stream_config=job.stream_config):
        if model is None:
            continue
        spec, device, config, where = model
        record = line.record  # its label is what the worker's records name (pt2kit capture's train.py[0/1])
        test = piped_backend(job.test, record.captured, f"{where}: {record.model}", "kdiff", s.warn)
        s.say(f"{where}: running model file {spec} named by the stream" + ("" if job.test else f" (backend {test})"))
        one = replace(job, model=spec, device=device, config=config, emit_model=False, from_stream=True,
                      label=record.model, mode=job.mode or ("train" if record.train else "infer"), test=test)
        code = max(code, s.run_model(TARGET, one, Narrator(s.say, record.model, one)))
    return code
