"""Progress on stderr while a worker runs: which stage, for how long.

Guarantees:

* When stderr is a terminal: one live rich line per model (spinner, ``tool: model: stage``, elapsed
  time) that lines printed meanwhile scroll above and that vanishes when the model is done.
* When stderr is not a terminal (a pipe, a log file, CI): one plain line per stage,
  ``tool: model: [12.3s] stage``, so a log shows where the time went. The first stage (loading the
  model) is said once a second one begins, so a model file that is bad input ends in its one error
  line and nothing else.
* Either way a last line ``tool: model: done in 12.3s`` (or ``stopped after``; nothing after a
  usage error), and nothing at all with ``--quiet``.
* A stage that runs past ``HEARTBEAT`` seconds (30) says so in a plain line, and again every 30 s:
  ``tool: model: [95.2s] still compile and run test (inductor), 62s so far`` (one heartbeat thread
  per model; a terminal's live line shows the time itself).
* rich is imported only when a terminal will show it; the stage names are the child's own
  (``chan.stage(...)``), which also name the stage of a crash.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..common.errors import UsageError


def _printable(text: str) -> str:
    from ..common.text import printable

    return printable(text)


HEARTBEAT = 30.0


class Task:
    def __init__(self, tool: str, label: str, live: Any = None, task_id: Any = None, plain: bool = True,
                 stream: Any = None) -> None:
        self.tool, self.label, self.stream = tool, label, stream
        self.start = self._said = time.monotonic()
        self._live, self._id, self._plain = live, task_id, plain
        self._name: str | None = None
        self._since = self.start
        self._lock = threading.Lock()
        self._stop = threading.Event()

    _every: float | None = None

    def beat(self, every: float) -> None:
        """Say every ``every`` seconds of silence that the current stage is still running (a daemon
        thread from the first stage on, stopped by :meth:`end`)."""
        self._every = every

    def _start_beating(self) -> None:
        every, self._every = self._every, None
        if every is None:
            return

        def loop() -> None:
            while not self._stop.wait(every):
                with self._lock:
                    if not self._stop.is_set() and self._name is not None and time.monotonic() - self._said >= every:
                        self._flush()
                        now = time.monotonic()
                        self._print(f"[{now - self.start:.1f}s] still {self._name}, {now - self._since:.0f}s so far")

        threading.Thread(target=loop, daemon=True).start()

    def end(self) -> None:
        self._stop.set()
        with self._lock:  # a heartbeat being printed now ends before the last line
            pass

    def _print(self, text: str) -> None:
        print(_printable(f"{self.tool}: {self.label}: {text}"), file=self.stream or sys.stderr, flush=True)
        self._said = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    pending: str | None = None
    stages = 0

    def stage(self, name: str) -> None:
        text = _printable(f"{self.tool}: {self.label}: {name}")
        with self._lock:
            self.stages += 1
            self._name, self._since = name, time.monotonic()
            if self._live is not None:
                self._live.update(self._id, description=text)
            elif self._plain:
                line = _printable(f"{self.tool}: {self.label}: [{self.elapsed():.1f}s] {name}")
                if self.stages == 1:
                    self.pending, self._said = line, time.monotonic()
                else:
                    self._flush()
                    print(line, file=self.stream or sys.stderr, flush=True)
                    self._said = time.monotonic()
        self._start_beating()

    def flush(self) -> None:
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        if self.pending is not None:
            print(self.pending, file=self.stream or sys.stderr, flush=True)
            self.pending = None


class Progress:
    def __init__(self, tool: str, *, quiet: bool, stream: Any = None, heartbeat: float = HEARTBEAT) -> None:
        self.tool = tool
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.heartbeat = heartbeat

    def _terminal(self) -> bool:
        try:
            return self.stream.isatty() and os.environ.get("TERM") != "dumb"
        except (AttributeError, ValueError):
            return False

    @contextmanager
    def task(self, label: str) -> Iterator[Task]:
        if self.quiet:
            yield Task(self.tool, label, plain=False)
            return
        if not self._terminal():
            task = Task(self.tool, label, stream=self.stream)
            task.beat(self.heartbeat)
            try:
                yield task
            except UsageError:
                raise
            except BaseException:
                task.end()
                task.flush()
                print(_printable(f"{self.tool}: {label}: stopped after {task.elapsed():.1f}s"), file=self.stream,
                      flush=True)
                raise
            finally:
                task.end()
            task.flush()
            print(_printable(f"{self.tool}: {label}: done in {task.elapsed():.1f}s"), file=self.stream, flush=True)
            return
        from rich.console import Console
        from rich.progress import Progress as RichProgress
        from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(file=self.stream, highlight=False, markup=False)
        bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(),
                           console=console, transient=True, redirect_stderr=True, redirect_stdout=False)
        with bar:
            task_id = bar.add_task(_printable(f"{self.tool}: {label}: start"), total=None)
            task = Task(self.tool, label, live=bar, task_id=task_id)
            word: str | None = "done in"
            try:
                yield task
            except UsageError:
                word = None
                raise
            except BaseException:
                word = "stopped after"
                raise
            finally:
                elapsed = task.elapsed()
                if word is not None:
                    bar.stop()
                    print(_printable(f"{self.tool}: {label}: {word} {elapsed:.1f}s"), file=self.stream, flush=True)
