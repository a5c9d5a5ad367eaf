"""Blobs a page shows: small text and images embedded, large ones linked by relative path.

A blob is looked for in ``--store`` first, then in the store its run's header names, then in
``./pt2kit-out``; its sha256 is checked before anything of it is shown. The stream is data: a ref
whose path is not a store blob path, or that leads out of the store, to a FIFO or a device, is
refused with a note and never read, linked or looked up (:meth:`pt2kit.schema.Store.locate`).
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path

from pt2kit.schema import BlobError, BlobRef, Store
from pt2kit.schema.store import blob_path_problem, store_root

TEXT_LIMIT = 64 * 1024
IMAGE_LIMIT = 2 * 1024 * 1024
# Embedded as data: URIs; an SVG could carry script, so it is linked, never embedded.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass
class BlobView:
    ref: BlobRef
    state: str  # text | image | link | missing | corrupt | refused
    text: str | None = None
    data_uri: str | None = None
    href: str | None = None
    note: str | None = None


class Blobs:
    def __init__(self, store: str | os.PathLike[str] | None, out_dir: Path | None) -> None:
        self.override = Path(store) if store else None
        self.out_dir = out_dir

    def _stores(self, header_store: str | None) -> list[Store]:
        roots = [self.override, Path(header_store) if header_store else None, store_root()]
        seen, out = set(), []
        for r in roots:
            if r is not None and str(r) not in seen:
                seen.add(str(r))
                out.append(Store(r))
        return out

    def view(self, ref: BlobRef, header_store: str | None) -> BlobView:
        problem = blob_path_problem(ref)
        if problem:
            return BlobView(ref, "refused", note=f"blob reference refused: {problem}")
        for store in self._stores(header_store):
            try:
                path = store.locate(ref)
            except BlobError as e:
                return BlobView(ref, "refused", note=str(e))
            if path is None:
                continue
            href = self._href(store.root / ref.path)
            is_text = ref.media_type.startswith("text/") or ref.media_type in ("application/json",)
            is_image = ref.media_type in IMAGE_TYPES
            if (is_text and ref.size > TEXT_LIMIT) or (is_image and ref.size > IMAGE_LIMIT) or not (is_text or is_image):
                return BlobView(ref, "link", href=href)
            try:
                data = store.read(ref, limit=max(TEXT_LIMIT, IMAGE_LIMIT))
            except BlobError as e:
                return BlobView(ref, "corrupt", note=str(e))
            if is_image:
                uri = f"data:{ref.media_type};base64,{base64.b64encode(data).decode()}"
                return BlobView(ref, "image", data_uri=uri, href=href)
            return BlobView(ref, "text", text=data.decode("utf-8", "replace"), href=href)
        return BlobView(ref, "missing", note=f"{ref.path} is not in the store (pass --store DIR)")

    def _href(self, path: Path) -> str:
        if self.out_dir is None:
            return path.absolute().as_uri()
        try:
            return Path(os.path.relpath(path.absolute(), self.out_dir.absolute())).as_posix()
        except ValueError:
            return path.absolute().as_uri()
