"""The attack form's title ("Attack 002 Beta · IDP") stands on a line of its own, apart from the kind's label
(at 390 px the two ran together as "Attack 002 Beta · IDP Attack"), and that label says "Kind"."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.contest.conftest import move_phase
from tests.web.test_pages import closed  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

CSS = Path(__file__).resolve().parents[2] / "static" / "css" / "tracecup.css"


def test_the_attack_forms_title_is_apart_from_the_kinds_label(closed, client_for):
    move_phase(closed.rounds.get(), "attack", -1, 24)
    page = client_for("alpha1").get(f"/c/{closed.slug}/team/").content.decode()
    forms = re.findall(r'<form[^>]*class="attack-form".*?</form>', page, re.S)
    assert forms, "an attack form on the team page"
    for form in forms:
        title = re.search(r'<p class="attack-title small"><strong>(Attack [^<]+)</strong></p>\s*<label for="[^"]+">'
                          r"([^<]+)</label>", form)
        assert title, form[:800]
        assert title.group(2) == "Kind", title.groups()
    assert re.search(r"\.attack-form \.attack-title \{[^}]*flex-basis: 100%", CSS.read_text())
