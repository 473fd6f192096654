"""Round weights follow the 2019 rule where the organizer names none (issue 11 item 3): 0.1 and 0.9."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from contest.services.setup import SetupError, create_contest
from scoring.results import default_round_weight
from tests.contest.conftest import contest_spec, user

pytestmark = pytest.mark.django_db


def two_round_spec(weights=None):
    spec = contest_spec(slug="w")
    first = spec["rounds"][0]
    first.pop("weight")
    second = {**first, "number": 2, "name": "Final", "phases": {
        "anonymization": {"opens": "now+72h", "closes": "now+96h"}, "attack": {"opens": "now+96h", "closes": "now+120h"}}}
    first["name"] = "Preliminary"
    for i, r in enumerate((first, second), 1):
        if i in (weights or {}):
            r["weight"] = weights[i]
    spec["rounds"] = [first, second]
    return spec


def test_the_rule():
    assert [default_round_weight(n, 2) for n in (1, 2)] == [0.1, 0.9]
    assert default_round_weight(1, 1) == 1.0
    assert [default_round_weight(n) for n in (1, 2, 3)] == [0.1, 0.9, 0.9]


def test_a_contest_file_naming_no_weights_gets_the_rules():
    c = create_contest(two_round_spec())
    assert list(c.rounds.values_list("weight", flat=True)) == [0.1, 0.9]
    single = contest_spec(slug="one")
    single["rounds"][0].pop("weight")
    assert create_contest(single).rounds.get().weight == 1.0


@pytest.mark.parametrize("bad", ["abc", 1.5, -0.1])
def test_a_weight_out_of_range_is_refused_with_the_field(bad):
    with pytest.raises(SetupError, match=r"rounds\[1\]\.weight: expected a number in \[0, 1\]"):
        create_contest(two_round_spec({2: bad}))


def test_a_round_added_without_weight_is_a_final_round_and_the_rules_page_states_it():
    c = create_contest(contest_spec(slug="add"))
    api = APIClient()
    api.force_authenticate(user("judge"))
    window = {"anonymization_opens": "2030-01-01T10:00+09:00", "anonymization_closes": "2030-01-10T17:00+09:00",
              "attack_opens": "2030-01-11T10:00+09:00", "attack_closes": "2030-01-20T17:00+09:00"}
    r = api.post(f"/api/contests/{c.slug}/rounds/", {"name": "Final", "ref_days": 2, "org_days": 2, **window},
                 format="json")
    assert r.status_code == 201 and r.json()["weight"] == 0.9
    r = api.post(f"/api/contests/{c.slug}/rounds/", {"name": "X", "weight": 2, **window}, format="json")
    assert r.status_code == 400 and r.json()["error"]["issues"][0]["field"] == "weight"
    page = Client().get(f"/c/{c.slug}/rules/").content.decode()
    assert "weighs the preliminary round 0.1 and the final round 0.9" in page


def test_the_console_offers_the_rules_weights():
    c = create_contest(contest_spec(slug="console"))
    judge = Client()
    judge.force_login(user("judge"))
    home = judge.get("/console/").content.decode()
    assert 'name="r-weight"' in home and 'value="0.1"' in home
    page = judge.get(f"/console/{c.slug}/").content.decode()
    assert 'value="0.9"' in page
