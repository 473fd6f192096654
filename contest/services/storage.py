"""Files in the database: compressed, hashed, never overwritten (DESIGN "Data at rest").

Uploads may arrive as a plain CSV, a ``.gz`` or a ``.zip`` holding one CSV.
The stored bytes are exactly what was uploaded (so a download returns the
very file the team sent); :func:`read_csv_bytes` gives the CSV text bytes
through ``scoring.io``'s decompressor, the only one in the project.
"""
from __future__ import annotations

import hashlib
import io
import tempfile
import zlib
from collections.abc import Iterator
from datetime import datetime
from typing import BinaryIO

from django.db import transaction
from django.utils import timezone

from contest.models import StoredChunk, StoredFile
from scoring.io import DEFAULT_MAX_BYTES, read_source_bytes

#: Bytes of compressed content per :class:`StoredChunk` (every chunk of a file but its last), and the
#: slice an upload is read in. A query writes or reads one chunk.
CHUNK = 1 << 20

#: zlib level of every stored file. Level 1, not 6: on the 2019-size files it compresses
#: 6-15 times faster (an 800k-row trace file of 9.9 MB 0.90 s -> 0.13 s, 2.9 -> 3.4 MB; an 11 MB
#: anotraces file 0.44 s -> 0.07 s), and every upload, generated file, pubtraces and judge attack
#: output is stored through it: tens of CPU-seconds per stage of a 2019-size round.
BLOB_LEVEL = 1

#: The magic bytes of gzip and zip: an upload that starts so is stored at zlib level 0 (stored blocks),
#: since compressed bytes do not compress again; deflating a 1.4 MB gzipped attack upload cost 28 ms of
#: the 66 ms of taking it (measured on a 2019-size round).
_COMPRESSED_MAGIC = (b"\x1f\x8b", b"PK\x03\x04")


def _level(head: bytes) -> int:
    """The zlib level for content that starts with ``head``."""
    return 0 if head.startswith(_COMPRESSED_MAGIC) else BLOB_LEVEL


def store_bytes(data: bytes, name: str, *, user=None, content_type: str = "text/csv",
                created_at: datetime | None = None) -> StoredFile:
    """Store ``data`` (exact bytes) compressed; returns the new row.

    ``created_at``: when the file was first stored (an imported contest keeps its files' times);
    default now.
    """
    blob = zlib.compress(data, _level(data[:4]))
    return _store(io.BytesIO(blob), len(blob), name=name, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                  content_type=content_type, user=user, created_at=created_at)


