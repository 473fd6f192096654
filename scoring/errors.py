"""Errors raised for bad contest files (rules §5).

One exception type, :class:`ValidationError`, carries every problem found in
an upload as structured :class:`Issue` rows (line, column, value, message), so
the platform can store them next to a rejected upload and show them to the
team, and the command line can print them. Messages are written for a
contest participant: they name the line as a text editor numbers it (the
header is line 1), the offending value and what was expected.

Every issue has a ``code`` and ``params`` besides its English ``message``:
the message is :data:`MESSAGES` [code] formatted with the params, so a page
can render the same problem in the viewer's language (the platform's
Japanese catalog translates these templates; ``gettext_noop`` below marks
them for its message extraction without importing Django).
"""
from __future__ import annotations

from dataclasses import dataclass, field

#: How many issues an error keeps and shows; the total is always counted.
MAX_ISSUES = 20

#: Longest value shown in a message; longer values are cut with an ellipsis.
MAX_VALUE_CHARS = 40


def show_value(value) -> str:
    """A file value (bytes or str) as a short printable string for messages.

    Non-UTF-8 bytes and control characters are escaped, and values longer
    than :data:`MAX_VALUE_CHARS` are cut (with their full length noted), so a
    10 MB garbage line never floods an error message.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        head = raw[: MAX_VALUE_CHARS * 4]
        text = head.decode("utf-8", errors="backslashreplace")
        full_len = len(raw)
    else:
        text = str(value)
        full_len = len(text)
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    if full_len > MAX_VALUE_CHARS or len(text) > MAX_VALUE_CHARS:
        return f"{text[:MAX_VALUE_CHARS]}... ({full_len} characters)"
    return text


def show_bytes(raw: bytes) -> str:
    """The start of a binary value as printable ASCII: ``\\x89PNG\\r\\n...``.

    Every byte outside printable ASCII becomes a ``\\xNN`` escape, so the text
    needs no font beyond ASCII (no missing-glyph boxes) and is escaped once.
    """
    head = bytes(raw[:MAX_VALUE_CHARS])
    text = "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02x}" for b in head)
    return f"{text}... ({len(raw)} bytes)" if len(raw) > MAX_VALUE_CHARS else text


def gettext_noop(message: str) -> str:
    """Mark a message template for translation; the text is returned unchanged (translated on display)."""
    return message


#: The English template of every problem a contest file can have, by code. ``{column}`` and
#: ``{value}`` are the issue's own column and value; the other names are its ``params``
#: (:func:`render`). Values from the file are already shown safely (:func:`show_value`).
MESSAGES: dict[str, str] = {
    # the file as a whole
    "file_too_large": gettext_noop("the file is larger than the limit of {limit} bytes uncompressed"),
    "gz_truncated": gettext_noop("the .gz file is truncated (it ends in the middle)"),
    "gz_trailing": gettext_noop("the .gz file has trailing data that is not gzip"),
    "gz_broken": gettext_noop("the file looks like gzip but cannot be decompressed ({detail})"),
    "zip_broken": gettext_noop("the file looks like a zip archive but cannot be opened ({detail})"),
    "zip_no_file": gettext_noop("a .zip upload must hold exactly one CSV file, found 0"),
    "zip_members": gettext_noop("a .zip upload must hold exactly one CSV file, found {count}: {names}"),
    "zip_unreadable": gettext_noop("cannot read {name} in the zip: {detail}"),
    "zip_member_broken": gettext_noop("{name} in the zip cannot be decompressed ({detail})"),
    "nested_archive": gettext_noop("the {outer} file holds another archive ({inner}): upload one CSV file, "
                                   "plain or compressed once as .gz or .zip"),
    "not_text": gettext_noop("this is not a text/CSV file: it holds binary data, where a CSV file with the "
                             "header '{header}' was expected"),
    "empty_file": gettext_noop("the file is empty: expected the header '{header}' and the rows"),
    "bad_header": gettext_noop("expected header '{header}', found '{found}'"),
    # the header of the other attack file: the kind chosen on the form is the likely mistake
    "etraces_header": gettext_noop("expected header '{header}', found '{found}': that is the header of an etraces "
                                   "file (trace inference); if this is one, send it again with the kind etraces"),
    "etable_header": gettext_noop("expected header '{header}', found '{found}': that is the header of an etable "
                                  "file (re-identification); if this is one, send it again with the kind etable"),
    "too_many_rows": gettext_noop("the file has {count} rows after the header, more than the limit of {limit}"),
    "no_rows": gettext_noop("the file has a header but no rows"),
    "row_count_grid": gettext_noop("expected {expected} rows after the header, found {found} "
                                   "({users} {idcol}s x {times} time ids)"),
    "row_count_traces": gettext_noop("expected {expected} rows after the header, found {found} "
                                     "(one per row of the original traces)"),
    "row_count_etable": gettext_noop("expected {expected} rows after the header, found {found} "
                                     "(one per pseudonym, in ascending pseudonym order)"),
    # one line or one value
    "empty_line": gettext_noop("empty line: expected {columns}"),
    "field_count": gettext_noop("expected {count} comma-separated values ({columns}), found {found} in '{text}'"),
    "empty_field": gettext_noop("empty {column}"),
    "not_integer": gettext_noop("{column} '{value}' is not a non-negative integer"),
    "number_too_large": gettext_noop("{column} {value} is too large"),
    "out_of_range": gettext_noop("{column} {value} is outside {lo}..{hi}"),
    "region_out_of_range": gettext_noop("region id {value} is outside 1..{hi}"),
    "at_least_one": gettext_noop("{column} {value} must be at least 1"),
    "unexpected_id": gettext_noop("{column} {value} is not one of the expected values ({expected})"),
    # region cells
    "etraces_single": gettext_noop("an etraces cell must be a single region id, found '{cell}'"),
    "empty_cell_set": gettext_noop("empty cell (write '*' for a deletion)"),
    "empty_cell": gettext_noop("empty cell: expected a region id"),
    "not_region": gettext_noop("'{cell}' is not a region id"),
    "not_cell": gettext_noop("'{cell}' is not a region id, a space-separated set of region ids or '*'"),
    "set_spacing": gettext_noop("separate the region ids of a set by single spaces, found '{cell}'"),
    "set_member": gettext_noop("'{part}' in '{cell}' is not a region id"),
    "set_repeat": gettext_noop("region {region} appears twice in the set '{cell}'"),
    "set_members_too_many": gettext_noop(
        "the file's distinct cells name {count} region ids in all (each distinct cell counted once, however "
        "often it appears); the judge scores at most {limit}, which keeps a scoring job within its memory. "
        "A generalization uses far fewer distinct sets: repeat the same sets across rows"),
    # order and completeness of (id, time_id) rows
    "row_repeat": gettext_noop("{idcol} {id}, time_id {time} appears twice (also on line {other})"),
    "row_order": gettext_noop("{idcol} {id}, time_id {time} comes after {idcol} {prev_id}, time_id {prev_time}: "
                              "rows must be sorted by {idcol}, then time_id"),
    "pseudonym_range": gettext_noop("{column} {value}: with {m} pseudonyms they must be {lo}..{hi} (m+1..2m)"),
    "id_gap": gettext_noop("{column}s must run 1..m without gaps: {column} {value} has no rows"),
    "stray_time": gettext_noop("time_id {value} is not one of the time ids the other {idcol}s have ({expected})"),
    "missing_time": gettext_noop("{idcol} {id} has no row for time_id {value} "
                                 "(every {idcol} needs a row at each time id)"),
    # the ID table
    "ptable_pseudonym": gettext_noop("expected pse_id {expected}, found {found} "
                                     "(pseudonyms run m+1..2m = {lo}..{hi} in ascending order)"),
    "ptable_repeat": gettext_noop("user_id {value} appears twice (also on line {other}); "
                                  "the ID table must be a permutation of 1..{m}"),
}


@dataclass(frozen=True)
class Issue:
    """One problem in a file.

    Attributes:
        line: 1-based line number as in the file (the header is line 1), or
            None when the problem is about the file as a whole (e.g. a row
            count, or a missing row that has no line of its own).
        column: the column's header name (``reg_id``, ``user_id``, ...), or None.
        value: the offending value as shown to the participant, or None.
        message: participant-readable text without the ``line N:`` prefix (English).
        code: the key of the message's template in :data:`MESSAGES` ("" for a free-text message).
        params: the template's values (strings and ints), so the message can be rendered in
            another language.
    """

    line: int | None
    column: str | None
    value: str | None
    message: str
    code: str = ""
    params: dict = field(default_factory=dict, compare=False, hash=False)

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line is not None else self.message


def render(template: str, column: str | None, value: str | None, params: dict) -> str:
    """A message template (:data:`MESSAGES`, or its translation) filled with an issue's column, value and params."""
    return template.format(column=column, value=value, **params)


