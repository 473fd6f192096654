"""Whole public pages cached for visitors who are not logged in (issue 14: pages under load).

A published contest's public pages (home, overview, rules, leaderboards,
attack matrix, awards, plots, analyses) are read by many anonymous visitors
and change rarely. For a request that carries no session and no flash
messages, the rendered page (body and headers, CSP included) is kept in
Django's cache and served without running the view or the inner middleware:
about a millisecond instead of tens.

The key holds the path and query, the page language (as LocaleMiddleware
picks it), a version bumped by every saved or deleted row of the contest app
(signals; seen by every process when the cache is shared, ``CACHE_URL``, e.g.
Redis), the newest audit-log entry (what the workers change is audited:
publishing, phase changes, pseudonymization, uploads; seen by every web process
even with per-process caches) and a time bucket of
``TRACECUP_PAGE_CACHE_SECONDS``: what the clock changes (a phase opening at
its time) or a bulk update elsewhere shows within it, 10 s by default. A page that sets a cookie (a CSRF token, a
session) is never stored, so no visitor is served another's token; the
header's language switcher is a GET form for that reason.
"""
from __future__ import annotations

import re
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from django.utils import translation

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
        response = self.get_response(request)
        if (response.status_code == 200 and not response.streaming and not response.cookies
                and response.get("Content-Type", "").startswith("text/html")):
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
        version = cache.get(VERSION_KEY, 0)
        newest = AuditLog.objects.order_by("-id").values_list("id", flat=True).first() or 0
        language = translation.get_language_from_request(request)
        return f"page:{version}:{newest}:{int(time.time() // seconds)}:{language}:{request.get_full_path()}"


#: Cache entry counting the changes of the contest app's rows (part of every page's key).
VERSION_KEY = "page-cache-version"


def bump(**_signal) -> None:
    """A row of the contest app was saved or deleted: every stored public page is outdated."""
    if not cache.add(VERSION_KEY, 1, None):
        try:
            cache.incr(VERSION_KEY)
        except ValueError:  # evicted between add and incr
            cache.set(VERSION_KEY, 1, None)
