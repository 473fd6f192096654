"""Errors as JSON: ``{"error": {"code", "message", "issues": [{line, column, value, message}]}}``.

Messages are in the request's language (``Accept-Language``, else the language cookie; Django's
``LocaleMiddleware`` activates it for the API as for the pages): a service's refusal is made in the
active language, DRF's own messages come from its catalog, and a reason marked with ``gettext_noop``
(``contest.permissions``) or written in English by a view is looked up in the site's catalog here.
"""
from __future__ import annotations

import math

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, JsonResponse
from django.utils.translation import gettext as _
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from contest.services.errors import ServiceError


def error_body(code: str, message: str, issues=None, **extra) -> dict:
    """The API's one error shape; also what the middleware (request too large, login locked out) answers."""
    body = {"code": code, "message": message, "issues": issues or []}
    body.update(extra)
    return {"error": body}


def error_response(code: str, message: str, http_status: int, issues=None, **extra) -> Response:
    return Response(error_body(code, message, issues, **extra), status=http_status)


def exception_handler(exc, context):
    if isinstance(exc, ServiceError):  # a service's refusal states its own code and status
        return error_response(exc.code, looked_up(str(exc)), exc.status, translated(exc.issues))
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, exceptions.Throttled):
        return throttled_response(exc)
    response = drf_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    if isinstance(exc, exceptions.APIException):
        if isinstance(detail, dict) and "detail" in detail:
            message, issues = looked_up(str(detail["detail"])), []
        else:  # a serializer's field errors: one issue per message, and a readable summary
            issues = field_issues(detail)
            message = "; ".join(f"{i['field']}: {i['message']}" if i["field"] else i["message"] for i in issues)
        response.data = {"error": {"code": exc.default_code if hasattr(exc, "default_code") else "error",
                                   "message": message, "issues": issues}}
    return response


def throttled_response(exc: exceptions.Throttled) -> Response:
    """429 of a request past its rate (``contest.api.throttles``): ``Retry-After`` in whole seconds (at
    least 1, so a client that waits as told is answered), and the same figure in the body for scripts
    that read only JSON."""
    seconds = max(1, math.ceil(exc.wait or 1))
    response = error_response("throttled", _("too many requests; try again in %(seconds)s seconds") % {
                                  "seconds": seconds},
                              status.HTTP_429_TOO_MANY_REQUESTS, retry_after=seconds)
    response["Retry-After"] = str(seconds)
    return response


def field_issues(detail, field: str = "") -> list[dict]:
    """DRF's nested error detail as ``[{"field", "message"}]`` (dotted field path; "" for the whole request)."""
    if isinstance(detail, dict):
        out = []
        for key, value in detail.items():
            name = "" if key == "non_field_errors" else str(key)
            out += field_issues(value, ".".join(p for p in (field, name) if p))
        return out
    if isinstance(detail, (list, tuple)):
        return [i for value in detail for i in field_issues(value, field)]
    return [{"field": field, "message": looked_up(str(detail))}]


def looked_up(text: str) -> str:
    """``text`` from the active language's catalog when it is there (English otherwise); "" stays ""
    (gettext of "" is the catalog's header)."""
    return _(text) if text else text


def translated(issues: list) -> list:
    """A service's field problems with their messages looked up in the active language's catalog."""
    return [{**i, "message": looked_up(str(i["message"]))} if isinstance(i, dict) and "message" in i else i for i in issues]


@csrf_exempt
def not_found(request, rest: str = ""):
    """Any address under /api/ that no endpoint has: the JSON error shape (a route, so DEBUG does not
    swap in Django's HTML debug page)."""
    return JsonResponse(error_body("not_found", _("no API endpoint at %(path)s (the endpoints are listed at "
                                                  "/api/docs/; their addresses end with a slash)") % {
                                       "path": request.path}), status=404)


def server_error(request):
    """The site's 500 (``handler500``): the JSON error shape under /api/, the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("server_error", _("the server failed to answer this request; the "
                                                         "organizers can see the details in the log")), status=500)
    return defaults.server_error(request)
