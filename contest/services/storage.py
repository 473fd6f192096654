"""Files in the database: compressed, hashed, never overwritten (DESIGN "Data at rest").

Uploads may arrive as a plain CSV, a ``.gz`` or a ``.zip`` holding one CSV.
The stored bytes are exactly what was uploaded (so a download returns the
very file the team sent); ``decompressed()`` gives the CSV text bytes that the
``scoring.io`` readers parse.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import zipfile
import zlib
from collections.abc import Iterator

from contest.models import StoredFile

CHUNK = 1 << 20


class UploadTooLarge(ValueError):
    """The (decompressed) upload exceeds the contest's size limit."""


class BadArchive(ValueError):
    """A .gz/.zip upload that cannot be opened or does not hold exactly one CSV."""


def store_bytes(data: bytes, name: str, *, user=None, content_type: str = "text/csv") -> StoredFile:
    """Store ``data`` (exact bytes) compressed; returns the new row."""
    blob = zlib.compress(data, 6)
    return StoredFile.objects.create(
        name=name[:255], blob=blob, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
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


def decompressed(data: bytes, name: str, limit: int | None = None) -> bytes:
    """The CSV bytes inside an upload: plain, gzip or a zip holding one file.

    Raises ``UploadTooLarge`` when the CSV exceeds ``limit`` bytes (checked while
    inflating, so a compression bomb is stopped early) and ``BadArchive`` for a
    broken archive.
    """
    lower = name.lower()
    if lower.endswith(".gz") or data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                out = f.read(limit + 1 if limit is not None else -1)
        except (OSError, EOFError, zlib.error) as exc:
            raise BadArchive(f"{name}: not a readable gzip file ({exc})") from None
    elif lower.endswith(".zip") or data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                names = [n for n in z.namelist() if not n.endswith("/")]
                if len(names) != 1:
                    raise BadArchive(f"{name}: a zip upload must hold exactly one CSV file, found {len(names)}")
                with z.open(names[0]) as f:
                    out = f.read(limit + 1 if limit is not None else -1)
        except zipfile.BadZipFile as exc:
            raise BadArchive(f"{name}: not a readable zip file ({exc})") from None
    else:
        out = data
    if limit is not None and len(out) > limit:
        raise UploadTooLarge(f"{name}: the CSV is larger than the contest's limit of {limit} bytes")
    return out


def read_csv_bytes(stored: StoredFile, limit: int | None = None) -> bytes:
    """The CSV content of a stored file (decompressing .gz/.zip uploads)."""
    return decompressed(read_bytes(stored), stored.name, limit)
