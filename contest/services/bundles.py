"""Bundles: many stored files in one zip, with what each is and its checksum.

Every download of several files goes through :func:`write_bundle`: a team's
attack material, the organizer's export of everything, and the contest
archive of ``contest.services.transfer``. A bundle holds the files (each
streamed out of storage, never whole in memory), ``MANIFEST.json`` (path,
size, SHA-256 and what each file is) and ``SHA256SUMS`` in ``sha256sum -c``
format, so whoever receives it can check what arrived.
"""
from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from tempfile import SpooledTemporaryFile

from contest.models import StoredFile
from contest.services import storage

#: Bundles up to this size stay in memory while they are built; larger ones spill to a temporary file.
SPOOL_IN_MEMORY = 64 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """One file of a bundle: the stored file, where it goes, and manifest columns saying what it is.

    Its path in the zip is ``folder/name``, ``name`` defaulting to the stored file's own name.
    """

    file_id: int
    folder: str = ""
    info: dict = field(default_factory=dict)
    name: str | None = None


def write_bundle(dest, entries: Iterable[Entry], *, manifest: dict | None = None,
                 extra: dict[str, str | bytes] | None = None) -> dict:
    """Write ``entries`` (each path once: the first entry wins), ``extra`` files, MANIFEST.json and SHA256SUMS.

    Args:
        dest: a path or a writable binary file object.
        manifest: fields of MANIFEST.json besides ``files`` (what the bundle is, when it was made).
        extra: further members written verbatim (e.g. ``results.json``), not listed in the checksums.
    Returns:
        The MANIFEST.json document; its ``files`` rows are ``{path, size, sha256, **info}``.
    """
    doc = dict(manifest or {})
    files = []
    seen: set[str] = set()
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for entry in entries:
            stored = StoredFile.objects.get(pk=entry.file_id)  # one at a time: a blob can be hundreds of MB
            path = "/".join(p for p in (entry.folder, entry.name or stored.name) if p)
            if path in seen:
                continue
            seen.add(path)
            with zf.open(path, "w", force_zip64=True) as out:
                for chunk in storage.iter_bytes(stored):
                    out.write(chunk)
            files.append({"path": path, "size": stored.size, "sha256": stored.sha256, **entry.info})
        for name, content in (extra or {}).items():
            zf.writestr(name, content)
        doc["files"] = files
        zf.writestr("MANIFEST.json", json.dumps(doc, indent=2, default=str))
        zf.writestr("SHA256SUMS", "".join(f"{f['sha256']}  {f['path']}\n" for f in files))
    return doc


def spooled_bundle(entries: Iterable[Entry], **kwargs) -> SpooledTemporaryFile:
    """:func:`write_bundle` into a spooled temporary file, rewound for streaming to a client."""
    spool = SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
    write_bundle(spool, entries, **kwargs)
    spool.seek(0)
    return spool
