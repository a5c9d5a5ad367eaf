"""pt2kit-capture: run the user's own command (``python train.py``, ``python -m pkg``, ``torchrun ...``)
unmodified, and write a `model` record for every graph torch.compile hands a backend in it; or capture a
block of code in this process (a notebook's cells).

Public (everything else is private):

* ``capture(**options)``: (0.18) ``with pt2kit.capture() as cap:`` (the module is callable: the same as
  ``pt2kit.capture.capture()``) records every graph torch.compile compiles inside the block, as ``pt2kit
  capture -- python s.py`` does, leaving the process as it was; ``cap.records``, ``cap.write(path)``,
  ``cap.kdiff(*args)``, ``cap.minify(*args)``, ``cap.guardscan(*args)`` (each tool run as the command line
  runs it, its records returned); (0.19) ``cap.triage(out=DIR)``: ``pt2kit triage --from`` on the block's
  records, a ``Triage`` (``folder``, ``exit_code``, ``bug_report``, ``repro``) shown as the bug report.
  Options: ``store``, ``graphs``, ``values``, ``max_value_bytes``, ``max_run_bytes``, ``check``, ``quiet``.
* ``recover(store=None)``: (0.20) the capture of the newest block whose process died in it (a notebook
  kernel killed by a segfault in compiled code), read from what the block left on disk after the restart:
  its `model` records and a `crash` naming the graph whose call was running, with the signal. A block
  says where it records when it starts. Records' labels name a notebook's cell: ``In[3]:5[0/0]``.
* ``Records``: (0.18) the records of a stream (a list of Structs), ``stream`` its bytes, ``exit_code``
  the tool's; ``write``, ``of(kind)``, ``repros`` and the next tool as a method; shown in Jupyter as
  reportgen's page.
* ``load_ipython_extension``: (0.18) ``%load_ext pt2kit.capture`` registers the ``%%pt2kit [TOOL [ARGS]]``
  cell magic (0.19: ``%%pt2kit triage [--out DIR]``): the cell run under ``capture()``, its records (or
  TOOL's on them) shown, the capture kept in the kernel as ``_pt2kit``.

Importing this package imports neither torch nor these names' modules; each is imported when first used.
"""

import sys
import types

from pt2kit.runtime.api import exports

__version__ = "0.20.11"

_PUBLIC = {"capture": ".inprocess", "recover": ".recovery", "Records": ".results", "load_ipython_extension": ".magic"}
__all__ = ["__version__", *_PUBLIC]
__getattr__, __dir__ = exports(__name__, _PUBLIC)


class _Callable(types.ModuleType):
    """This module, callable: ``import pt2kit.capture; with pt2kit.capture() as cap:``."""

    def __call__(self, **options: object) -> object:
        return self.capture(**options)


sys.modules[__name__].__class__ = _Callable
