"""Fig. 8 data: the sample anonymizers attacked by the judge attacks on a sample set."""
from __future__ import annotations

import pytest

from contest.models import Dataset
from contest.services import data
from contest.services.samples import _seed, evaluate_sample_anonymizers
from scoring.algorithms.registry import get
from scoring.pseudonymize import pseudonymize
from scoring.scores import attack_score, utility

pytestmark = pytest.mark.django_db


def test_sample_anonymizers_are_the_judge_attacks_on_each_anonymized_sample(generated):
    """Each row is: anonymize the sample's O with the row's seed, pseudonymize, run every judge attack
    with its seed against R, and keep the minimum of each kind -- checked step by step here."""
    contest = generated
    ds = Dataset.objects.filter(round__contest=contest, kind=Dataset.SAMPLE).order_by("number", "challenge").first()
    configs = (("No obfuscation", "A1-none", {}), ("Cheat(1)", "A5-YA", {"p": 1.0}))
    rows = evaluate_sample_anonymizers(contest, ds, configs)
    assert rows == evaluate_sample_anonymizers(contest, ds, configs)  # deterministic given the contest seed
    grid, axis = contest.grid(), ds.round.time_axis()
    original, reference = data.traces(ds.original, grid), data.traces(ds.reference, grid)
    for (label, name, params), row in zip(configs, rows, strict=True):
        assert (row["label"], row["algorithm"], row["params"]) == (label, name, params)
        anon = get(name).run(grid, original, seed=_seed(contest.seed, label, "anonymize"),
                             **{**get(name).axis_params(axis), **params})
        s_u = utility(grid, original, anon, convention=contest.utility_convention, lambda_u=contest.lambda_u)
        assert row["s_u"] == s_u and row["valid"] == (s_u >= contest.s_req)
        pse = pseudonymize(anon, seed=_seed(contest.seed, label, "pseudonymize"))
        by_kind = {"reidentification": [], "trace_inference": []}
        for attack in map(get, contest.judge_attacks):
            estimate = attack.run(grid, reference, pse.pubtraces, seed=_seed(contest.seed, label, attack.name),
                                  **attack.axis_params(axis))
            by_kind[attack.kind].append(attack_score(attack.kind, grid, estimate, true_users=pse.user_ids,
                                                     truth=original, lambda_t=contest.lambda_t,
                                                     hospital_weight=contest.hospital_weight))
        assert row["s_i_min"] == min(by_kind["reidentification"])
        assert row["s_t_min"] == min(by_kind["trace_inference"])
    # no obfuscation keeps every event where it was: utility 1 exactly
    assert rows[0]["s_u"] == 1.0 and rows[0]["valid"]