def issue(code: str, line: int | None = None, column: str | None = None, value=None, **params) -> Issue:
    """The :class:`Issue` of problem ``code`` (a key of :data:`MESSAGES`) with its template's ``params``."""
    params = {k: (v.item() if hasattr(v, "item") else v) for k, v in params.items()}  # numpy scalars -> JSON
    value = None if value is None else str(value)
    return Issue(None if line is None else int(line), column, value, render(MESSAGES[code], column, value, params),
                 code, params)


class ValidationError(Exception):
    """A contest file broke one or more rules of rules §5.

    Attributes:
        issues: the first :data:`MAX_ISSUES` problems, in file order where
            the problems have lines.
        total: the number of problems found in all (>= ``len(issues)``).
        source: an optional name of the file, used as a heading.
    """

    def __init__(self, issues, total: int | None = None, source: str | None = None):
        issues = list(issues)
        self.total = max(int(total) if total is not None else len(issues), len(issues))
        self.issues = issues[:MAX_ISSUES]
        self.source = source
        super().__init__(str(self))

    @classmethod
    def single(cls, message: str, line: int | None = None, column: str | None = None,
               value: str | None = None, source: str | None = None) -> ValidationError:
        return cls([Issue(line, column, value, message)], source=source)

    @classmethod
    def of(cls, code: str, line: int | None = None, column: str | None = None, value=None,
           source: str | None = None, **params) -> ValidationError:
        """An error with the single problem ``code`` (see :func:`issue`)."""
        return cls([issue(code, line, column, value, **params)], source=source)

    def __str__(self) -> str:
        head = f"{self.source}: " if self.source else ""
        if self.total == 1:
            lines = [f"{head}{self.issues[0]}"]
        else:
            lines = [f"{head}{self.total} problems found" + (
                f", the first {len(self.issues)}:" if self.total > len(self.issues) else ":")]
            lines += [f"  {issue}" for issue in self.issues]
            if self.total > len(self.issues):
                lines.append(f"  ... and {self.total - len(self.issues)} more")
        return "\n".join(lines)

    def to_dicts(self) -> list[dict]:
        """The kept issues as plain dicts (for storing next to a rejected upload)."""
        return [dict(line=i.line, column=i.column, value=i.value, message=i.message, code=i.code, params=i.params)
                for i in self.issues]


