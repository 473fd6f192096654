"""The contest's judge attack mode: exact by default, the 2019 programs' sampling when the contest file asks."""
from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError

from contest.models import JudgeAttackResult, PublicSet
from contest.services import data, judge, storage
from contest.services.setup import SetupError
from scoring.algorithms.registry import get

pytestmark = pytest.mark.django_db


def _benchmark_idp(contest) -> PublicSet:
    judge.close_anonymization(contest.rounds.get())
    return PublicSet.objects.get(dataset__round__contest=contest, dataset__challenge=1,
                                 dataset__kind="benchmark")


@pytest.mark.parametrize("mode", ["exact", "sample_2019"])
def test_judge_runs_the_attacks_in_the_contests_mode(generated, mode):
    generated.judge_attack_mode = mode
    generated.save()
    ps = _benchmark_idp(generated)
    judge.run_judge_attacks(ps)
    grid, axis = generated.grid(), ps.dataset.round.time_axis()
    reference, pub = data.traces(ps.dataset.reference, grid), data.pubtraces(ps.pubtraces, grid)
    for name in ("I2-VisitProb", "T2-VisitProb", "I3-HomeProb"):
        run = JudgeAttackResult.objects.get(public_set=ps, algorithm=name)
        assert run.params["sample_2019"] is (mode == "sample_2019")
        # the stored output is what the registered attack gives in that mode with the stored seed
        algorithm = get(name)
        again = algorithm.run(grid, reference, pub, seed=run.seed,
                              **algorithm.resolve({**algorithm.axis_params(axis), "sample_2019": mode == "sample_2019"}))
        kind = algorithm.kind
        csv = data.etable_csv(again) if kind == "reidentification" else data.etraces_csv(again)
        assert storage.read_bytes(run.output) == csv
    # attacks without the switch (I1/T1) run as before
    assert "sample_2019" not in JudgeAttackResult.objects.get(public_set=ps, algorithm="I1-rand").params


def test_contest_file_refuses_an_unknown_mode(make_contest):
    with pytest.raises((SetupError, ValidationError), match="judge_attack_mode"):
        make_contest(slug="bad-mode", extra={"judge_attack_mode": "fast"})


def test_rules_page_states_the_mode(generated, client):
    page = client.get(f"/c/{generated.slug}/rules/").content.decode()
    assert "in exact mode" in page
    generated.judge_attack_mode = "sample_2019"
    generated.save()  # a raw save, as the admin makes: no audit entry, so the stored page lives its bucket
    cache.clear()
    page = client.get(f"/c/{generated.slug}/rules/").content.decode()
    assert "sampling mode" in page
