"""The one decompressor: raw bytes of a path, bytes or file object; gzip and zip under a size limit.

Every upload, stored file and command-line input of the project goes through
:func:`read_source_bytes`; a contest archive of many files is read member by member
through :func:`zip_members`.
"""
from __future__ import annotations

import io
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ValidationError, show_value
from .formats import CHUNK, DEFAULT_MAX_BYTES


def _too_big(max_bytes: int) -> ValidationError:
    return ValidationError.of("file_too_large", limit=f"{max_bytes:,}")


def _read_limited(fileobj, max_bytes: int, keep: bool = True) -> bytes:
    """Read at most ``max_bytes`` from a binary stream, refusing anything longer.

    With ``keep`` False only the first bytes are kept (enough to recognise an archive).
    """
    parts, total = [], 0
    while True:
        chunk = fileobj.read(CHUNK)
        if not chunk:
            break
        if isinstance(chunk, str):
            raise TypeError("a file object source must be opened in binary mode")
        total += len(chunk)
        if total > max_bytes:
            raise _too_big(max_bytes)
        if keep or not parts:
            parts.append(chunk if keep else chunk[:_HEAD])
    return b"".join(parts)


#: Bytes kept of the content when only its size and kind are checked (:func:`check_source`).
_HEAD = 8


def _gunzip(f, max_bytes: int, keep: bool = True) -> bytes:
    """Decompress (possibly multi-member) gzip data read from the binary stream ``f``, stopping past ``max_bytes``.

    The input is read in slices of ``CHUNK`` bytes, so neither a long stream
    nor zero padding after the last member costs more than one pass over it
    and the compressed input is never held whole (the padding is counted, not
    decompressed). With ``keep`` False only the first bytes of the output are
    returned.
    """
    parts, total = [], 0
    pending = b""                      # input read past the end of the previous member
    try:
        while True:
            head = pending or f.read(CHUNK)
            if not head:
                break
            if head.count(0) == len(head) and _rest_is_zeros(f):
                break  # zero padding after the last member
            if len(head) < 2:
                head += f.read(CHUNK)
            if head[:2] != b"\x1f\x8b":
                raise ValidationError.of("gz_trailing")
            d = zlib.decompressobj(wbits=31)
            block = head
            while True:
                chunk = d.decompress(block, CHUNK)
                total += len(chunk)
                if total > max_bytes:
                    raise _too_big(max_bytes)
                if chunk and (keep or not parts):
                    parts.append(chunk if keep else chunk[:_HEAD])
                if d.eof:
                    pending = d.unused_data
                    break
                block = d.unconsumed_tail or f.read(CHUNK)
                if not block:
                    raise ValidationError.of("gz_truncated")
    except zlib.error as exc:
        raise ValidationError.of("gz_broken", detail=str(exc)) from None
    return b"".join(parts)


def _rest_is_zeros(f) -> bool:
    """Whether the rest of ``f`` holds only zero bytes (read in slices, nothing kept)."""
    while True:
        block = f.read(CHUNK)
        if not block:
            return True
        if block.count(0) != len(block):
            return False


def _unzip(f, max_bytes: int, keep: bool = True) -> bytes:
    """The single file of the zip archive in the seekable stream ``f``, streamed with the size limit
    (``keep``: as in :func:`_gunzip`)."""
    try:
        zf = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise ValidationError.of("zip_broken", detail=str(exc)) from None
    with zf:
        files = [i for i in zf.infolist()
                 if not i.is_dir() and not i.filename.startswith("__MACOSX/")]
        if len(files) != 1:
            names = ", ".join(show_value(i.filename) for i in files[:5]) + (", ..." if len(files) > 5 else "")
            if not files:
                raise ValidationError.of("zip_no_file")
            raise ValidationError.of("zip_members", count=len(files), names=names)
        return _read_member(zf, files[0], max_bytes, keep)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int, keep: bool = True) -> bytes:
    """One member of an open zip, streamed with the size limit (``keep``: as in :func:`_gunzip`)."""
    if info.file_size > max_bytes:
        raise _too_big(max_bytes)
    try:
        with zf.open(info) as f:
            return _read_limited(f, max_bytes, keep)
    except ValidationError:
        raise
    except RuntimeError as exc:  # encrypted member
        raise ValidationError.of("zip_unreadable", name=show_value(info.filename), detail=str(exc)) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, ValueError) as exc:
        raise ValidationError.of("zip_member_broken", name=show_value(info.filename), detail=str(exc)) from None


