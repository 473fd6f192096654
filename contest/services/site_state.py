"""The site's state stamp: what changed last, the part of the page cache's key that outdates pages.

What a page shows changes either by an action of a person, which is audited
(:func:`contest.services.audit.record`), or by a background job, whose end
stamps ``Job.finished_at`` (:mod:`contest.services.jobs`). Both are rows in the
database, so the stamp is the newest audit entry and the newest end of a job,
read in one query (the job's end is indexed).

A hit of the page cache must not cost a database round trip (two, with the
connection's health check: under load on two cores they were most of a hit's
time), so the stamp read is kept in the cache for at most
``TRACECUP_PAGE_STAMP_SECONDS`` (1 s), and whoever records an audit entry or
ends a job deletes it, again when its transaction commits (:func:`changed`). With a
shared cache (``CACHE_URL``, Redis in docker-compose) that reaches every
process at once, so the next page load anywhere reads the new stamp; with the
default per-process memory cache, a change made in another process (a worker
ending a job) is seen within that second. While a Redis cache is unreachable it
fails open (:mod:`contest.cache`): the stamp is read at each page and a deletion
is lost, which the one-second life of a kept stamp makes harmless; an upload,
which deletes it inside its storing transaction, is stored all the same.
"""
from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from contest.models import AuditLog, Job

#: Cache key of the stamp read from the database.
KEY = "site-stamp"


def stamp() -> str:
    """``"<newest audit id>:<newest job end, digits>"``: read from the database at most once per
    ``TRACECUP_PAGE_STAMP_SECONDS`` while nothing changes (see the module docstring)."""
    seconds = settings.TRACECUP_PAGE_STAMP_SECONDS
    value = cache.get(KEY) if seconds > 0 else None
    if value is None:
        value = read()
        if seconds > 0:
            cache.set(KEY, value, seconds)
    return value


def read() -> str:
    """The stamp as the database has it now (one query)."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT (SELECT MAX({quote('id')}) FROM {quote(AuditLog._meta.db_table)}), "  # noqa: S608 - table and column names from the models, no input
                       f"(SELECT MAX({quote('finished_at')}) FROM {quote(Job._meta.db_table)})")
        audited, finished = cursor.fetchone()
    finished = "".join(c for c in str(finished or 0) if c.isdigit())  # a time (PostgreSQL) or text (SQLite)
    return f"{audited or 0}:{finished}"


def changed() -> None:
    """An audit entry was recorded or a job ended: the next page load reads the stamp again.

    Deleted now and again when the transaction commits: a page load in between may read (and keep) the
    stamp from before the commit, which the second deletion outdates."""
    _forget()
    transaction.on_commit(_forget, robust=True)


def _forget() -> None:
    cache.delete(KEY)
