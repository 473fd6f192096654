"""The hard cap on a request's size, before a view or a parser reads the body.

A team's upload may be at most ``TRACECUP_MAX_REQUEST_BYTES`` (default: the
largest upload any contest allows, 200 MiB, plus room for the form's other
fields). A request that says it is larger (``Content-Length``) is answered
413 at once, its body never read; one that does not say (chunked) is counted
as it streams to a temporary file and stopped at the cap. Files above
``FILE_UPLOAD_MAX_MEMORY_SIZE`` go to a temporary file, never to memory, so
a web worker's memory does not grow with the size of what is posted.
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler
from django.http import JsonResponse
from django.shortcuts import render
from django.utils import translation

from contest.api.errors import error_body
from contest.upload_rule import too_large_message


class RequestTooLarge(RequestDataTooBig):
    """The request body passed the hard cap while it was being read."""


def _too_large(request):
    """413 in the asker's language (this runs before LocaleMiddleware): the API's JSON error shape for
    the API and the page script, the site's error page for a plain form post."""
    with translation.override(translation.get_language_from_request(request)):
        message = too_large_message()
        if request.path.startswith("/api/") or "json" in request.headers.get("Accept", ""):
            return JsonResponse(error_body("request_too_large", message), status=413)
        return render(request, "413.html", {"message": message}, status=413)


class RequestSizeLimitMiddleware:
    """413 for a request whose declared or streamed body passes ``TRACECUP_MAX_REQUEST_BYTES``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        # Over the cap by its declared length, or by nginx's count (the front sends the headers of a request it
        # refused on with this mark and without the body, so the answer is the site's own, see deploy/nginx.conf.template)
        if declared > settings.TRACECUP_MAX_REQUEST_BYTES or request.META.get("HTTP_X_TRACECUP_OVER_CAP"):
            return _too_large(request)
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, RequestTooLarge):
            return _too_large(request)
        return None


class CappedUploadHandler(FileUploadHandler):
    """Counts the bytes of every file of a request and stops the request past the cap (chunked bodies)."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.TRACECUP_MAX_REQUEST_BYTES:
            raise RequestTooLarge(f"upload passed {settings.TRACECUP_MAX_REQUEST_BYTES} bytes")
        return raw_data

    def file_complete(self, file_size):
        return None
