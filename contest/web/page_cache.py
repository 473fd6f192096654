"""The one page cache: whole rendered pages kept in Django's cache framework.

**The key, in one sentence:** a page is stored under its address (the path and the
normalized ``round`` parameter), the page language, the viewer (nobody, or the
dashboard's session and CSRF cookie, hashed) and the site's state stamp (the
newest audit-log entry, the newest end of a background job and the clock bucket
of ``TRACECUP_PAGE_CACHE_SECONDS``; :mod:`contest.services.site_state`; for the team
dashboard, the stamp of the team it shows: :func:`per_session`). Each page's
buckets turn at their own moment within those seconds (:func:`turn_offset`).

What this caches: a published contest's public pages (home, overview, rules,
leaderboards, attack matrix, awards, plots, analyses) for an anonymous visitor,
one whose session and messages cookies, if any, hold nothing the server issued (:func:`anonymous`;
:class:`PublicPageCacheMiddleware`, served without running the view or
the inner middleware; the stored headers are replayed, the CSP header is added
outside), and the team dashboard for the session that rendered it
(:func:`per_session`). Nothing else is cached: pages of signed-in visitors are
rendered whole each time.

Why the stamp sees every change at the next load without signals or
invalidation by hand: what a page shows changes either by an action of a
person, which is audited (uploads, selections, team approval and renames,
phase changes, generation requests, announcements, publishing), or by a
background job (scoring an upload or an attack, generating the data, closing a
set, the results, previews, figures), whose end stamps ``Job.finished_at``. Both
are rows in the database, so every web process reads the same stamp, with or
without a shared ``CACHE_URL`` (Redis in docker-compose, so the processes also
share the stored pages). A hit makes no database query: the stamp read is kept
in the cache for a second and deleted by whoever records an audit entry or ends
a job (:mod:`contest.services.site_state`); with the default per-process memory
cache, a job ended by a worker process shows within that second (pinned by
tests/web/test_page_cache.py). What only the clock changes (a phase
opening at its time), edits outside the services (the Django admin, a shell)
and the rare change whose transaction commits after a newer one's (its entry or
job end is then not the newest) show when the bucket turns, 10 s by default; 0
turns the cache off.

A page that sets a cookie (a CSRF token, a session) is never stored, so no
visitor is served another's token; the header's language switcher is a GET form
for that reason. A page that shows flash messages is never stored, and a request
with messages waiting is rendered, not served from the cache: Django's messages
framework says so (:func:`_has_messages`), so a message is shown once.

When the stamp changes or the bucket turns, the first visitor renders the public page again, and
visitors who arrive while it renders get the page's last rendering (``X-Page-Cache: stale``) instead of
all rendering it at once; that copy is never older than two buckets.

A public page rendered because it was not stored costs tens of milliseconds;
each client address may cause at most ``TRACECUP_PAGE_RENDERS_PER_MINUTE`` of
them a minute (default 120 with ``TRACECUP_PRODUCTION``, off otherwise), then
it is answered 429 with ``Retry-After`` while every stored page is still
served to it and everyone else.
"""
from __future__ import annotations

import functools
import hashlib
import re
import time
import zlib
from importlib import import_module

from django.conf import settings
from django.contrib import messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.core.cache import cache
from django.http import HttpResponse
from django.utils import translation
from django.utils.cache import patch_cache_control

from contest.lockout import client_address
from contest.services import site_state

#: Public pages whose HTML is the same for every anonymous visitor.
CACHEABLE_PATH = re.compile(r"^/(c/[-\w]+/((rules|leaderboard|attack-matrix|awards|plots|analyses)/)?)?$")

#: Headers of a stored page that are not replayed (they belong to the response that was stored).
NOT_REPLAYED = {"set-cookie", "date", "x-page-cache"}

#: Longest a public page's re-rendering is waited for (seconds): visitors arriving meanwhile get the page's last
#: rendering (``X-Page-Cache: stale``); a render that dies frees the page after this.
RENDER_SECONDS = 5

#: Buckets a page's last rendering is kept, to be served while the page renders again (never older than this).
LATEST_BUCKETS = 2

#: A round's number (or the weighted total): the one query parameter the cached pages read.
_ROUND_VALUE = re.compile(r"^(total|\d{1,4})$")