def store_upload(source, name: str, *, user=None, content_type: str = "text/csv") -> StoredFile:
    """Store an upload, ``bytes`` or a binary file object (a request's file spooled to disk), exactly.

    A file object is read in slices through a :class:`Packer`: whatever the upload's size, this
    process holds about two chunks of it (a web worker stays small for any upload the size cap admits).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return store_bytes(bytes(source), name, user=user, content_type=content_type)
    source.seek(0)
    with Packer() as packer:
        while block := source.read(CHUNK):
            packer.write(block)
        return packer.store(name, content_type=content_type, user=user)


class Packer:
    """A writable binary stream that becomes a stored file: what is written is hashed and compressed
    as it comes into a local temporary file, and :meth:`store` writes it to the database a chunk at a
    time in one short transaction.

    Whatever is written (an upload, a zip of 1.7 GB of CSV being built), the process holds about two
    chunks of it. The transaction is opened only at :meth:`store`, not while the content is made:
    on SQLite a write transaction locks every other writer out, and building a 2019-size attack
    material takes tens of seconds. The level of compression is chosen by the first bytes written
    (an archive is stored at level 0). Use it as a context manager, so the temporary file goes either way.
    """

    def __init__(self):
        self._packed = tempfile.TemporaryFile(prefix="tracecup-store-")
        self._sha = hashlib.sha256()
        self._packer = None
        self.size = 0  # bytes written so far (the original content)

    def write(self, block) -> int:
        """Hash and compress ``block`` (bytes-like; the first write should hold at least 4 bytes, which
        choose the level); returns its length, as a file's ``write`` does."""
        if self._packer is None:
            self._packer = zlib.compressobj(_level(bytes(block[:4])))
        self._sha.update(block)
        self.size += len(block)
        self._packed.write(self._packer.compress(block))
        return len(block)

    def flush(self) -> None:
        """Nothing to do: the content is stored by :meth:`store` (``zipfile`` flushes its stream)."""

    def store(self, name: str, *, content_type: str = "text/csv", user=None) -> StoredFile:
        """Store what was written as one file; returns its row. Call it once, after the last write."""
        self._packed.write((self._packer or zlib.compressobj(BLOB_LEVEL)).flush())
        compressed_size = self._packed.tell()
        self._packed.seek(0)
        return _store(self._packed, compressed_size, name=name, sha256=self._sha.hexdigest(), size=self.size,
                      content_type=content_type, user=user)

    def close(self) -> None:
        self._packed.close()

    def __enter__(self) -> Packer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _store(packed: BinaryIO, compressed_size: int, *, name: str, sha256: str, size: int, content_type: str,
           user=None, created_at: datetime | None = None) -> StoredFile:
    """The file's row and its chunks, in one transaction (no reader ever sees a file without all its
    content): ``packed`` yields the compressed bytes, ``compressed_size`` of them, read a chunk at a time."""
    with transaction.atomic():
        stored = StoredFile.objects.create(
            name=name[:255], sha256=sha256, size=size, compressed_size=compressed_size,
            content_type=content_type, uploaded_by=user, created_at=created_at or timezone.now())
        seq = 0
        while piece := packed.read(CHUNK):
            StoredChunk.objects.create(file=stored, seq=seq, data=piece)
            seq += 1
    return stored


def _chunks(stored: StoredFile) -> Iterator[bytes]:
    """The compressed content of ``stored``, a chunk (``CHUNK`` bytes) per query, in order."""
    pieces = StoredChunk.objects.filter(file_id=stored.pk)
    for seq in range(-(-stored.compressed_size // CHUNK)):
        yield bytes(pieces.filter(seq=seq).values_list("data", flat=True).get())


def read_bytes(stored: StoredFile) -> bytes:
    """The exact original bytes; verifies the SHA-256 so corruption cannot go unnoticed.

    The compressed pieces are joined and inflated at once: the content plus its compressed form in
    memory (inflating piece by piece and joining would hold the content twice)."""
    packed = b"".join(_chunks(stored))
    data = zlib.decompress(packed)
    del packed
    if hashlib.sha256(data).hexdigest() != stored.sha256:
        raise OSError(f"stored file {stored.pk} ({stored.name}) fails its SHA-256 check")
    return data


def iter_bytes(stored: StoredFile) -> Iterator[bytes]:
    """Stream the original bytes (for downloads): the content is read from the database a chunk per
    query and inflated as it comes, so neither the compressed nor the original content is ever whole
    in memory. The SHA-256 is checked at the end."""
    d = zlib.decompressobj()
    h = hashlib.sha256()
    for part in _chunks(stored):
        out = d.decompress(part)
        if out:
            h.update(out)
            yield out
    out = d.flush()
    if out:
        h.update(out)
        yield out
    if h.hexdigest() != stored.sha256 or not d.eof:
        raise OSError(f"stored file {stored.pk} ({stored.name}) fails its SHA-256 check")


def read_csv_bytes(stored: StoredFile, limit: int | None = None) -> bytes:
    """The CSV content of a stored file: its exact bytes through the project's one decompressor.

    ``scoring.io.read_source_bytes`` recognises gzip and zip by their magic
    bytes and stops past ``limit`` bytes (default: rules §5's 200 MB).

    Raises:
        scoring.errors.ValidationError: too large, a broken or nested archive.
    """
    return read_source_bytes(read_bytes(stored), max_bytes=limit or DEFAULT_MAX_BYTES)