class IssueCollector:
    """Accumulates issues, keeping the first :data:`MAX_ISSUES` and counting all."""

    def __init__(self):
        self.issues: list[Issue] = []
        self.total = 0

    def add(self, line, column, value, message) -> None:
        self.total += 1
        if len(self.issues) < MAX_ISSUES:
            self.issues.append(Issue(None if line is None else int(line), column,
                                     None if value is None else str(value), message))

    def put(self, code: str, line=None, column=None, value=None, **params) -> None:
        """Add the problem ``code`` (see :func:`issue`)."""
        self.total += 1
        if len(self.issues) < MAX_ISSUES:
            self.issues.append(issue(code, line, column, value, **params))

    def add_counted(self, total: int, issues) -> None:
        """Add ``total`` problems of which ``issues`` (an iterable of Issue) are examples."""
        self.total += int(total)
        for issue in issues:
            if len(self.issues) >= MAX_ISSUES:
                break
            self.issues.append(issue)

    def __bool__(self) -> bool:
        return self.total > 0

    def sort(self) -> None:
        """Order the kept issues by line (whole-file issues first)."""
        self.issues.sort(key=lambda i: -1 if i.line is None else i.line)

    def raise_if_any(self, source: str | None = None) -> None:
        if self.total:
            raise ValidationError(self.issues, self.total, source=source)
