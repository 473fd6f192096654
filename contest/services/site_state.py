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

**A team's stamp** (:func:`team_stamp`, the team dashboard's): what changes one team's pages is its own
actions and jobs (its uploads, attacks and choices, audited with the team; their scoring and previews,
jobs of the team) and everything that is nobody's team (the organizers' and the judge's actions and jobs:
a phase closed, an announcement, the attack material). Another team's upload or score does not, and in
the last minute before a deadline those come every fraction of a second: with the site's stamp every
dashboard was rendered again at nearly every load (make bench-surge). So a team's stamp is the newest
entry and job end of that team with the newest of nobody's team, each read kept for the same second and
deleted when such an entry or job end is made. What the page shows of other teams' work, the place of a
queued upload in the teams' queue, is as old as the page's clock bucket at most; the card's live part,
which the page polls while an upload is pending, reads it anew.
"""
from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction

from contest.models import AuditLog, Job

#: Cache key of the stamp read from the database.
KEY = "site-stamp"
#: Cache key of the newest entry and job end of nobody's team (:func:`team_stamp`).
SHARED_KEY = "site-stamp:shared"


def team_key(team_id: int) -> str:
    """Cache key of the newest entry and job end of team ``team_id`` (:func:`team_stamp`)."""
    return f"site-stamp:team:{team_id}"


def stamp() -> str:
    """``"<newest audit id>:<newest job end, digits>"``: read from the database at most once per
    ``TRACECUP_PAGE_STAMP_SECONDS`` while nothing changes (see the module docstring)."""
    return _kept(KEY, read)


def team_stamp(team_id: int) -> str:
    """The stamp of team ``team_id``'s pages: ``"<nobody's team's newest>/<the team's newest>"``, each part as
    :func:`stamp` (module docstring); each read at most once per ``TRACECUP_PAGE_STAMP_SECONDS``."""
    return f"{_kept(SHARED_KEY, lambda: read(team=None))}/{_kept(team_key(team_id), lambda: read(team=team_id))}"


def _kept(key: str, reader) -> str:
    """``reader()``, kept under ``key`` for ``TRACECUP_PAGE_STAMP_SECONDS`` (0: read each time)."""
    seconds = settings.TRACECUP_PAGE_STAMP_SECONDS
    value = cache.get(key) if seconds > 0 else None
    if value is None:
        value = reader()
        if seconds > 0:
            cache.set(key, value, seconds)
    return value


#: :func:`read`'s ``team`` for every entry and job end, whoever's.
EVERYONE = "everyone"


def read(team: int | None | str = EVERYONE) -> str:
    """The stamp as the database has it now (one query): the newest audit entry and job end of everyone
    (:data:`EVERYONE`), of nobody's team (None) or of team ``team`` (an id)."""
    quote = connection.ops.quote_name
    where, params = "", []
    if team is None:
        where = f" WHERE {quote('team_id')} IS NULL"
    elif team != EVERYONE:
        where, params = f" WHERE {quote('team_id')} = %s", [int(team)]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT (SELECT MAX({quote('id')}) FROM {quote(AuditLog._meta.db_table)}{where}), "  # noqa: S608 - table and column names from the models; the team is a parameter
                       f"(SELECT MAX({quote('finished_at')}) FROM {quote(Job._meta.db_table)}{where})", params * 2)
        audited, finished = cursor.fetchone()
    finished = "".join(c for c in str(finished or 0) if c.isdigit())  # a time (PostgreSQL) or text (SQLite)
    return f"{audited or 0}:{finished}"


def changed(*team_ids: int | None) -> None:
    """An audit entry was recorded or a job ended, of the teams ``team_ids`` (None: nobody's team; none given:
    not known, as nobody's): the next page load reads the site's stamp and those parts of the teams' stamps again.

    Deleted now and again when the transaction commits: a page load in between may read (and keep) the
    stamp from before the commit, which the second deletion outdates. A team's part not deleted (a change
    whose team was not told) is read again within the second it is kept."""
    keys = [KEY] + sorted({SHARED_KEY if team is None else team_key(team) for team in (team_ids or (None,))})

    def forget() -> None:
        cache.delete_many(keys)
    forget()
    transaction.on_commit(forget, robust=True)

