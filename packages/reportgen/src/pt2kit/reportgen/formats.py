"""One entry point for every format, for the CLI and for library use."""

from __future__ import annotations

import os
from pathlib import Path

from .collection import Collection


def render(c: Collection, fmt: str, *, store: str | os.PathLike[str] | None = None, out_dir: Path | None = None,
           title: str = "pt2kit report") -> str:
    if fmt == "html":
        from .blobs import Blobs
        from .html import render_html

        return render_html(c, Blobs(store, out_dir), title)
    from . import summary

    return {"json": summary.to_json, "md": summary.to_markdown, "text": summary.to_text}[fmt](c)