@contextmanager
def zip_members(source) -> Iterator[Callable[[str, int], bytes]]:
    """Read named members of a zip of many files (a contest archive this project exported).

    Uploads hold one CSV and go through :func:`read_source_bytes`; an archive of a whole contest
    holds many files, each read here by name under its own limit (the size its index declares),
    through the same bounded member reader. ``source``: a path or a seekable binary file.

    Yields ``read(name, max_bytes) -> bytes``; it raises :class:`ValidationError` for a member that
    is missing, larger than ``max_bytes`` or broken.
    """
    try:
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as exc:
        raise ValidationError.of("zip_broken", detail=str(exc)) from None

    def read(name: str, max_bytes: int) -> bytes:
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise ValidationError.of("zip_unreadable", name=show_value(name), detail="no such file") from None
        return _read_member(zf, info, max_bytes)

    with zf:
        yield read


def read_source_bytes(source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The uncompressed bytes of ``source`` (path, bytes or binary file object).

    gzip and zip content is recognised by its magic bytes (never by a file
    name) and decompressed with the ``max_bytes`` limit checked as the data
    streams out; zero padding after a gzip stream costs a scan, not a
    decompression. An archive inside the archive is refused (rules §5: one
    CSV per upload, compressed at most once).

    Raises:
        ValidationError: too large, corrupt archive, a zip not holding
            exactly one file, or an archive holding another archive.
        FileNotFoundError / OSError: a path that cannot be read.
    """
    with _stream(source, max_bytes) as f:
        return _content(f, max_bytes, keep=True)


def check_source(source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Raise what :func:`read_source_bytes` would raise for the archive itself, holding none of its content.

    For a web request that must refuse an oversized or broken upload at once
    without keeping its (up to ``max_bytes``) content in memory: a file object
    (an upload spooled to disk) is read in slices.
    """
    with _stream(source, max_bytes) as f:
        _content(f, max_bytes, keep=False)


class _Borrowed:
    """A caller's file object, rewound to where it was when we are done with it (not closed)."""

    def __init__(self, f):
        self.f, self.start = f, f.tell()

    def __enter__(self):
        return self.f

    def __exit__(self, *exc):
        self.f.seek(self.start)
        return False


def _stream(source, max_bytes: int):
    """A seekable binary stream of ``source``'s raw bytes (a context manager), its size checked."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        if len(source) > max_bytes:
            raise _too_big(max_bytes)
        return io.BytesIO(source)
    if hasattr(source, "read"):
        if not (getattr(source, "seekable", lambda: False)()):
            return io.BytesIO(_read_limited(source, max_bytes))
        start = source.tell()
        size = source.seek(0, os.SEEK_END) - start
        source.seek(start)
        if size > max_bytes:
            raise _too_big(max_bytes)
        return _Borrowed(source)
    path = Path(os.fspath(source))
    if path.stat().st_size > max_bytes:
        raise _too_big(max_bytes)
    return open(path, "rb")


def _content(f, max_bytes: int, *, keep: bool) -> bytes:
    start = f.tell()
    kind = archive_kind(f.read(4))
    f.seek(start)
    if kind is None:
        if not keep:
            return f.read(_HEAD)
        data = f.read(max_bytes + 1)
        if isinstance(data, str):
            raise TypeError("a file object source must be opened in binary mode")
        if len(data) > max_bytes:
            raise _too_big(max_bytes)
        return data
    inner = _gunzip(f, max_bytes, keep) if kind == "gzip" else _unzip(f, max_bytes, keep)
    nested = archive_kind(inner)
    if nested is not None:
        raise ValidationError.of("nested_archive", outer=kind, inner=nested)
    return inner


def archive_kind(raw: bytes) -> str | None:
    """``"gzip"`` or ``"zip"`` when ``raw`` starts with that format's magic bytes, else None."""
    if raw[:2] == b"\x1f\x8b":
        return "gzip"
    if raw[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    return None


def source_name(source) -> str | None:
    if isinstance(source, (str, os.PathLike)):
        return Path(os.fspath(source)).name
    return getattr(source, "name", None) if hasattr(source, "read") and isinstance(
        getattr(source, "name", None), str) else None
