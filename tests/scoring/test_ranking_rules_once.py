"""The ranking rules are written once: the published results and their uncertainty agree (issue 22).

``scoring.results.rule_values`` holds rules §9's rules on columns of scores; ``compute_results``
runs it on one column (the stored scores) and ``scoring.uncertainty.replicate_values`` on many
(the stored scores in column 0, bounds, bootstrap replicates). Here the hand-worked golden
contest (every rule of rules §9: invalid and unsubmitted sets, a set nobody attacked, two attempts
on a target, a benchmark, a self-attack and an attack on an invalid set that do not count, round
weights, exclusions, a tie decided by the tie-break) goes through both, under both award variants
and both tie-breaks: column 0 is the published results to the last bit, and every other column is
what ``compute_results`` publishes for attack rows holding that column's scores.
"""
from __future__ import annotations

import numpy as np
import pytest

from scoring.results import (
    TEAM_FIELDS,
    VARIANT_2019,
    VARIANT_PAPER,
    AttackRow,
    compute_results,
    rankings_at,
)
from scoring.uncertainty import replicate_values
from tests.scoring.test_results_golden import ATTACKS, BENCH, TEAMS, TR, UTILITY, S, W, at
from tests.scoring.test_results_golden import RE as RE_

M = 100
EXTRA = [AttackRow(S(2, 2, 1), 2, RE_, 0.01, at(22, 9))]  # own set: listed as ignored, never counted


def _vectors(seed=0):
    """(AttackRow, per-user parts or None): parts whose mean is the row's score (every third row none)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, row in enumerate(ATTACKS + EXTRA):
        if i % 3 == 2:
            out.append((row, None))
            continue
        num = np.zeros(M)
        num[rng.permutation(M)[:round(row.score * M)]] = 1.0
        out.append((row, {"num": num}))
    return out


def _run(variant, tie_break, attacks):
    return compute_results(teams=TEAMS, benchmark_team=BENCH, round_weights=W, utility=UTILITY,
                           attacks=attacks, variant=variant, tie_break=tie_break)


def _published_orders(res):
    orders = {name: tuple(st.team for st in rows) for name, rows in res.standings}
    orders.update({f"leaderboard:{name}": tuple(st.team for st in rows) for name, rows in res.leaderboards})
    return orders


@pytest.mark.parametrize("variant", [VARIANT_2019, VARIANT_PAPER])
@pytest.mark.parametrize("tie_break", ["earlier-final-submission", "team-id"])
def test_column_zero_is_the_published_results_and_every_column_follows_the_same_rules(variant, tie_break):
    res = _run(variant, tie_break, ATTACKS + EXTRA)
    assert any("own set" in r for r in res.ignored) and any("invalid set" in r for r in res.ignored)
    vectors = _vectors()
    values, cols = replicate_values(res, vectors, seed=5, replicates=30)

    # column 0: the published numbers, exactly, and the published rankings
    for s in res.sets:
        assert values.set_min[(s.set, "reidentification")][0] == s.s_i_min
        assert values.set_min[(s.set, "trace_inference")][0] == s.s_t_min
    for tr in res.team_rounds:
        for f in TEAM_FIELDS:
            assert values.team_rounds[(tr.round, tr.team)][f][0] == getattr(tr, f), (tr, f)
    for tt in res.team_totals:
        for f in TEAM_FIELDS:
            assert values.team_totals[tt.team][f][0] == getattr(tt, f), (tt, f)
    assert rankings_at(res, values, 0) == _published_orders(res)

    # every other column: compute_results on rows carrying that column's scores gives the same
    # minima, totals and leaderboards (the ignored rows keep their scores: they never count)
    columns_of = {id(row): c for row, c in cols.attempts}
    assert len(columns_of) == len(ATTACKS + EXTRA) - len(res.ignored)  # the ignored rows are not there
    # the bounds of a single minimum and of the widest sum, and three bootstrap replicates
    checked = [*cols.bounds[1], *cols.bounds[max(cols.bounds)], cols.bootstrap.start, cols.bootstrap.start + 7,
               cols.bootstrap.stop - 1]
    for c in checked:
        rows = [AttackRow(r.set, r.attacker, r.kind, float(columns_of[id(r)][c]), r.submitted_at)
                if id(r) in columns_of else r for r in ATTACKS + EXTRA]
        again = _run(variant, tie_break, rows)
        for s in again.sets:
            assert values.set_min[(s.set, "reidentification")][c] == s.s_i_min
            assert values.set_min[(s.set, "trace_inference")][c] == s.s_t_min
        for tt in again.team_totals:
            for f in TEAM_FIELDS:
                assert values.team_totals[tt.team][f][c] == pytest.approx(getattr(tt, f), abs=1e-12)
        mine = rankings_at(res, values, c)
        for name, order in _published_orders(again).items():
            if name.startswith("leaderboard:"):
                assert mine[name] == order, (c, name)



def test_bootstrap_columns_are_each_attempts_ratio_on_its_sets_replicates():
    """Each bootstrap column of an attempt is sum(num * c_b) / sum(den * c_b) with c_b the b-th draw of
    its set's users (``resample_counts`` with the set's own seed): I and T attempts on a set share the
    draws, and a set's T attempts that weigh the users alike share the denominators (computed once,
    issue 23), while one that weighs them otherwise keeps its own."""
    from scoring.seeds import derived_seed
    from scoring.uncertainty import resample_counts

    rng = np.random.default_rng(3)
    weights = {}
    vectors = []
    for i, (row, vec) in enumerate(_vectors(seed=1)):
        if vec is not None and row.kind == TR:
            w = weights.setdefault(row.set, rng.random(M) + 0.5)
            if i % 5 == 0:
                w = w * rng.random(M)                         # an attempt whose users weigh otherwise
            vec = {"num": vec["num"] * w, "den": w}
        vectors.append((row, vec))
    res = _run(VARIANT_2019, "team-id", ATTACKS + EXTRA)
    B = 40
    _values, cols = replicate_values(res, vectors, seed=7, replicates=B)
    parts = {id(row): vec for row, vec in vectors}
    checked = set()
    for row, table in cols.attempts:
        vec = parts[id(row)]
        if vec is None:
            assert (table[cols.bootstrap] == row.score).all()
            continue
        counts = resample_counts(M, B, seed=derived_seed(7, row.set.key))
        den = vec.get("den", np.ones(M))
        np.testing.assert_allclose(table[cols.bootstrap], (counts @ vec["num"]) / (counts @ den), rtol=1e-12)
        checked.add((row.kind, "den" in vec and not np.array_equal(vec["den"], weights[row.set])))
    assert checked == {(RE_, False), (TR, False), (TR, True)}, checked
