"""The console's audit list names each action in the reader's language ("final set chosen", 「…」), not by
the stored name (``select_anonymized``): every action the code records has its label in
``contest.services.audit.ACTION_LABELS``, and every label has its Japanese."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.test import Client
from django.utils import translation

from contest.services import audit
from tests.contest.conftest import user

ROOT = Path(__file__).resolve().parents[2]


def recorded_actions() -> set[str]:
    """Every action name the shipped code passes to ``audit.record`` as a literal."""
    found = set()
    for path in (ROOT / "contest").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "record"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.add(node.args[0].value)
    return found


def test_every_recorded_action_has_a_label():
    actions = recorded_actions()
    assert len(actions) > 25, "the scan finds the code's audit.record calls"
    assert not actions - set(audit.ACTION_LABELS), sorted(actions - set(audit.ACTION_LABELS))


def test_every_label_has_its_japanese():
    with translation.override("ja"):
        untranslated = [a for a, label in audit.ACTION_LABELS.items() if str(label).isascii()]
    assert not untranslated, untranslated


def test_an_unknown_action_shows_as_stored():
    assert audit.action_label("some_new_action") == "some_new_action"


@pytest.mark.django_db
def test_the_console_lists_actions_by_label_in_the_page_language(generated):
    audit.record("select_anonymized", contest=generated, actor=user("alpha1"))
    for language in ("en", "ja"):
        client = Client(HTTP_ACCEPT_LANGUAGE=language)
        client.force_login(user("judge"))
        page = client.get(f"/console/{generated.slug}/").content.decode()
        log = page[page.index('id="audit"'):]
        with translation.override(language):
            label = str(audit.ACTION_LABELS["select_anonymized"])
        assert label in log and "select_anonymized" not in log, log[:400]
        if language == "ja":  # the phase buttons' words for a screen reader, in the page language too
            assert 'visually-hidden"> 匿名化フェーズ' in page and 'visually-hidden"> anonymization' not in page


@pytest.mark.django_db
def test_the_console_names_the_contest_an_entry_is_about(generated):
    """"contest created · organizer · Contest 2" named the contest by its id: it reads its name."""
    audit.record("create_contest", contest=generated, actor=user("judge"), obj=generated, slug=generated.slug)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user("judge"))
    page = client.get(f"/console/{generated.slug}/").content.decode()
    log = page[page.index('id="audit"'):page.index("</section>", page.index('id="audit"'))]
    assert f"Contest {generated.pk}<" not in log and f"Contest {generated.pk} " not in log, log
    assert generated.name in log, log
