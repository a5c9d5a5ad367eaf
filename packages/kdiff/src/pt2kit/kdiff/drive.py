"""kdiff's parent side: :meth:`Session.each_model`, with ``--mode`` left unsaid taken from each piped
`model` record's ``train`` (a model a tool upstream ran as a training step is diffed as one).

Guarantees: with MODEL, or with ``--mode`` given, exactly ``Session.each_model``; a piped record is
checked, forwarded, said on stderr and labelled as each_model does (:meth:`Session.piped`).
"""

from __future__ import annotations

from typing import Any

from .job import Job
from .narrate import Narrator

TARGET = "pt2kit.kdiff.work:run"
HINT = "give a MODEL.py, or pipe records: `fxcheck m.py | kdiff`"


def run(s: Any, job: Job) -> int:
    from msgspec.structs import replace

    if job.model is not None or job.mode is not None:
        return s.each_model(job, target=TARGET, narrator=Narrator, hint=HINT)
    code = 0
    for line, model in s.piped(device=job.device, hint=HINT, config=job.config, stream_config=job.stream_config):
        if model is None:
            continue
        spec, device, config, where = model
        s.say(f"{where}: running model file {spec} named by the stream")
        record = line.record  # its label is what the worker's records name (pt2kit capture's train.py[0/1])
        one = replace(job, model=spec, device=device, config=config, emit_model=False, from_stream=True,
                      label=record.model, mode="train" if record.train else "infer")
        code = max(code, s.run_model(TARGET, one, Narrator(s.say, record.model, one)))
    return code