class PublicPageCacheMiddleware:
    """Serve and store whole public pages for anonymous visitors (see the module docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        seconds = settings.TRACECUP_PAGE_CACHE_SECONDS
        if seconds <= 0 or not self.cacheable(request):
            return self.get_response(request)
        language = translation.get_language_from_request(request)
        key = page_key(request, seconds, language)
        stored = cache.get(key)
        if stored is not None:
            return _replay(stored)
        # The stamp changed (a job ended, an action was audited): one visitor renders the page again, and
        # those who arrive meanwhile get its last rendering instead of all rendering it at once (under
        # load, 50 connections rendered each page together at every job's end).
        latest = f"page-latest:{language}:{page_address(request)}"
        rendering = f"{key}:rendering"
        if not cache.add(rendering, 1, RENDER_SECONDS):
            previous = cache.get(latest)
            if previous is not None:
                return _replay(previous, "stale")
        try:
            if not _render_allowed(request):
                response = HttpResponse("Too many pages requested that are not cached; try again in a minute.",
                                        status=429, content_type="text/plain; charset=utf-8")
                response["Retry-After"] = "60"
                return response
            response = self.get_response(request)
            stored = _store(key, request, response, seconds)
            if stored is not None:
                # Served while the next stamp's page renders, also the next bucket's: kept for one bucket it
                # was gone at every bucket's turn, when all pages render again (under load, the 50 visitors
                # of a page rendered it together there every 10 s).
                cache.set(latest, stored, LATEST_BUCKETS * seconds)
        finally:
            cache.delete(rendering)
        return response

    @staticmethod
    def cacheable(request) -> bool:
        """A GET of a public page by an anonymous visitor (:func:`anonymous`)."""
        return (request.method == "GET" and CACHEABLE_PATH.match(request.path_info) is not None
                and anonymous(request))


def anonymous(request) -> bool:
    """Whether the visitor is nobody in particular: no session that holds anything (a signed-in user, flash
    messages) and no flash messages in the messages cookie (where they wait without a session).

    Only what the server issued counts, since a client can send any cookie: a session cookie that names no
    session, or a messages cookie whose signature fails, is dropped from the request, so the page renders
    and is stored as for a visitor without it. Counting the cookie's presence let a client sending a random
    ``sessionid`` on every request skip both the cache and the render limit. An ``Authorization`` header
    changes no page either: pages sign in by session only (API tokens are read under ``/api/``, never
    cached). The check costs one session read, for requests that carry a session cookie.
    """
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if session_key is not None:
        if import_module(settings.SESSION_ENGINE).SessionStore(session_key).load():
            return False
        del request.COOKIES[settings.SESSION_COOKIE_NAME]
    if CookieStorage.cookie_name in request.COOKIES:
        if len(CookieStorage(request)):
            return False
        del request.COOKIES[CookieStorage.cookie_name]
    return True


def per_session(view=None, *, team_of=None):
    """Cache a signed-in page (the team dashboard) for the session that rendered it (module docstring).

    The page holds that visitor's name and CSRF token, so its viewer part is the
    session and the CSRF cookie (hashed): a reload by the same browser is served
    the stored page; nobody else ever is. A page rendered with a new CSRF secret
    is not stored (its cookie goes out with this response only; Django re-sends a
    known CSRF cookie with every page only to renew its year-long expiry, which a
    stored page skips), nor one with flash messages. ``Cache-Control: private``
    keeps shared caches (a proxy, a CDN) from keeping it for anyone else.

    ``team_of(request, *args, **kwargs)``: the id of the team whose state the page shows (with nobody's
    team's), or None. The page is then kept until that team's stamp changes (``site_state.team_stamp``),
    not the whole site's, so another team's upload or score does not outdate it. A hit makes no query:
    the team a viewer's page showed is remembered beside it (:data:`TEAM_REMEMBERED_SECONDS`), and
    ``team_of`` is asked again before each rendering, so a visitor who changed teams (an entry of
    nobody's team, which outdates the page) gets the new team's page, kept by the new team's stamp.
    """
    if view is None:
        return functools.partial(per_session, team_of=team_of)

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        response = cached_for_session(request, *args, **kwargs)
        patch_cache_control(response, private=True)
        return response

    def cached_for_session(request, *args, **kwargs):
        seconds = settings.TRACECUP_PAGE_CACHE_SECONDS
        session = request.session.session_key
        if seconds <= 0 or request.method != "GET" or not session or _has_messages(request):
            return view(request, *args, **kwargs)
        csrf_secret = request.COOKIES.get(settings.CSRF_COOKIE_NAME)
        viewer = hashlib.sha256(f"{session}:{csrf_secret or ''}".encode()).hexdigest()
        language = translation.get_language()
        shown_before = f"page-team:{viewer}:{request.path}"
        team = cache.get(shown_before) if team_of is not None else None
        key = page_key(request, seconds, language, viewer, team)
        stored = cache.get(key)
        if stored is not None:
            return _replay(stored)
        if team_of is not None:  # the stamp is read before the rendering, so the page is at least as new
            team = team_of(request, *args, **kwargs)
            key = page_key(request, seconds, language, viewer, team)
        response = view(request, *args, **kwargs)
        new_secret = "CSRF_COOKIE" in request.META and request.META["CSRF_COOKIE"] != csrf_secret
        if not new_secret and _store(key, request, response, seconds) is not None and team is not None:
            cache.set(shown_before, team, TEAM_REMEMBERED_SECONDS)
        return response
    return wrapper


#: How long the team whose state a viewer's page showed is remembered (:func:`per_session`'s ``team_of``).
TEAM_REMEMBERED_SECONDS = 3600


def page_key(request, seconds: int, language: str, viewer: str = "", team: int | None = None) -> str:
    """The cache key of a page: its address, the language, the viewer ("" for nobody) and the state stamp
    (the site's, or team ``team``'s: :func:`per_session`)."""
    page = f"{language}:{viewer}:{page_address(request)}"
    return f"page:{state(seconds, page, team)}:{page}"


def page_address(request) -> str:
    """The path and the query parameters the cached pages read (``round``, as the views read it); other
    parameters do not change the page and are left out of the key."""
    value = request.GET.get("round", "")
    if not _ROUND_VALUE.match(value):
        return request.path
    return f"{request.path}?round={value if value == 'total' else int(value)}"


def state(seconds: int, page: str = "", team: int | None = None) -> str:
    """The site's state stamp (:func:`contest.services.site_state.stamp`: the newest audit entry and the
    newest end of a job), or team ``team``'s (``site_state.team_stamp``), and ``page``'s clock bucket of
    ``seconds`` (:func:`turn_offset`)."""
    stamp = site_state.stamp() if team is None else f"t{team}:{site_state.team_stamp(team)}"
    return f"{stamp}:{int((time.time() + turn_offset(seconds, page)) // seconds)}"


def turn_offset(seconds: int, page: str) -> float:
    """Seconds (0 to ``seconds``) by which ``page``'s buckets are shifted, fixed by the page (its address,
    language and viewer): the pages' buckets turn one after another through the ``seconds``, not all at the
    same instant. Turning together, every page and every dashboard rendered again in the same half second
    every 10 s, and under load those bursts were the slowest 5 % of all requests (``make bench-full``'s load test)."""
    return zlib.crc32(page.encode()) % 1000 / 1000 * seconds


def _has_messages(request) -> bool:
    """Whether the request's message storage holds flash messages (waiting, or added by the view)."""
    return len(messages.get_messages(request)) > 0


def _store(key: str, request, response, seconds: int) -> dict | None:
    """Keep ``response`` under ``key`` for ``seconds`` if it is a whole HTML page that sets no cookie and
    shows no flash message; mark it ``X-Page-Cache: miss``. Returns what was stored, or None."""
    if (response.status_code != 200 or response.streaming or response.cookies
            or not response.get("Content-Type", "").startswith("text/html") or _has_messages(request)):
        return None
    headers = [(k, v) for k, v in response.items() if k.lower() not in NOT_REPLAYED]
    stored = {"content": response.content, "headers": headers}
    cache.set(key, stored, seconds)
    response["X-Page-Cache"] = "miss"
    return stored


def _replay(stored: dict, mark: str = "hit") -> HttpResponse:
    response = HttpResponse(stored["content"], status=200)
    for name, value in stored["headers"]:
        response[name] = value
    response["X-Page-Cache"] = mark
    return response


def _render_allowed(request) -> bool:
    """Whether this client may have one more page rendered this minute (``TRACECUP_PAGE_RENDERS_PER_MINUTE``)."""
    limit = settings.TRACECUP_PAGE_RENDERS_PER_MINUTE
    if limit <= 0:
        return True
    key = f"page-renders:{client_address(request)}:{int(time.time() // 60)}"
    if cache.add(key, 1, 120):
        return True
    try:
        return cache.incr(key) <= limit
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, 120)
        return True
