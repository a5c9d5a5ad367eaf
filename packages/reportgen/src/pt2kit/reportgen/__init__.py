"""reportgen: one self-contained page from any pt2kit records. Never imports torch.

Public (everything else is private):

* ``collect(lines)``: the lines of any streams (:func:`pt2kit.schema.read_stream`'s) into one
  ``Collection``: runs, records by kind, the counts a summary shows.
* ``render(collection, fmt, *, store=None, out_dir=None, title="pt2kit report")``: the report as
  ``fmt`` says (html, json, md, text), as a string.
* ``what_fails(collection, blob)``: (1.5) what fails, the rule the page leads with: one dict a failing
  model (``model``, ``what``, ``where``, ``code``, ``op``, ``stage``, ``repro``: ``{"r": the repro
  record, "file": blob(record, its path)}``; (1.7) ``mine``, the user's own line it points at, and
  ``mine_is_op``, whether that is the op's own line, not the call of the compiled code; (1.8) ``crashes``,
  the `crash` records it lists, a process's end that a graph's crash killed under that graph), in the
  order the stream first names each; a failure naming no graph is the row ``"(the process)"``; what
  ``pt2kit triage``'s bug-report.md is written from.
* ``md_text(x)``, ``md_code(x, table=False)``, ``md_block(s, lang="")``: (1.6.2) record text as Markdown
  text, an inline code span, a fenced block: the one escaping every pt2kit Markdown goes through, so a
  record can neither format, link, embed HTML nor close a span or fence early; a newline in a one-line
  field is shown as ``\\n``.

Library use::

    from pt2kit.schema import read_stream
    from pt2kit.reportgen import collect, render
    html = render(collect(read_stream(["run.ndjson"])), "html")

Importing this package imports neither; each name is imported when first used.
"""

from pt2kit.runtime.api import exports

__version__ = "1.8.3"

_PUBLIC = {"collect": ".collection", "render": ".formats", "what_fails": ".failures:failures",
           "md_text": ".markdown:text", "md_code": ".markdown:code", "md_block": ".markdown:block"}
__all__ = ["__version__", *_PUBLIC]
__getattr__, __dir__ = exports(__name__, _PUBLIC)
