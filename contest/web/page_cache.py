"""Whole public pages cached for visitors who are not logged in (issue 14: pages under load).

A published contest's public pages (home, overview, rules, leaderboards,
attack matrix, awards, plots, analyses) are read by many anonymous visitors
and change rarely. For a request that carries no session and no flash
messages, the rendered page (body and headers; the CSP header is added outside) is kept in
Django's cache and served without running the view or the inner middleware:
about a millisecond instead of tens.

The key holds the path and the query parameters the pages read (``round``, normalized; any other
parameter is the same page, so a cache-busting ``?x=random`` is served the stored one), the page language (as LocaleMiddleware
picks it), a version bumped by every saved or deleted row of the contest app
(signals; seen by every process when the cache is shared, ``CACHE_URL``, e.g.
Redis), the newest audit-log entry (what the workers change is audited:
publishing, phase changes, pseudonymization, uploads; seen by every web process
even with per-process caches) and a time bucket of
``TRACECUP_PAGE_CACHE_SECONDS``: what the clock changes (a phase opening at
its time) or a bulk update elsewhere shows within it, 10 s by default. A page
that sets a cookie (a CSRF token, a session) is never stored, so no visitor is
served another's token; the header's language switcher is a GET form for that
reason.

A page rendered because it was not stored costs tens of milliseconds; each client address may cause
at most ``TRACECUP_PAGE_RENDERS_PER_MINUTE`` of them a minute (default 120 with ``TRACECUP_PRODUCTION``,
off otherwise), then it is answered 429 with ``Retry-After`` while every stored page is still served
to it and everyone else.
"""
from __future__ import annotations

import functools
import hashlib
import re
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from django.utils import translation
from django.utils.cache import patch_cache_control

from contest.lockout import client_address
from contest.models import AuditLog

#: Public pages whose HTML is the same for every anonymous visitor.
CACHEABLE_PATH = re.compile(r"^/(c/[-\w]+/((rules|leaderboard|attack-matrix|awards|plots|analyses)/)?)?$")

#: Headers of a stored page that are not replayed (they belong to the response that was stored).
NOT_REPLAYED = {"set-cookie", "date", "x-page-cache"}


class PublicPageCacheMiddleware:
    """Serve and store whole public pages for anonymous visitors (see the module docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        seconds = settings.TRACECUP_PAGE_CACHE_SECONDS
        if seconds <= 0 or not self.cacheable(request):
            return self.get_response(request)
        key = self.key(request, seconds)
        stored = cache.get(key)
        if stored is not None:
            response = HttpResponse(stored["content"], status=200)
            for name, value in stored["headers"]:
                response[name] = value
            response["X-Page-Cache"] = "hit"
            return response
        if not _render_allowed(request):
            response = HttpResponse("Too many pages requested that are not cached; try again in a minute.",
                                    status=429, content_type="text/plain; charset=utf-8")
            response["Retry-After"] = "60"
            return response
        response = self.get_response(request)
        if _storable(response) and not response.cookies:
            headers = [(k, v) for k, v in response.items() if k.lower() not in NOT_REPLAYED]
            cache.set(key, {"content": response.content, "headers": headers}, seconds)
            response["X-Page-Cache"] = "miss"
        return response

    @staticmethod
    def cacheable(request) -> bool:
        """A GET of a public page by a visitor with no session, no flash messages and no API credentials."""
        return (request.method == "GET" and CACHEABLE_PATH.match(request.path_info) is not None
                and settings.SESSION_COOKIE_NAME not in request.COOKIES and "messages" not in request.COOKIES
                and "HTTP_AUTHORIZATION" not in request.META)

    @staticmethod
    def key(request, seconds: int) -> str:
        return f"page:{_state(seconds)}:{translation.get_language_from_request(request)}:{page_address(request)}"


#: A round's number (or the weighted total): the one query parameter the public pages read.
_ROUND_VALUE = re.compile(r"^(total|\d{1,4})$")


def page_address(request) -> str:
    """The path and the query parameters the cached pages read (``round``, as the view reads it); other
    parameters do not change the page and are left out of the key."""
    value = request.GET.get("round", "")
    if not _ROUND_VALUE.match(value):
        return request.path
    return f"{request.path}?round={value if value == 'total' else int(value)}"


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


def _state(seconds: int) -> str:
    """The part of every key that changes with the contest's data: version, newest audit entry, clock bucket."""
    newest = AuditLog.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return f"{cache.get(VERSION_KEY, 0)}:{newest}:{int(time.time() // seconds)}"


def _storable(response) -> bool:
    return (response.status_code == 200 and not response.streaming
            and response.get("Content-Type", "").startswith("text/html"))


def per_session(view):
    """Cache a signed-in page (the team dashboard) for the session that rendered it, under the same
    state key as the public pages.

    The page holds that visitor's name and CSRF token, so its key also holds the
    session and the CSRF cookie (hashed): a reload by the same browser is served
    the stored page; nobody else ever is. A page that showed flash messages, or
    that made a new CSRF secret, is not stored (the next load must not repeat
    the message, and the token's cookie goes out with this response only; Django
    re-sends a known CSRF cookie with every page only to renew its year-long expiry,
    which a stored page skips).
    """
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        response = cached_for_session(request, *args, **kwargs)
        # One member's page: a shared cache (a proxy, a CDN) must never keep it for anyone else.
        patch_cache_control(response, private=True)
        return response

    def cached_for_session(request, *args, **kwargs):
        seconds = settings.TRACECUP_PAGE_CACHE_SECONDS
        session = request.session.session_key
        if seconds <= 0 or request.method != "GET" or not session or "messages" in request.COOKIES:
            return view(request, *args, **kwargs)
        who = hashlib.sha256(f"{session}:{request.COOKIES.get(settings.CSRF_COOKIE_NAME, '')}".encode()).hexdigest()
        key = (f"session-page:{who}:{_state(seconds)}:{translation.get_language()}:"
               f"{page_address(request)}")
        stored = cache.get(key)
        if stored is not None:
            response = HttpResponse(stored["content"], content_type=stored["content_type"])
            response["X-Page-Cache"] = "hit"
            return response
        response = view(request, *args, **kwargs)
        # A CSRF secret made by this request (the browser had none) goes out in this response's cookie only.
        csrf_secret = request.COOKIES.get(settings.CSRF_COOKIE_NAME)
        new_secret = "CSRF_COOKIE" in request.META and request.META["CSRF_COOKIE"] != csrf_secret
        if (_storable(response) and not response.cookies and not new_secret
                and b'class="messages"' not in response.content):
            cache.set(key, {"content": response.content, "content_type": response["Content-Type"]}, seconds)
            response["X-Page-Cache"] = "miss"
        return response
    return wrapper


#: Cache entry counting the changes of the contest app's rows (part of every page's key).
VERSION_KEY = "page-cache-version"


def bump(**_signal) -> None:
    """A row of the contest app was saved or deleted: every stored public page is outdated."""
    if not cache.add(VERSION_KEY, 1, None):
        try:
            cache.incr(VERSION_KEY)
        except ValueError:  # evicted between add and incr
            cache.set(VERSION_KEY, 1, None)
