"""A contest time in a page, as its people read it: ``{{ dt|contest_time:contest }}``.

Built on :meth:`contest.models.Contest.local_text`, the one format of a contest time (messages and
pages built in Python use it directly): ``2019-11-20 17:00 JST`` in the contest's time zone, whatever
the reader's zone or the active one. ``contest_time_seconds`` adds the seconds (job and upload times).
``None`` (a time not reached yet) gives ``""``, so ``|default:"—"`` can follow. ``contest_zone`` is the
zone's abbreviation at a time (``JST``), for the page script's formatter of the same format.
"""
from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def contest_time(dt, contest) -> str:
    """``dt`` (an aware datetime, or None) in ``contest``'s zone, to the minute."""
    return contest.local_text(dt) if dt else ""


@register.filter
def contest_time_seconds(dt, contest) -> str:
    """``dt`` (an aware datetime, or None) in ``contest``'s zone, to the second."""
    return contest.local_text(dt, seconds=True) if dt else ""


@register.filter
def contest_zone(dt, contest) -> str:
    """The abbreviation of ``contest``'s zone at ``dt`` (``JST``; ``CET`` or ``CEST`` by the date), as
    :meth:`~contest.models.Contest.local_text` ends its times; the page script writes it after the times it
    formats (``formatIn`` in static/js/tracecup.js), so a deadline reads the same in both."""
    return dt.astimezone(contest.tz).strftime("%Z") if dt else ""
