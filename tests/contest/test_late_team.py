"""A team approved after a round's data was generated (issue 25 item 6).

It used to get the next free team number, which was the benchmark's (tau+1), and every results
snapshot and publish then failed with "benchmark team 4 is also listed as a participating team".
Now it is numbered past every set of the contest, is told it has no data in the generated round,
and gets data from the next round generated, with the benchmark and samples keeping their numbers.
"""
from __future__ import annotations

import copy

import pytest
from django.test import Client

from contest.models import Dataset
from contest.services import generation, results, teams
from contest.services.setup import create_contest
from tests.contest.conftest import contest_spec, user

pytestmark = pytest.mark.django_db


def two_round_contest():
    spec = contest_spec(slug="late")
    second = copy.deepcopy(spec["rounds"][0])
    second.update(number=2, name="Second")
    spec["rounds"].append(second)
    return create_contest(spec)


@pytest.mark.slow
def test_a_team_approved_after_generation_breaks_nothing_and_gets_data_next_round():
    contest = two_round_contest()
    first, second = contest.rounds.order_by("number")
    generation.generate_round_data(first)
    assert set(Dataset.objects.filter(round=first, kind=Dataset.BENCHMARK).values_list("number", flat=True)) == {4}

    late = teams.add_team(contest, "Delta")
    assert late.number == 7  # past the benchmark (4) and the samples (5, 6) of round 1
    from django.contrib.auth import get_user_model
    member = get_user_model().objects.create_user("delta1", password="pw")
    late.memberships.create(user=member)

    res = results.compute(contest, [1])  # raised "benchmark team 4 is also listed ..." before
    assert 7 in res.teams and 4 not in res.teams
    results.snapshot(contest)

    page = Client()
    page.force_login(user("delta1"))
    body = page.get(f"/c/{contest.slug}/team/?round=1").content.decode()
    assert "joined after this round's data was generated" in body

    generation.generate_round_data(second)
    sets = {(d.number, d.challenge): d for d in Dataset.objects.filter(round=second)}
    assert sorted({n for n, _ in sets}) == [1, 2, 3, 4, 5, 6, 7]
    assert sets[(4, 1)].kind == Dataset.BENCHMARK and sets[(5, 1)].kind == sets[(6, 2)].kind == Dataset.SAMPLE
    assert sets[(7, 1)].team == late and sets[(7, 2)].original.name.startswith("orgtraces_team007_data02")
    assert sets[(3, 1)].team.name == "Gamma"
    assert len({d.original.sha256 for d in sets.values()}) == len(sets)  # no set written twice
    results.compute(contest, [1, 2])
    body = page.get(f"/c/{contest.slug}/team/?round=2").content.decode()
    assert "orgtraces_team007_data01" in body


def test_set_numbers_is_the_identity_for_an_unchanged_contest(make_contest):
    contest = make_contest()
    assert generation.set_numbers(contest, [1, 2, 3]) == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6}
