"""One error base for the services: every error a service declares derives from ``ServiceError``, which
states its API code and HTTP status; the API's handler answers any of them from those attributes alone
(it imports no service), and the pages show any of them through one helper (``common.Refusal``).

These tests fail when an error class is declared a second way: a service exception outside the base, a
handler that learns a service's class again, a page that catches a service's own class where the helper
would do."""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.test import RequestFactory

import contest.services
from contest.api.errors import exception_handler
from contest.services.errors import ServiceError

ROOT = Path(__file__).resolve().parents[2]


def _service_modules():
    return [importlib.import_module(f"contest.services.{info.name}")
            for info in pkgutil.iter_modules(contest.services.__path__)]


def _declared_exceptions() -> list[type]:
    """Every exception class a module of contest/services declares (not the ones it imports)."""
    return [cls for module in _service_modules() for _name, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__]


def test_every_exception_a_service_declares_derives_from_service_error():
    found = _declared_exceptions()
    assert len(found) >= 8, found  # the walk sees the services' errors at all
    strays = [f"{cls.__module__}.{cls.__qualname__}" for cls in found if not issubclass(cls, ServiceError)]
    assert not strays, f"derive these from contest.services.errors.ServiceError: {strays}"


def test_every_service_error_states_a_code_and_an_http_status():
    for cls in set(_declared_exceptions()) - {ServiceError}:
        exc = cls("why") if cls.__name__ != "SetupError" else cls([("contest.slug", "why")])
        assert isinstance(exc.code, str) and exc.code and exc.code != ServiceError.code, cls
        assert isinstance(exc.status, int) and 400 <= exc.status < 600, cls
        assert isinstance(exc.issues, list), cls


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return names


def test_the_api_error_handler_imports_no_service_but_the_error_base():
    services = {n for n in _imported_modules(ROOT / "contest" / "api" / "errors.py")
                if n.startswith("contest.services") and n != "contest.services"}
    assert services <= {"contest.services.errors", "contest.services.errors.ServiceError"}, services


def _refusals():
    from contest.services.announcements import AnnouncementError
    from contest.services.contest_file import SetupError
    from contest.services.results import PublishError
    from contest.services.schedule import ScheduleError
    from contest.services.teams import TeamError
    from contest.services.uploads import LimitReached, NotAllowed, RuleViolation
    return [(RuleViolation("x"), 409, "rule_violation"), (RuleViolation("x", status=400), 400, "bad_request"),
            (RuleViolation("x", status=413), 413, "too_large"), (RuleViolation("x", status=503), 503,
                                                                  "database_unavailable"),
            (NotAllowed("x"), 403, "forbidden"), (LimitReached("x"), 429, "limit_reached"),
            (ScheduleError("x"), 409, "schedule_conflict"), (PublishError("x"), 409, "not_publishable"),
            (AnnouncementError("x"), 400, "invalid"), (TeamError("x"), 400, "invalid"),
            (SetupError("x"), 400, "invalid_contest_file")]


def test_the_api_answers_each_refusal_with_the_code_and_status_it_always_had():
    for exc, status, code in _refusals():
        r = exception_handler(exc, {})
        assert (r.status_code, r.data["error"]["code"]) == (status, code), exc


def test_the_api_answers_any_service_error_from_its_attributes():
    class Invented(ServiceError):
        code, status = "invented", 418

    r = exception_handler(Invented("nothing to brew", issues=[{"field": "pot", "message": "empty"}]), {})
    assert r.status_code == 418
    assert r.data == {"error": {"code": "invented", "message": "nothing to brew",
                                "issues": [{"field": "pot", "message": "empty"}]}}


def test_a_setup_error_keeps_its_field_issues():
    from contest.services.contest_file import SetupError
    r = exception_handler(SetupError([("contest.slug", "taken"), ("", "bad file")]), {})
    assert r.data["error"]["issues"] == [{"field": "contest.slug", "message": "taken"},
                                         {"field": "", "message": "bad file"}]
    assert r.data["error"]["message"] == "contest.slug: taken; bad file"


def _request():
    request = RequestFactory().post("/")
    request.session = {}
    request._messages = FallbackStorage(request)
    return request


def test_a_page_shows_any_service_error_once_and_lets_other_errors_through():
    from contest.web.common import Refusal
    request = _request()
    with Refusal(request, "Not done: %(reason)s.") as refused:
        raise ServiceError("the phase is closed")
    assert str(refused.error) == "the phase is closed"
    with Refusal(request) as plain:
        pass
    assert plain.error is None
    with pytest.raises(KeyError), Refusal(request):
        raise KeyError("a bug is not a refusal")
    assert [m.message for m in get_messages(request)] == ["Not done: the phase is closed."]


#: Pages that catch a service's own error class, each for a reason the shared helper does not cover.
OWN_CATCHES = {
    ("console.py", "SetupError"): "the YAML form lists each of the file's issues as a form error",
    ("views.py", "TeamError"): "joining puts the refusal on the form's invitation code field",
}


def test_pages_catch_service_errors_through_the_one_helper():
    names = {cls.__name__ for cls in _declared_exceptions()} - {"ServiceError"}
    found = set()
    for path in sorted((ROOT / "contest" / "web").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                for name in ast.walk(node.type):
                    caught = name.attr if isinstance(name, ast.Attribute) else getattr(name, "id", None)
                    if caught in names:
                        found.add((path.name, caught))
    assert found <= set(OWN_CATCHES), f"catch ServiceError with contest.web.common.Refusal: {found - set(OWN_CATCHES)}"
