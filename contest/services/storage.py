"""Files in the database: compressed, hashed, never overwritten (DESIGN "Data at rest").

Uploads may arrive as a plain CSV, a ``.gz`` or a ``.zip`` holding one CSV.
The stored bytes are exactly what was uploaded (so a download returns the
very file the team sent); :func:`read_csv_bytes` gives the CSV text bytes
through ``scoring.io``'s decompressor, the only one in the project.
"""
from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterator

from contest.models import StoredFile
from scoring.io import DEFAULT_MAX_BYTES, read_source_bytes

CHUNK = 1 << 20


def store_bytes(data: bytes, name: str, *, user=None, content_type: str = "text/csv") -> StoredFile:
    """Store ``data`` (exact bytes) compressed; returns the new row."""
    blob = zlib.compress(data, 6)
    return StoredFile.objects.create(
        name=name[:255], blob=blob, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
        compressed_size=len(blob), content_type=content_type, uploaded_by=user)


def store_upload(source, name: str, *, user=None, content_type: str = "text/csv") -> StoredFile:
    """Store an upload, ``bytes`` or a binary file object (a request's file spooled to disk), exactly.

    A file object is read in slices, hashed and compressed as it streams, so
    only its compressed form is ever whole in memory.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return store_bytes(bytes(source), name, user=user, content_type=content_type)
    source.seek(0)
    sha, size, packer = hashlib.sha256(), 0, zlib.compressobj(6)
    blob = bytearray()  # grown in place: the compressed file is whole in memory once, not as parts and a join
    while block := source.read(CHUNK):
        sha.update(block)
        size += len(block)
        blob += packer.compress(block)
    blob += packer.flush()
    return StoredFile.objects.create(
        name=name[:255], blob=memoryview(blob), sha256=sha.hexdigest(), size=size,
        compressed_size=len(blob), content_type=content_type, uploaded_by=user)


def read_bytes(stored: StoredFile) -> bytes:
    """The exact original bytes; verifies the SHA-256 so corruption cannot go unnoticed."""
    data = zlib.decompress(bytes(stored.blob))
    if hashlib.sha256(data).hexdigest() != stored.sha256:
        raise OSError(f"stored file {stored.pk} ({stored.name}) fails its SHA-256 check")
    return data


def iter_bytes(stored: StoredFile, chunk: int = CHUNK) -> Iterator[bytes]:
    """Stream the original bytes chunk by chunk (for downloads), without holding them all."""
    d = zlib.decompressobj()
    blob = memoryview(bytes(stored.blob))
    h = hashlib.sha256()
    for i in range(0, len(blob), chunk):
        out = d.decompress(blob[i:i + chunk])
        if out:
            h.update(out)
            yield out
    out = d.flush()
    if out:
        h.update(out)
        yield out
    if h.hexdigest() != stored.sha256:  # pragma: no cover - only on database corruption
        raise OSError(f"stored file {stored.pk} fails its SHA-256 check")


def read_csv_bytes(stored: StoredFile, limit: int | None = None) -> bytes:
    """The CSV content of a stored file: its exact bytes through the project's one decompressor.

    ``scoring.io.read_source_bytes`` recognises gzip and zip by their magic
    bytes and stops past ``limit`` bytes (default: SPEC 5's 200 MB).

    Raises:
        scoring.errors.ValidationError: too large, a broken or nested archive.
    """
    return read_source_bytes(read_bytes(stored), max_bytes=limit or DEFAULT_MAX_BYTES)
