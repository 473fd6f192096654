"""Login lockouts (django-axes): whose address a login comes from, and the answer once it is locked out.

The policy: after ``AXES_FAILURE_LIMIT`` wrong passwords for one username from one client address, that
pair is refused for ``AXES_COOLOFF_TIME`` (the right password included); the same user from another
address is not. The client address is :func:`client_address`: behind the project's nginx
(``TRACECUP_TRUSTED_PROXY=1``, docker-compose) the ``X-Real-IP`` it sets, otherwise the socket's peer.
Without the trusted proxy the header is ignored, since any client could send one.

The same limits hold for the account forms that are not a login (password reset and change).
"""
from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.cache import cache
from django.http import JsonResponse
from django.shortcuts import render

from contest.api.errors import error_body


def client_address(request) -> str:
    """The login's client address for the lockout (module docstring): nginx's ``X-Real-IP`` when
    ``TRACECUP_TRUSTED_PROXY`` is on and the header is there, else ``REMOTE_ADDR``."""
    if settings.TRACECUP_TRUSTED_PROXY:
        forwarded = request.META.get("HTTP_X_REAL_IP", "").strip()
        if forwarded:
            return forwarded[:45]  # the longest IPv6 text
    return request.META.get("REMOTE_ADDR", "")


def lockout_response(request, original_response=None, credentials=None):
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("locked_out", f"too many failed logins for this username from this "
                                                     f"address; try again in {minutes} minutes"), status=429)
    return render(request, "web/locked_out.html", {"cooloff_minutes": minutes}, status=429)


def throttled(request, scope: str, key: str = "") -> bool:
    """Count one attempt of ``scope`` (``"password_reset"``, ``"password_change"``) for ``key`` (an address
    asked for, a username) from this client (:func:`client_address`, as the login lockout keys it); True
    once the attempts pass the login's limits (``AXES_FAILURE_LIMIT`` within ``AXES_COOLOFF_TIME``). The
    count lives in Django's cache (shared between web processes with ``CACHE_URL``).

    The count is per client and account: behind nginx the socket's peer is nginx for everyone, so a count
    keyed on it let five requests from anyone block an account's reset for everyone, its owner included."""
    who = hashlib.sha256(f"{scope}|{client_address(request)}|{key.lower()}".encode()).hexdigest()
    name = f"tracecup:throttle:{who}"
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    cache.add(name, 0, seconds)
    try:
        count = cache.incr(name)
    except ValueError:  # expired between add and incr
        cache.set(name, 1, seconds)
        count = 1
    return count > settings.AXES_FAILURE_LIMIT


def throttled_response(request):
    """The 429 page of a throttled account form, in the page's language."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(request, "web/throttled.html", {"cooloff_minutes": minutes}, status=429)
