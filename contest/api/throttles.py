"""Request rates of the REST API (DRF's throttling): per client address, per user, and upload bursts.

Three scopes, each a rate of ``settings.TRACECUP_API_THROTTLE_RATES`` (``"120/min"``; None: no limit):

- ``anon``: requests without a user, counted per client address. The address is the one the login
  lockout uses (:func:`contest.lockout.client_address`): behind the project's nginx every request's
  socket peer is nginx, so DRF's own ``REMOTE_ADDR`` count would let one client throttle everybody.
- ``user``: requests of a signed-in user (token or session), counted per user wherever they come from.
- ``uploads``: posts to the upload endpoints (anonymized sets, attacks, training data), counted per user.
  An upload spools up to 200 MB and queues a job, so a script that loops on it is stopped far sooner
  than one that reads; the contest's own upload limits (per phase) still apply to what is stored.

A request past its rate is answered 429 with ``Retry-After`` in the API's error shape
(:func:`contest.api.errors.exception_handler`). The counts live in Django's cache, shared between web
processes with ``CACHE_URL``; a cache that is down counts nothing (``contest.cache`` fails open), so an
outage of Redis never refuses a request.

The rates are read from the settings at each request, not at import as DRF's ``THROTTLE_RATES`` is,
so an operator's environment and a test's ``settings`` both take effect.
"""
from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle


class _SettingsRate(SimpleRateThrottle):
    """A DRF rate throttle whose rate is ``TRACECUP_API_THROTTLE_RATES[scope]`` and whose client address
    is the lockout's."""

    cache_format = "tracecup:api-throttle:%(scope)s:%(ident)s"

    def get_rate(self):
        return settings.TRACECUP_API_THROTTLE_RATES.get(self.scope)

    def get_ident(self, request):
        from contest.lockout import client_address  # local: contest.lockout -> api.errors -> DRF views -> here
        return client_address(request)


class AnonThrottle(_SettingsRate):
    """Requests without a user, per client address."""

    scope = "anon"

    def get_cache_key(self, request, view):
        if request.user and request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class UserThrottle(_SettingsRate):
    """Requests of a signed-in user, per user (anonymous requests are the ``anon`` scope's)."""

    scope = "user"

    def get_cache_key(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}


class UploadBurstThrottle(_SettingsRate):
    """Uploads (posts) of one user, or of one client address without a user; reads are not counted."""

    scope = "uploads"

    def get_cache_key(self, request, view):
        if request.method != "POST":
            return None
        if request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"address-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


#: Every API view's throttles (``REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]``).
DEFAULT = [AnonThrottle, UserThrottle]

#: The upload endpoints' throttles: the default ones and the burst.
UPLOADS = [*DEFAULT, UploadBurstThrottle]
