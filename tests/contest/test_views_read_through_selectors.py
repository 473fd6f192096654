"""Views read through ``contest.selectors`` and ask ``contest.services.schedule`` or ``contest.permissions`` for
rules: a view module that calls a model's manager (``Model.objects``) directly fails here.

A view looks one object up with ``get_object_or_404(selectors.phases(), pk=...)``: the selector names the
rows and what comes with them, the view only picks one. Passing a model class to ``get_object_or_404``
(``get_object_or_404(Contest, slug=slug)``) is a lookup by key with nothing attached, and is left alone.
"""
from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path

from django.urls import URLResolver, get_resolver
from django.utils import timezone

from contest.models import Phase
from contest.services import schedule

ROOT = Path(__file__).resolve().parents[2]

#: The view modules that read only through selectors.
THROUGH_SELECTORS = ("contest/api/views.py", "contest/web/console.py", "contest/web/team.py", "contest/web/system.py",
                     "contest/web/views.py", "contest/web/accounts.py", "contest/web/two_factor.py",
                     "contest/web/analyses.py")

#: View modules not moved yet, with how many manager calls each still makes: the count may only go down
#: (lower it here when one moves; the module joins THROUGH_SELECTORS at 0).
NOT_YET: dict[str, int] = {}

#: View modules whose reads are their answer, with how many: the Prometheus collector's queries are the
#: metrics themselves (as ``contest/system/overview.py``'s are the System page's figures).
OWN_READS = {"contest/system/metrics.py": 4}


def manager_calls(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every ``<something>.objects`` in ``source``."""
    return [(node.lineno, ast.unparse(node)) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr == "objects"]


def test_views_call_no_model_manager():
    calls = {rel: manager_calls((ROOT / rel).read_text()) for rel in THROUGH_SELECTORS}
    strays = [f"{rel}:{line}: {expr}" for rel, found in calls.items() for line, expr in found]
    assert not strays, f"read these through contest.selectors: {strays}"


def test_the_views_not_moved_yet_read_no_more_than_before():
    for rel, most in {**NOT_YET, **OWN_READS}.items():
        assert len(manager_calls((ROOT / rel).read_text())) <= most, rel


def view_modules() -> set[str]:
    """The project's modules that the URLconfs route a request to (``contest/web/team.py``, ...)."""
    found, todo = set(), list(get_resolver().url_patterns)
    while todo:
        pattern = todo.pop()
        if isinstance(pattern, URLResolver):
            todo.extend(pattern.url_patterns)
            continue
        view = pattern.callback
        module = (getattr(view, "view_class", None) or getattr(view, "cls", None) or view).__module__
        if module.startswith("contest."):
            found.add(module.replace(".", "/") + ".py")
    return found


def test_every_view_module_is_counted():
    """A new view module is checked too: it either reads through selectors or is listed as not moved."""
    views = view_modules()
    assert {"contest/api/views.py", "contest/web/team.py", "contest/web/console.py"} <= views, views
    with_managers = {rel for rel in views if manager_calls((ROOT / rel).read_text())}
    unlisted = with_managers - set(THROUGH_SELECTORS) - set(NOT_YET) - set(OWN_READS)
    assert not unlisted, unlisted


def test_the_check_sees_a_manager_call():
    assert manager_calls("x = Job.objects.filter(kind=k).first()\ny = get_object_or_404(Round, pk=1)\n") == [
        (1, "Job.objects")]


def test_the_console_rules_for_opening_and_closing_a_phase_now():
    now = timezone.now()
    hour = timedelta(hours=1)
    anon_closed = Phase(kind=Phase.ANONYMIZATION, opens_at=now - 3 * hour, closes_at=now - hour, closed_at=now - hour)
    anon_open = Phase(kind=Phase.ANONYMIZATION, opens_at=now - hour, closes_at=now + hour)
    attack_later = Phase(kind=Phase.ATTACK, opens_at=now + hour, closes_at=now + 2 * hour)
    assert schedule.can_close_now(anon_open, now) and not schedule.can_close_now(anon_closed, now)
    assert not schedule.can_close_now(attack_later, now)  # never a phase that has not opened
    assert schedule.can_open_now(attack_later, anon_closed, now)
    assert not schedule.can_open_now(attack_later, anon_open, now)  # its sets are not pseudonymized yet
    assert not schedule.can_open_now(attack_later, None, now)
    assert not schedule.can_open_now(anon_open, anon_closed, now)  # only an attack phase opens early
    attack_open = Phase(kind=Phase.ATTACK, opens_at=now - hour, closes_at=now + hour)
    assert not schedule.can_open_now(attack_open, anon_closed, now)
