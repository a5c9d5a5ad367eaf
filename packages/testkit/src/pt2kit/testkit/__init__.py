"""pt2kit-testkit: what pt2kit's own tests use to run a tool and read what it wrote. Not for users.

* ``run(argv, ...)`` runs a command (a console script, ``python -m pt2kit.X`` through :func:`module`)
  to its end and returns a :class:`Result`: exit code, stdout bytes, stderr text, and stdout's records
  as dicts (``records``, ``kind``) or as the schema's Structs (``structs``, ``of``).
* ``popen(argv, ...)`` starts one for a test that signals or kills it.
* Both start the command as a user's shell starts a foreground job, whatever started the test run:
  SIGINT and SIGQUIT at their defaults (see :mod:`.process`).
* ``run_alone(repro)`` runs a repro.py with pt2kit not importable (forked from the run's fork server where
  there is one: :mod:`.alone`).
* ``start_env(**extra)``: the environment the test run started with, for a tool a test starts after
  compiling in its own process (:mod:`.env`).
* A command that outlives its timeout fails the test with :class:`ToolTimeout`, naming the command
  and showing what it wrote to stderr.
"""

from .alone import run_alone
from .env import start_env
from .process import SHELL_RESTORES, ToolTimeout, module, popen, run
from .result import Result

__version__ = "1.2.3"

__all__ = ["__version__", "SHELL_RESTORES", "Result", "ToolTimeout", "module", "popen", "run", "run_alone", "start_env"]
