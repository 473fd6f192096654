"""The upload size rule, stated once and in one unit: the pages, the page script, the 413 of the request cap
and the upload service's refusal all take their figure and their sentence from here.

The limit binds the uncompressed CSV (a .gz or .zip is measured by what it holds), so no message advises
compressing a file that is too large: compressing cannot bring it under the limit.
"""
from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

#: Room in a request for the form's other fields and the multipart boundaries beside the file (bytes).
FORM_ROOM = 1024 * 1024


def largest_file_bytes() -> int:
    """The largest file one request may carry (bytes): the request cap less the form's room.

    With the default cap (200 MiB + 1 MiB) this is 200 MiB, the largest ``upload_size_limit`` a contest
    may set: the rules page, the upload card and this 413 name the same figure."""
    cap = settings.TRACECUP_MAX_REQUEST_BYTES
    return cap - FORM_ROOM if cap > 2 * FORM_ROOM else cap


def contest_upload_limit(contest) -> int:
    """The one figure a contest's pages give for the largest upload (bytes): its ``upload_size_limit``
    (uncompressed), or less when this site's request cap is lower."""
    return min(contest.upload_size_limit, largest_file_bytes())


def size_text(size: int) -> str:
    """A size in the units every page, message and the page script state sizes in: MiB (2**20 bytes),
    KiB below one MiB, bytes below one KiB (an empty file is "0 B", not "0 KiB"), with one decimal
    unless the figure is whole ("200 MiB", "48.8 KiB")."""
    if size < 1 << 10:
        return f"{size}\xa0B"
    unit, scale = ("MiB", 1 << 20) if size >= 1 << 20 else ("KiB", 1 << 10)
    figure = f"{size / scale:.1f}".removesuffix(".0")
    return f"{figure}\xa0{unit}"


def limit_text(limit: int) -> str:
    """The upload rule, stated once: at most ``limit`` uncompressed, an archive counted by the CSV it holds.

    The limit binds the uncompressed CSV, so no message advises compressing a file that is too large."""
    return _("at most %(size)s uncompressed (a .gz or .zip counts by the CSV it holds)") % {"size": size_text(limit)}


def too_large_message(limit: int | None = None) -> str:
    """What a refused oversized upload is told, in the active language (``limit``: the site's largest file)."""
    return _("this file is larger than an upload may be: %(rule)s") % {
        "rule": limit_text(largest_file_bytes() if limit is None else limit)}
