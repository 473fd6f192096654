"""The answer to a locked-out login (django-axes calls :func:`lockout_response`): 429, JSON for the API."""
from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render

from contest.api.errors import error_body


def lockout_response(request, original_response=None, credentials=None):
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("locked_out", f"too many failed logins for this username from this "
                                                     f"address; try again in {minutes} minutes"), status=429)
    return render(request, "web/locked_out.html", {"cooloff_minutes": minutes}, status=429)
