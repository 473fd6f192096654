"""One check of contest parameters (issue 11 item 5) for the contest file, the API and the console form:
each bad value refused with its field's name, nothing created; an open phase without data says so."""
from __future__ import annotations

import pytest
import yaml
from django.test import Client
from rest_framework.test import APIClient

from contest.models import Contest
from contest.services import parameters
from contest.services.setup import SetupError, create_contest, create_contest_from_yaml
from tests.contest.conftest import contest_spec, user
from tests.web.test_pages import _console_form

pytestmark = pytest.mark.django_db

BAD = [
    ("users_per_set", "abc", "an integer in [1, 100000]"),
    ("users_per_set", 999_999, "an integer in [1, 100000]"),
    ("s_req", 1.5, "a number in [0, 1]"),
    ("lambda_u", 0, "a number in (0, 1000]"),
    ("anonymized_upload_limit", 0, "an integer in [1, 1000]"),
    ("synthesizer_params", {"K": "abc"}, "synthesizer_params.K: expected an integer in [1, 256]"),
    ("synthesizer_params", {"K": 999_999}, "synthesizer_params.K: expected an integer in [1, 256]"),
    ("time_zone", "Mars/Olympus", "an IANA time zone"),
    ("judge_attacks", ["I9-magic"], "the registry's attack names"),
    ("colour", "blue", "unknown key 'colour'; the known keys are grid_nx"),
]


@pytest.mark.parametrize("field, value, expected", BAD)
def test_the_contest_file_refuses_with_the_field(field, value, expected):
    text = yaml.safe_dump(contest_spec(slug="bad", extra={field: value}))
    with pytest.raises(SetupError, match=rf"contest\.parameters\.{field}"):
        create_contest_from_yaml(text)
    with pytest.raises(SetupError) as exc:
        create_contest(contest_spec(slug="bad", extra={field: value}))
    assert expected in str(exc.value) and not Contest.objects.exists()


@pytest.mark.parametrize("field, value, expected", BAD[:6])
def test_the_api_refuses_the_same_way(field, value, expected):
    create_contest(contest_spec(slug="ok"))  # makes the organizer "judge"
    staff = user("judge")
    staff.is_staff = True
    staff.save()
    api = APIClient()
    api.force_authenticate(staff)
    r = api.post("/api/contests/", {"yaml": yaml.safe_dump(contest_spec(slug="bad", extra={field: value}))},
                 format="json")
    assert r.status_code == 400 and f"contest.parameters.{field}" in r.json()["error"]["message"]
    assert expected in r.json()["error"]["message"] and not Contest.objects.filter(slug="bad").exists()


def test_the_console_form_uses_the_same_check():
    from django.contrib.auth import get_user_model
    get_user_model().objects.create_user("boss", password="x-very-long-pass", is_staff=True)
    boss = Client()
    boss.force_login(get_user_model().objects.get(username="boss"))
    page = boss.post("/console/", _console_form(**{"c-name": "X", "c-slug": "x", "c-synthesizer": "ppmtf",
                                                    "c-synthesizer_params": '{"K": 999999}'})).content.decode()
    assert "synthesizer_params.K: expected an integer in [1, 256], got 999999" in page
    page = boss.post("/console/", _console_form(**{"c-name": "X", "c-slug": "x", "c-slots_per_day": 40,
                                                    "c-synthesizer": "ppmtf"})).content.decode()
    assert "slots that end within the day" in page and not Contest.objects.exists()


def test_rules_between_parameters():
    found = {f for f, _v, _e in parameters.problems({"grid_min_x": 140.0, "grid_max_x": 139.0,
                                                      "hospitals": [1, 5000], "slots_per_day": 48})}
    assert found == {"grid_max_x", "hospitals", "slots_per_day"}
    assert parameters.problems({}) == []


def test_an_open_phase_without_data_is_not_announced_as_open(settings):
    settings.TRACECUP_PAGE_CACHE_SECONDS = 0  # the rounds are bulk-updated below, which no page cache key sees
    contest = create_contest(contest_spec(slug="nodata"))
    page = Client().get("/").content.decode()
    assert "waiting for the data" in page and "Anonymization phase is open" not in page
    contest.rounds.update(generated_at="2026-01-01T00:00Z")
    assert "waiting for the data" not in Client().get("/").content.decode()


@pytest.mark.django_db
def test_a_contests_grid_is_one_shared_object_per_set_of_parameters(make_contest):
    """Its distance matrix (8 MB, 11 ms) is built once per process, not at every ``grid()`` call; a
    contest with other parameters has its own grid, and a changed parameter is seen at once."""
    a = make_contest(slug="g1")
    b = make_contest(slug="g2")
    assert a.grid() is a.grid() is b.grid()
    assert a.grid().distance is b.grid().distance
    b.grid_nx = a.grid_nx * 2
    assert b.grid() is not a.grid() and b.grid().nx == a.grid_nx * 2 and b.grid().M == 2 * a.grid().M
