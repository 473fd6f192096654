"""Results per round (issue 11 item 2): a round not played yet is never shown as zeros; standings are
provisional until the last round is published and final after; the total says which rounds it covers."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from contest.models import Dataset, Phase, PublicSet, ResultsSnapshot
from contest.services import generation, judge, results, uploads
from contest.services.setup import create_contest
from tests.contest.conftest import anonymize_csv, contest_spec, move_phase, user

pytestmark = pytest.mark.django_db


def two_rounds():
    spec = contest_spec(slug="two")
    first = spec["rounds"][0]
    first.pop("weight")
    first["name"] = "Preliminary"
    second = {**first, "number": 2, "name": "Final", "phases": {
        "anonymization": {"opens": "now+72h", "closes": "now+96h"}, "attack": {"opens": "now+96h", "closes": "now+120h"}}}
    spec["rounds"] = [first, second]
    return create_contest(spec)


def play(rnd, capture):
    """Generate the round's data, have every team upload both sets, close the anonymization phase."""
    generation.generate_round_data(rnd)
    move_phase(rnd, Phase.ANONYMIZATION, -1, 24)  # open now (round 2's would open in three days)
    with capture(execute=True):
        for ds in Dataset.objects.filter(round=rnd, kind=Dataset.TEAM):
            uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds,
                                          content=anonymize_csv(ds, "A3-kRR", seed=ds.number), name="a.csv")
    with capture(execute=True):
        judge.close_phase_now(rnd.phases.get(kind=Phase.ANONYMIZATION), user=user("judge"))
    assert PublicSet.objects.filter(dataset__round=rnd).exists()


def close_attack_phase(rnd, capture):
    """The organizer closes the round's attack phase (its results job runs, still embargoed)."""
    with capture(execute=True):
        judge.close_phase_now(rnd.phases.get(kind=Phase.ATTACK), user=user("judge"))


def judge_api():
    api = APIClient()
    api.force_authenticate(user("judge"))
    return api


@pytest.mark.slow
def test_round_one_published_is_provisional_and_round_two_not_played(django_capture_on_commit_callbacks):
    contest = two_rounds()
    r1, r2 = contest.rounds.order_by("number")
    api = judge_api()
    r = api.post(f"/api/contests/{contest.slug}/publish/", {}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_publishable"
    play(r1, django_capture_on_commit_callbacks)
    r = api.post(f"/api/contests/{contest.slug}/publish/", {"round": 2}, format="json")
    assert r.status_code == 409 and "Final has not been played yet" in r.json()["error"]["message"]
    # round 1 is played but its attack phase is still to come: its attacks are not counted yet
    r = api.post(f"/api/contests/{contest.slug}/publish/", {"round": 1}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "not_publishable"
    assert "the attack phase of Preliminary has not closed" in r.json()["error"]["message"]
    close_attack_phase(r1, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/contests/{contest.slug}/publish/", {"round": 1}, format="json").status_code == 202
    snap = ResultsSnapshot.objects.get(published=True)
    assert snap.data["round_weights"] == [{"round": 1, "weight": 0.1}]  # round 2 is not counted as zeros
    assert snap.data["standing"]["final"] is False and snap.data["standing"]["through_round"] == 1
    assert [r["included"] for r in snap.data["standing"]["rounds"]] == [True, False]
    r1.refresh_from_db(), r2.refresh_from_db()
    assert r1.results_published_at is not None and r2.results_published_at is None

    public = Client()
    board = public.get(f"/c/{contest.slug}/leaderboard/?round=total").content.decode()
    assert "Provisional standings." in board and "Not played yet: Final" in board
    assert "Weighted total over the rounds played so far" in board
    unplayed = public.get(f"/c/{contest.slug}/leaderboard/?round={r2.number}").content.decode()
    assert 'id="not-played"' in unplayed and "0.0000" not in unplayed
    assert "not played yet" in public.get(f"/c/{contest.slug}/attack-matrix/?round=2").content.decode()
    awards = public.get(f"/c/{contest.slug}/awards/").content.decode()
    assert "Provisional standings." in awards
    api_board = APIClient().get(f"/api/contests/{contest.slug}/leaderboard/").json()
    assert api_board["standing"]["final"] is False

    play(r2, django_capture_on_commit_callbacks)
    close_attack_phase(r2, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/contests/{contest.slug}/publish/", {}, format="json").status_code == 202
    final = results.published_snapshot(contest)
    assert final.data["standing"]["final"] is True
    assert final.data["round_weights"] == [{"round": 1, "weight": 0.1}, {"round": 2, "weight": 0.9}]
    board = public.get(f"/c/{contest.slug}/leaderboard/?round=total").content.decode()
    assert "Final standings." in board and "Provisional" not in board and "not played yet" not in board


@pytest.mark.slow
def test_publishing_a_round_whose_attack_phase_is_open_is_refused_with_the_reason(
        django_capture_on_commit_callbacks):
    """Issue 22: publishing through the last round while its attack phase was open was accepted and
    the leaderboard said "Final standings" with every attacker sum at its maximum. API and console
    refuse it (409 / an error message) and say why and what to do; nothing is published."""
    contest = two_rounds()
    r1, r2 = contest.rounds.order_by("number")
    play(r1, django_capture_on_commit_callbacks)
    close_attack_phase(r1, django_capture_on_commit_callbacks)
    play(r2, django_capture_on_commit_callbacks)
    Phase.objects.filter(round=r2, kind=Phase.ATTACK).update(opens_at=r2.phases.get(kind=Phase.ANONYMIZATION).closes_at)
    api = judge_api()
    for body in ({"round": 2}, {}):
        r = api.post(f"/api/contests/{contest.slug}/publish/", body, format="json")
        assert r.status_code == 409, body
        err = r.json()["error"]
        assert err["code"] == "not_publishable"
        assert "the attack phase of Final has not closed" in err["message"]
        assert "publish through Preliminary (round 1) only" in err["message"]
    console = Client()
    console.force_login(user("judge"))
    page = console.post(f"/console/{contest.slug}/results/publish/", {"round": "2"}, follow=True).content.decode()
    assert "The results were not published: the attack phase of Final has not closed" in page
    assert not ResultsSnapshot.objects.filter(contest=contest, published=True).exists()
    # through round 1 is allowed (provisional), and after the close the final standings are final
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/contests/{contest.slug}/publish/", {"round": 1}, format="json").status_code == 202
    assert results.published_snapshot(contest).data["standing"]["final"] is False
    close_attack_phase(r2, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post(f"/api/contests/{contest.slug}/publish/", {"round": 2}, format="json").status_code == 202
    assert results.published_snapshot(contest).data["standing"]["final"] is True
