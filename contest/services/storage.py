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
from datetime import datetime

from django.db.models import BinaryField
from django.db.models.functions import Substr
from django.utils import timezone

from contest.models import StoredFile
from scoring.io import DEFAULT_MAX_BYTES, read_source_bytes

CHUNK = 1 << 20

#: zlib level of every stored blob. Level 1, not 6 (issue 23): on the 2019-size files it compresses
#: 6-15 times faster (an 800k-row trace file of 9.9 MB 0.90 s -> 0.13 s, 2.9 -> 3.4 MB; an 11 MB
#: anotraces file 0.44 s -> 0.07 s), and every upload, generated file, pubtraces and judge attack
#: output is stored through it: tens of CPU-seconds per stage of a 2019-size round.
BLOB_LEVEL = 1


def store_bytes(data: bytes, name: str, *, user=None, content_type: str = "text/csv",
                created_at: datetime | None = None) -> StoredFile:
    """Store ``data`` (exact bytes) compressed; returns the new row.

    ``created_at``: when the file was first stored (an imported contest keeps its files' times);
    default now.
    """
    blob = zlib.compress(data, BLOB_LEVEL)
    return StoredFile.objects.create(
        name=name[:255], blob=blob, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
        compressed_size=len(blob), content_type=content_type, uploaded_by=user,
        created_at=created_at or timezone.now())


def store_upload(source, name: str, *, user=None, content_type: str = "text/csv") -> StoredFile:
    """Store an upload, ``bytes`` or a binary file object (a request's file spooled to disk), exactly.

    A file object is read in slices, hashed and compressed as it streams, so
    only its compressed form is ever whole in memory.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return store_bytes(bytes(source), name, user=user, content_type=content_type)
    source.seek(0)
    sha, size, packer = hashlib.sha256(), 0, zlib.compressobj(BLOB_LEVEL)
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


def _blob_slices(stored: StoredFile, size: int) -> Iterator[bytes]:
    """The compressed blob of ``stored`` in slices of at most ``size`` bytes, one query each, so a
    download never holds the whole blob (hundreds of MB for a 2019-size data set) in memory."""
    rows = StoredFile.objects.filter(pk=stored.pk)
    for start in range(0, stored.compressed_size, size):
        part = Substr("blob", start + 1, size, output_field=BinaryField())  # SQL counts from 1
        yield bytes(rows.annotate(part=part).values_list("part", flat=True).get())


def iter_bytes(stored: StoredFile, chunk: int = CHUNK) -> Iterator[bytes]:
    """Stream the original bytes (for downloads): the blob is read from the database slice by slice
    (``chunk`` compressed bytes a query) and inflated as it comes, so neither the blob nor the
    content is ever whole in memory. The SHA-256 is checked at the end."""
    d = zlib.decompressobj()
    h = hashlib.sha256()
    for part in _blob_slices(stored, chunk):
        out = d.decompress(part)
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
