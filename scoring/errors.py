"""Errors raised for bad contest files (SPEC section 5).

One exception type, :class:`ValidationError`, carries every problem found in
an upload as structured :class:`Issue` rows (line, column, value, message), so
the platform can store them next to a rejected upload and show them to the
team, and the command line can print them. Messages are written for a
contest participant: they name the line as a text editor numbers it (the
header is line 1), the offending value and what was expected.
"""
from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Issue:
    """One problem in a file.

    Attributes:
        line: 1-based line number as in the file (the header is line 1), or
            None when the problem is about the file as a whole (e.g. a row
            count, or a missing row that has no line of its own).
        column: the column's header name (``reg_id``, ``user_id``, ...), or None.
        value: the offending value as shown to the participant, or None.
        message: participant-readable text without the ``line N:`` prefix.
    """

    line: int | None
    column: str | None
    value: str | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line is not None else self.message


class ValidationError(Exception):
    """A contest file broke one or more rules of SPEC 5.

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
        return [dict(line=i.line, column=i.column, value=i.value, message=i.message) for i in self.issues]


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
