"""reportgen: one self-contained page from any pt2kit records. Never imports torch.

Library use::

    from pt2kit.schema import read_stream
    from pt2kit.reportgen import collect, render
    html = render(collect(read_stream(["run.ndjson"])), "html")
"""

__version__ = "1.2.0"

from .collect import collect
from .render import render

__all__ = ["__version__", "collect", "render"]
