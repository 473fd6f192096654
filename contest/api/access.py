"""The API's default permission: deny.

Who may do what is decided in :mod:`contest.permissions` alone; every API view names its DRF
permission (``permission_classes``: ``AllowAny`` where the view asks ``contest.permissions`` about
the object itself, ``IsAuthenticated``, or the organizer check). A view that names none -- a new
one someone forgot -- falls back to this class and answers 403 to everybody, superusers too, until
it says who may use it (``tests/contest/test_api_permissions_named.py`` fails on it first).
"""
from __future__ import annotations

from rest_framework.permissions import BasePermission


class DenyUnlessNamed(BasePermission):
    """``REST_FRAMEWORK["DEFAULT_PERMISSION_CLASSES"]``: refuses every request."""

    message = "this API view names no permission: refused until it does"

    def has_permission(self, request, view) -> bool:
        return False
