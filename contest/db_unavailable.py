"""503 with ``Retry-After`` when the database cannot be reached, never a 500.

A dropped connection (a restart, a failover, ``pg_terminate_backend``) fails the request that was using it;
the next request gets a new connection (``CONN_HEALTH_CHECKS``). So the failure is the server's and passes
in seconds: the visitor or the client is told to come back, in the site's page or the API's error shape.
One middleware, :class:`DatabaseUnavailableMiddleware`, near the outside of the stack: it answers for a
view's error, and also for one a middleware raised (the session's, the user's look-up), which Django has
already made into a 500 by then (:func:`_note` records the cause as Django handles it).
"""
from __future__ import annotations

import logging
import sys

from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.utils.html import escape
from django.utils.translation import gettext as _

from contest.api.errors import error_body

log = logging.getLogger(__name__)

#: What a failed connection raises (Django's wrappers of the driver's errors).
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)

#: Seconds a client is asked to wait: a new connection is opened at the next request.
RETRY_AFTER_SECONDS = 5


def unavailable_response(request, exc: BaseException) -> HttpResponse:
    """The 503 answer: the API's JSON error under /api/, a small page elsewhere (rendered without a
    template, whose context would ask the database again), with ``Retry-After``."""
    log.warning("the database could not be reached for %s %s (%s): answered 503", request.method, request.path, exc)
    message = _("The database could not be reached; try again in a few seconds.")
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body("database_unavailable", message), status=503)
    else:
        title = escape(_("Temporarily unavailable"))
        response = HttpResponse(f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>"
                                f"<body><h1>{title}</h1><p>{escape(message)}</p></body></html>", status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _note(sender, request=None, **kwargs) -> None:
    """Mark the request whose unhandled exception (Django sends this while handling it) is a lost connection."""
    exc = sys.exc_info()[1]
    if request is not None and isinstance(exc, DATABASE_UNAVAILABLE):
        request.database_unavailable = exc


got_request_exception.connect(_note, dispatch_uid="contest.db_unavailable")


class DatabaseUnavailableMiddleware:
    """Turn a request's database connection error into :func:`unavailable_response`: a view's (or its
    template's) at once, a middleware's in place of the 500 Django answered for it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        exc = getattr(request, "database_unavailable", None)
        if exc is not None and response.status_code == 500:
            return unavailable_response(request, exc)
        return response

    def process_exception(self, request, exc):
        if isinstance(exc, DATABASE_UNAVAILABLE):
            return unavailable_response(request, exc)
        return None
