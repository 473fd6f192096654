"""The hard cap on a request's size, before a view or a parser reads the body.

A team's upload may be at most ``TRACECUP_MAX_REQUEST_BYTES`` (default: the
largest upload any contest allows, 200 MB, plus room for the form's other
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
from django.http import HttpResponse, JsonResponse

from contest.api.errors import error_body


class RequestTooLarge(RequestDataTooBig):
    """The request body passed the hard cap while it was being read."""


def _too_large(request) -> HttpResponse:
    limit = settings.TRACECUP_MAX_REQUEST_BYTES
    message = (f"the request is larger than the limit of {limit:,} bytes; an upload may be at most "
               f"{limit:,} bytes (compress the CSV as .gz or .zip)")
    if request.path.startswith("/api/") or "json" in request.headers.get("Accept", ""):
        return JsonResponse(error_body("request_too_large", message), status=413)
    return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")


class RequestSizeLimitMiddleware:
    """413 for a request whose declared or streamed body passes ``TRACECUP_MAX_REQUEST_BYTES``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.TRACECUP_MAX_REQUEST_BYTES:
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
