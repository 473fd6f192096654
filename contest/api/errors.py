"""Errors as JSON: ``{"error": {"code", "message", "issues": [{line, column, value, message}]}}``."""
from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_handler

from contest.services.setup import SetupError
from contest.services.uploads import RuleViolation


def error_response(code: str, message: str, http_status: int, issues=None, **extra) -> Response:
    body = {"code": code, "message": message, "issues": issues or []}
    body.update(extra)
    return Response({"error": body}, status=http_status)


def exception_handler(exc, context):
    if isinstance(exc, RuleViolation):
        code = {403: "forbidden", 413: "too_large", 429: "limit_reached", 400: "bad_request"}.get(exc.status, "rule_violation")
        return error_response(code, str(exc), exc.status, exc.issues)
    if isinstance(exc, SetupError):
        return error_response("invalid_contest_file", str(exc), status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    if isinstance(exc, exceptions.APIException):
        message = detail.get("detail") if isinstance(detail, dict) and "detail" in detail else str(exc.detail)
        issues = [] if isinstance(detail, dict) and "detail" in detail else detail
        response.data = {"error": {"code": exc.default_code if hasattr(exc, "default_code") else "error",
                                   "message": str(message), "issues": issues}}
    return response
