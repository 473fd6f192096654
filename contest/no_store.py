"""``Cache-Control: no-store`` on every answer that may carry a secret, so that no browser's disk, proxy or
CDN keeps a team's original traces, an ID table, an invitation code or an API token.

Which answers: those :func:`contest.permissions.answer_is_public` says are not public (made for a
signed-in user, by session or API token, or answering a write). The middleware sits after Django's
authentication; an API view's token user is seen too, as DRF sets it on the request it wraps. Answers
made before it (static files, public pages served from the page cache) are public by construction.
"""
from __future__ import annotations

from django.utils.cache import add_never_cache_headers

from contest import permissions


class NoStoreMiddleware:
    """Mark the answers :func:`contest.permissions.answer_is_public` does not call public as never to be kept."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not permissions.answer_is_public(getattr(request, "user", None), request.method):
            add_never_cache_headers(response)
        return response
