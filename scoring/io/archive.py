"""The one decompressor: raw bytes of a path, bytes or file object; gzip and zip under a size limit.

Every upload, stored file and command-line input of the project goes through
:func:`read_source_bytes`.
"""
from __future__ import annotations

import io
import os
import zipfile
import zlib
from pathlib import Path

from ..errors import ValidationError, show_value
from .formats import CHUNK, DEFAULT_MAX_BYTES


def _too_big(max_bytes: int) -> ValidationError:
    return ValidationError.of("file_too_large", limit=f"{max_bytes:,}")


def _read_limited(fileobj, max_bytes: int) -> bytes:
    """Read at most ``max_bytes`` from a binary stream, refusing anything longer."""
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
        parts.append(chunk)
    return b"".join(parts)


def _gunzip(raw: bytes, max_bytes: int) -> bytes:
    """Decompress (possibly multi-member) gzip data, stopping past ``max_bytes``."""
    parts, total = [], 0
    data = raw
    try:
        while data:
            d = zlib.decompressobj(wbits=31)
            while True:
                chunk = d.decompress(data, CHUNK)
                data = d.unconsumed_tail
                total += len(chunk)
                if total > max_bytes:
                    raise _too_big(max_bytes)
                parts.append(chunk)
                if d.eof:
                    data = d.unused_data
                    break
                if not data and not chunk:
                    raise ValidationError.of("gz_truncated")
            if data and not data.strip(b"\x00"):
                break  # zero padding after the last member
            if data and data[:2] != b"\x1f\x8b":
                raise ValidationError.of("gz_trailing")
    except zlib.error as exc:
        raise ValidationError.of("gz_broken", detail=str(exc)) from None
    return b"".join(parts)


def _unzip(raw: bytes, max_bytes: int) -> bytes:
    """The single file of a zip archive, streamed with the size limit."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
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
        info = files[0]
        if info.file_size > max_bytes:
            raise _too_big(max_bytes)
        try:
            with zf.open(info) as f:
                return _read_limited(f, max_bytes)
        except ValidationError:
            raise
        except RuntimeError as exc:  # encrypted member
            raise ValidationError.of("zip_unreadable", name=show_value(info.filename), detail=str(exc)) from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, ValueError) as exc:
            raise ValidationError.of("zip_member_broken", name=show_value(info.filename), detail=str(exc)) from None


def read_source_bytes(source, *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The uncompressed bytes of ``source`` (path, bytes or binary file object).

    gzip and zip content is recognised by its magic bytes and decompressed
    with the ``max_bytes`` limit checked as the data streams out.

    Raises:
        ValidationError: too large, corrupt archive, or a zip not holding
            exactly one file.
        FileNotFoundError / OSError: a path that cannot be read.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw = bytes(source)
        if len(raw) > max_bytes:
            raise _too_big(max_bytes)
    elif hasattr(source, "read"):
        raw = _read_limited(source, max_bytes)
    else:
        path = Path(os.fspath(source))
        if path.stat().st_size > max_bytes:
            raise _too_big(max_bytes)
        with open(path, "rb") as f:
            raw = _read_limited(f, max_bytes)
    if raw[:2] == b"\x1f\x8b":
        return _gunzip(raw, max_bytes)
    if raw[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return _unzip(raw, max_bytes)
    return raw


def source_name(source) -> str | None:
    if isinstance(source, (str, os.PathLike)):
        return Path(os.fspath(source)).name
    return getattr(source, "name", None) if hasattr(source, "read") and isinstance(
        getattr(source, "name", None), str) else None
