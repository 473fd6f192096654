"""When a request began, as the front (nginx) states it: the time an upload's deadline is checked at (rules §15).

nginx reads a request's whole body before Django sees it (``deploy/nginx.conf.template``,
``proxy_request_buffering on``), so an 80 MB upload a team began sending before a deadline reaches a
view after it. The front says when the request began in ``X-TraceCup-Request-Start: <msec> <request_time>``:
``$msec`` is the time (epoch seconds, millisecond resolution) when nginx passed the request on and
``$request_time`` the seconds since it read the request's first bytes, so the request began at their
difference (nginx has no arithmetic). nginx replaces whatever a client sent under that name, so the
header is believed exactly when ``X-Real-IP`` is: with ``TRACECUP_TRUSTED_PROXY`` on (docker-compose).
Without it a client could state any time, and the request began when Django handles it.

The stated time is also bounded: not after now (beyond :data:`CLOCK_SLACK_SECONDS`, nginx and Django
read the same clock), not more than :data:`MAX_AGE_SECONDS` before now; outside these, or unreadable, it
is ignored and the request began now.
"""
from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

#: The header's name as Django's ``request.META`` holds it.
META_KEY = "HTTP_X_TRACECUP_REQUEST_START"
#: Seconds a stated start may lie after Django's clock (the two clocks' rounding; nginx's is cached per loop).
CLOCK_SLACK_SECONDS = 2.0
#: The oldest start believed, seconds before now. nginx gives up on an answer after its
#: ``proxy_read_timeout`` (300 s) and no honest body read takes minutes more; an older one is a broken clock.
MAX_AGE_SECONDS = 600.0


def stated_start(value: str) -> float | None:
    """The start (epoch seconds) that ``value`` (``"<msec> <request_time>"``) states, or None if unreadable."""
    parts = (value or "").split()
    if len(parts) != 2:
        return None
    try:
        msec, elapsed = float(parts[0]), float(parts[1])
    except ValueError:
        return None
    if not (math.isfinite(msec) and math.isfinite(elapsed)) or elapsed < 0:
        return None
    return msec - elapsed


def started_at(request, now: datetime | None = None) -> datetime:
    """When ``request`` began (aware UTC datetime): the trusted front's statement within bounds, else ``now``
    (default the current time). See the module docstring."""
    now = now or timezone.now()
    if not settings.TRACECUP_TRUSTED_PROXY:
        return now
    start = stated_start(request.META.get(META_KEY, ""))
    if start is None:
        return now
    seconds_ago = now.timestamp() - start
    if not -CLOCK_SLACK_SECONDS <= seconds_ago <= MAX_AGE_SECONDS:
        return now
    return datetime.fromtimestamp(start, tz=UTC) if seconds_ago > 0 else now


def deadline_grace() -> timedelta:
    """How long after a phase's deadline its automatic close waits (``TRACECUP_DEADLINE_GRACE_SECONDS``): a
    request begun before the deadline whose body the front is still reading arrives before the close."""
    return timedelta(seconds=settings.TRACECUP_DEADLINE_GRACE_SECONDS)
