"""The privacy preview on the platform: the judge's own attack path, the preview job, its isolation from results."""
from __future__ import annotations

import numpy as np
import pytest

from contest.models import Dataset, JudgeAttackResult, PublicSet
from contest.services import data, judge, storage, uploads
from scoring.preview import preview
from scoring.pseudonymize import Pseudonymized
from tests.contest.conftest import anonymize_csv, user

pytestmark = pytest.mark.django_db


def _team_ds(contest, team_number, challenge):
    return Dataset.objects.get(round__contest=contest, number=team_number, challenge=challenge)


@pytest.mark.parametrize("mode", ["exact", "sample_2019"])
def test_preview_on_the_judges_pseudonymized_set_and_seeds_equals_the_judges_run(generated, mode):
    generated.judge_attack_mode = mode
    generated.save()
    ds = _team_ds(generated, 1, 1)
    uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=anonymize_csv(ds, "A4-PL", seed=3), name="a.csv"))
    rnd = generated.rounds.get()
    ps = PublicSet.objects.get(pk=next(p.pk for p in judge.close_anonymization(rnd) if p.dataset_id == ds.pk))
    judge.run_judge_attacks(ps)
    grid = generated.grid()
    truth = data.traces(ds.original, grid)
    pse, users = data.ptable(ps.ptable)
    pseud = Pseudonymized(data.pubtraces(ps.pubtraces, grid), pse, users, ps.commitment)
    anon = data.anotraces(storage.read_csv_bytes(ps.anonymized_set.file), grid, truth)
    names = list(generated.judge_attacks)
    seeds = {name: judge.attack_seed(generated.seed, ps, name) for name in names}
    p = preview(grid, data.traces(ds.reference, grid), truth, anon, seed=0, pseudonymized=pseud, seeds=seeds,
                **judge.preview_settings(generated, rnd))
    stored = {r.algorithm: r for r in JudgeAttackResult.objects.filter(public_set=ps)}
    assert sorted(stored) == sorted(names)
    for outcome in p.attacks:
        r = stored[outcome.name]
        assert outcome.seed == r.seed and outcome.params == r.params
        assert outcome.score == r.score  # exactly: one attack path
        out = storage.read_bytes(r.output)
        written = data.etable_csv(outcome.output) if r.kind == "reidentification" else data.etraces_csv(outcome.output)
        assert written == out
    assert p.s_i_min == min(r.score for r in stored.values() if r.kind == "reidentification")
    assert not np.isnan(p.s_t_min)
