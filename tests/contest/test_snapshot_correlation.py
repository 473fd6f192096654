"""Paper Fig. 9's R stored in the results snapshot (issue 24 item 7): what it is, and the migration
that gives it to snapshots stored before."""
from __future__ import annotations

import importlib
import math

import pytest
from django.apps import apps

from contest.models import ResultsSnapshot
from contest.services.results import set_correlations

pytestmark = pytest.mark.django_db


def _set(round_, team, challenge, s_i, s_t, *, valid=True, benchmark=False):
    return {"set": {"round": round_, "team": team, "challenge": challenge}, "valid": valid,
            "benchmark": benchmark, "s_i_min": s_i, "s_t_min": s_t}


SETS = [_set(1, 1, 1, 1.0, 2.0), _set(1, 2, 1, 2.0, 4.0), _set(1, 3, 2, 3.0, 7.0),
        _set(1, 4, 2, 9.0, 0.0, valid=False),              # invalid: not a point of Fig. 9
        _set(1, 0, 1, 0.0, 9.0, benchmark=True),           # the benchmark: excluded from R
        _set(2, 1, 1, 0.5, 0.5)]                           # one set: no R


def test_set_correlations_per_round_over_valid_team_sets():
    got = set_correlations(SETS)
    assert got["1"]["n_sets"] == 3
    assert got["1"]["r"] == pytest.approx(5 / math.sqrt(2 * 114 / 9))   # hand-worked (test_analyses)
    assert got["2"] == {"r": None, "n_sets": 1}


def test_migration_gives_older_snapshots_their_correlation(make_contest):
    contest = make_contest()
    old = ResultsSnapshot.objects.create(contest=contest, data={"sets": SETS}, sha256="0" * 64)
    new = ResultsSnapshot.objects.create(contest=contest, data={"sets": SETS, "correlation": {"1": {"r": 0.5,
                                                                                                  "n_sets": 3}}},
                                         sha256="1" * 64)
    migration = importlib.import_module("contest.migrations.0015_snapshot_correlation")
    migration.add_correlation(apps, None)
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.data == {"sets": SETS, "correlation": set_correlations(SETS)}
    assert old.sha256 == "0" * 64
    assert new.data["correlation"] == {"1": {"r": 0.5, "n_sets": 3}}   # a stored R is never recomputed
