"""The judge attacks follow the contest's own clock (rules §3, 10), not the 2019 one."""
from __future__ import annotations

import numpy as np
import pytest

from contest.models import JudgeAttackResult, PublicSet
from contest.services import data, judge, storage
from contest.services.generation import generate_round_data

pytestmark = pytest.mark.django_db


def test_judge_attacks_use_the_contest_time_axis(make_contest):
    """6 slots a day from 7:00: I3/T3's 8:00-8:59 are slots 2 and 3 (2019: 0 and 1 of 20)."""
    from scoring.algorithms.registry import get
    from scoring.scores import reidentification, trace_inference

    contest = make_contest(slug="clock", users=12,
                           extra={"slots_per_day": 6, "day_start_minute": 7 * 60,
                                  "judge_attacks": ["I3-HomeProb", "T3-HomeProb"]})
    rnd = contest.rounds.get()
    generate_round_data(rnd)
    axis = rnd.time_axis()
    assert (axis.slots_per_day, axis.start_minute) == (6, 420)
    judge.close_anonymization(rnd)
    ps = PublicSet.objects.filter(dataset__round=rnd).select_related("dataset").first()  # a benchmark set
    judge.run_judge_attacks(ps)
    grid = contest.grid()
    ds = ps.dataset
    reference = data.traces(ds.reference, grid)
    truth = data.traces(ds.original, grid)
    pub = data.pubtraces(ps.pubtraces, grid)
    _, true_users = data.ptable(ps.ptable)
    results = {r.algorithm: r for r in JudgeAttackResult.objects.filter(public_set=ps)}
    assert set(results) == {"I3-HomeProb", "T3-HomeProb"}
    for name, r in results.items():
        alg = get(name)
        assert r.params["slots_per_day"] == 6 and r.params["home_slots"] == "2,3"
        # The stored estimate is exactly scoring's output with the axis parameters, and so is the score.
        out = alg.run(grid, reference, pub, seed=r.seed, **alg.axis_params(axis))
        stored = storage.read_bytes(r.output)
        n = len(true_users)
        if alg.kind == "reidentification":
            assert np.array_equal(data.etable(stored, n, n), out)
            assert r.score == pytest.approx(reidentification(true_users, out), abs=1e-12)
        else:
            assert stored == data.etraces_csv(out)
            assert r.score == pytest.approx(trace_inference(grid, truth, out, lambda_t=contest.lambda_t,
                                                            hospital_weight=contest.hospital_weight), abs=1e-12)
