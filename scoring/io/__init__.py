"""Reading, validating and writing every contest file of rules §5.

| reader | file | header |
|---|---|---|
| :func:`read_traces` | reftraces / orgtraces / traintraces | ``user_id,time_id,reg_id`` |
| :func:`read_anotraces` | anotraces (team -> judge) | ``reg_id`` |
| :func:`read_pubtraces` | pubtraces (judge -> all) | ``pse_id,time_id,reg_id`` |
| :func:`read_ptable` | ptable (secret ID table) | ``pse_id,user_id`` |
| :func:`read_etable` | etable (attacker -> judge) | ``user_id`` |
| :func:`read_etraces` | etraces (attacker -> judge) | ``reg_id`` |

A ``source`` is a path (``str`` or ``os.PathLike``), ``bytes``, or a binary
file object. Its content may be plain CSV, gzip (``.gz``) or a zip archive
holding exactly one file; the format is recognised by its magic bytes, not by
its name. CRLF line ends and a UTF-8 byte-order mark are accepted. The
uncompressed size is limited (``max_bytes``, default 200 MB, rules §5) and the
limit is enforced while decompressing, so a zip or gzip bomb is refused
after at most ``max_bytes`` bytes of work.

Every reader either returns the parsed arrays or raises
:class:`~scoring.errors.ValidationError` listing the problems (line numbers
as in the file, header = line 1). Never another exception type for bad
content.

Speed: each reader first tries a vectorised fast path (numpy over the raw
bytes for numeric files; for files of region cells, interning of the
distinct line texts, each parsed once). Only when the fast path meets
something it does not accept does a slower line-by-line pass run, which
either finds the precise problems or parses what the fast path refused.

Decisions where rules §5 is silent:
- exactly one line terminator may end the file; a further empty line is an
  empty row (an empty cell for anotraces/etraces);
- no spaces are allowed around numbers or commas, leading zeros are accepted
  (``007`` is 7), numbers have at most 9 digits;
- a generalized set's members may come in any order ("2 1" is the set {1, 2});
  a set with one member is that region; a set may not repeat a region;
- pubtraces pseudonyms must be m+1..2m (rules §6), ptable user ids a
  permutation of 1..m;
- in a zip, ``__MACOSX/`` resource entries and folders are ignored.

The package's modules, in the order a file passes through them: ``archive``
(raw bytes, the one decompressor), ``text`` (header, rows, numbers),
``cells`` (region cells), ``checks`` (ranges, ids, row structure),
``readers``; ``writers`` go the other way; ``formats`` holds rules §5's
constants.
"""
from .archive import check_source, read_source_bytes
from .formats import (
    ANOTRACES_HEADER,
    DEFAULT_MAX_BYTES,
    ETABLE_HEADER,
    ETRACES_HEADER,
    MAX_ROWS,
    PTABLE_HEADER,
    PUBTRACES_HEADER,
    TRACES_HEADER,
)
from .readers import read_anotraces, read_etable, read_etraces, read_ptable, read_pubtraces, read_traces
from .writers import (
    set_texts,
    to_bytes,
    write_anotraces,
    write_etable,
    write_etraces,
    write_ptable,
    write_pubtraces,
    write_traces,
)

__all__ = [
    "ANOTRACES_HEADER", "DEFAULT_MAX_BYTES", "check_source", "ETABLE_HEADER", "ETRACES_HEADER", "MAX_ROWS", "PTABLE_HEADER",
    "PUBTRACES_HEADER", "TRACES_HEADER", "read_anotraces", "read_etable", "read_etraces", "read_ptable",
    "read_pubtraces", "read_source_bytes", "read_traces", "set_texts", "to_bytes", "write_anotraces",
    "write_etable", "write_etraces", "write_ptable", "write_pubtraces", "write_traces",
]
