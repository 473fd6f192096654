"""What a second new user still hit (issue 40's second walk): the console's state says finished only when every
round's results are published."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contest.models import Phase, ResultsSnapshot
from tests.conftest import demo_state
from tests.web.test_newcomer_small_things import organizer

pytestmark = pytest.mark.django_db


def test_the_state_is_finished_only_when_every_round_is_published(make_contest):
    from contest.services.setup import add_round
    from contest.web.common import contest_state
    contest = make_contest()
    now = timezone.now()
    Phase.objects.filter(round__contest=contest).update(opens_at=now - timedelta(days=9),
                                                        closes_at=now - timedelta(days=8))
    final = add_round(contest, name="Second", weight=0.9, ref_days=2, org_days=2,
                      phases={"anonymization": (now - timedelta(days=7), now - timedelta(days=6)),
                              "attack": (now - timedelta(days=5), now - timedelta(days=4))})
    # the first round published, the second not (a publish "through round 1")
    ResultsSnapshot.objects.create(contest=contest, data={}, sha256="0" * 64, published=True, published_at=now)
    contest.rounds.filter(number=1).update(results_published_at=now)
    label = contest_state(contest).label
    assert "Finished" not in label and "Second" in label and "to be published" in label, label
    assert label in organizer().get(f"/console/{contest.slug}/").content.decode()
    contest.rounds.filter(pk=final.pk).update(results_published_at=now)
    assert contest_state(contest).label == "Finished: results published"


def test_a_preview_jobs_message_gives_its_minima_as_the_pages_do(monkeypatch):
    from types import SimpleNamespace

    from contest.services import previews
    monkeypatch.setattr(previews, "compute_preview", lambda aset, job=None: SimpleNamespace(
        summary={"s_i_min": 0.123456789, "s_t_min": 0.7000000000000001}))
    assert previews.privacy_preview_job(None, 1) == "preview: s_I,min 0.1235, s_T,min 0.7000"
    monkeypatch.setattr(previews, "compute_preview", lambda aset, job=None: SimpleNamespace(
        summary={"s_i_min": 0.5, "s_t_min": None}))
    assert previews.privacy_preview_job(None, 1) == "preview: s_I,min 0.5000, s_T,min —"


@pytest.mark.slow  # builds the demo contest (about ten seconds) where no other test of the process has
def test_the_demos_final_round_has_the_other_teams_sets(db, snapshot_base):
    """When the demo's final round closes there are other teams' sets to attack, as in a played contest: Beta
    and Gamma uploaded a valid set per challenge while its anonymization phase was open (only the benchmark's
    were there); Alpha, the team a person tries the demo as, has uploaded nothing; a second run adds nothing."""
    from contest.models import AnonymizedSet, Dataset, PublicSet
    from contest.services import judge
    from contest.services.demo import setup_demo
    contest = demo_state(snapshot_base)  # setup_demo's contest, built once in the run (tests/snapshots.py)
    final = contest.rounds.get(number=2)
    sets = AnonymizedSet.objects.filter(dataset__round=final)
    assert sorted(sets.values_list("dataset__number", "dataset__challenge")) == [(2, 1), (2, 2), (3, 1), (3, 2)]
    assert not sets.exclude(status=AnonymizedSet.VALID).exists()
    setup_demo(log=lambda *a: None)
    assert sets.count() == 4
    judge.close_anonymization(final, user=contest.organizers.first())
    targets = PublicSet.objects.filter(dataset__round=final)
    assert {(p.dataset.kind, p.dataset.number) for p in targets} >= {(Dataset.TEAM, 2), (Dataset.TEAM, 3)}
