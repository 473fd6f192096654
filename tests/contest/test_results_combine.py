"""The results job combines what the per-set jobs stored; it computes nothing a set's job computed (issue 23).

A round is played (uploads, close with its judge attacks and set analyses, a team's attacks); then the
snapshot that combines the stored parts must be exactly (the same SHA-256, the same awards) the snapshot
that recomputes everything: every score re-scored from the files, every set's analyses, baselines and
round figure computed again.
"""
from __future__ import annotations

import numpy as np
import pytest

from contest.models import AnonymizedSet, Dataset, Phase, PublicSet, RoundFigures, Score
from contest.services import analyses, results, round_figures, uploads
from tests.contest.conftest import built_on_generated, move_phase, upload_all_and_close, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def played(request):
    """Round 1 played: the round's figures stored, every team's two sets, the close, two team attacks."""
    return built_on_generated(request, "played", _play)


def _play(generated, capture):
    rnd = generated.rounds.get()
    with capture(execute=True):
        round_figures.request(rnd)          # the generation's last set queues them (outside this test's commit)
    contest = upload_all_and_close(generated, {1: ("A2-MRLH", {"lambda": 0.1}), 2: ("A3-kRR", {"eps": 8.0}),
                                               3: ("A4-PL", {"l": 4.0, "r": 1.0})}, capture)
    rng = np.random.default_rng(7)
    with capture(execute=True):
        for target in PublicSet.objects.filter(dataset__round=rnd, dataset__kind=Dataset.TEAM).exclude(
                dataset__number=1)[:2]:
            guess = rng.permutation(np.arange(1, contest.users_per_set + 1))
            uploads.submit_attack(user=user("alpha1"), attacker=contest.teams.get(number=1), target=target,
                                  kind="etable", content=("user_id\n" + "\n".join(map(str, guess)) + "\n").encode(),
                                  name="etable.csv")
    move_phase(rnd, Phase.ATTACK, -2, -1)
    return contest


@pytest.fixture
def computed(monkeypatch):
    """Counts every computation of a set's analyses, a dataset's baselines and a round figure."""
    calls = []
    for module, name in ((analyses, "compute_set_analyses"), (analyses, "compute_dataset_baselines"),
                         (round_figures, "compute")):
        real = getattr(module, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(module, name, counting)
    return calls


@pytest.mark.slow  # recomputes a played round's results whole: make test runs it, make check does not
def test_the_results_combine_stored_parts_and_equal_a_full_recomputation(played, computed,
                                                                          django_capture_on_commit_callbacks):
    contest = played
    finals = AnonymizedSet.objects.filter(dataset__round__contest=contest, final=True, valid=True)
    assert finals.count() >= 4 and all(a.analyses for a in finals)          # stored by the close's set jobs
    assert all(d.baselines for d in Dataset.objects.filter(round__contest=contest, kind=Dataset.TEAM))  # generation

    combined = results.snapshot(contest)
    assert computed == [], f"the results job computed {computed}"
    assert "error" not in combined.data["analyses"] and combined.data["uncertainty"].get("error") is None

    # Everything again from the files: scores, judge attacks, then every stored part thrown away.
    with django_capture_on_commit_callbacks(execute=True):
        results.rescore(contest)
    assert not Score.objects.filter(dataset__round__contest=contest, current=True,
                                    computed_at__lt=combined.created_at).exists()   # every score row is new
    AnonymizedSet.objects.filter(dataset__round__contest=contest).update(analyses=None)
    Dataset.objects.filter(round__contest=contest).update(baselines=None)
    RoundFigures.objects.filter(round__contest=contest).delete()
    recomputed = results.snapshot(contest, recompute=True)
    assert "compute_set_analyses" in computed and "compute_dataset_baselines" in computed and "compute" in computed

    assert recomputed.data["sets"] == combined.data["sets"]                  # every score and minimum
    assert recomputed.data["leaderboards"] == combined.data["leaderboards"]  # the standings
    assert recomputed.data == combined.data and recomputed.sha256 == combined.sha256
    assert (sorted(recomputed.awards.values_list("award", "team__number", "value"))
            == sorted(combined.awards.values_list("award", "team__number", "value")))
