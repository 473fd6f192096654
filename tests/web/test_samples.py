"""Fig. 8 data: the sample anonymizers attacked by the judge attacks on a sample set."""
from __future__ import annotations

import pytest

from contest.models import Dataset
from contest.services.samples import evaluate_sample_anonymizers

pytestmark = pytest.mark.django_db


def test_sample_anonymizers_scores_follow_the_paper_shape(generated):
    contest = generated
    ds = Dataset.objects.filter(round__contest=contest, kind=Dataset.SAMPLE).order_by("number", "challenge").first()
    configs = (("No obfuscation", "A1-none", {}), ("Cheat(1)", "A5-YA", {"p": 1.0}))
    first = evaluate_sample_anonymizers(contest, ds, configs)
    again = evaluate_sample_anonymizers(contest, ds, configs)
    assert first == again  # deterministic given the contest seed
    none, cheat = first
    assert none["s_u"] == 1.0 and none["valid"]
    for row in first:
        assert 0.0 <= row["s_i_min"] <= 1.0 and 0.0 <= row["s_t_min"] <= 1.0
    # Cheat(1) shuffles every user's whole trace: utility collapses; re-identification gets no better
    assert cheat["s_u"] < none["s_u"]
    assert cheat["s_i_min"] >= none["s_i_min"]
