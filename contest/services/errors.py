"""The one base of every error a service raises: :class:`ServiceError`, with its API code and HTTP status.

A service refuses an operation by raising a subclass; the subclass states once what the refusal is
(``code``, the API's error code) and how the API answers it (``status``), so the API's exception handler
answers any of them from these attributes alone (it imports no service), and the pages show any of them
the same way (:func:`contest.web.common.refusal`). ``issues`` lists field problems
(``[{"field", "message"}]``) when a service has them; it is empty otherwise.

This module imports nothing of the project, so every service can import it.
"""
from __future__ import annotations


class ServiceError(Exception):
    """An operation a service refuses or could not finish; ``str()`` says why, as a person reads it."""

    #: The API's error code (``{"error": {"code": ...}}``).
    code = "service_error"
    #: The HTTP status the API answers with.
    status = 400

    def __init__(self, message: str = "", *, issues=None):
        super().__init__(message)
        self.issues = list(issues or [])
