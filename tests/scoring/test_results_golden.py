"""Golden test of scoring.results: a hand-made contest whose every table is worked out by hand.

Four teams (1-4) and the benchmark (team 5, one IDP-numbered set per round, the
2019 layout), two rounds weighted 0.1 (preliminary) and 0.9 (final).
Judge attacks "I2" (re-identification) and "T2" (trace inference) run on the
valid sets; teams attack each other. The example contains an invalid set
(round 1, team 3, IDP), an unsubmitted set (round 1, team 4, TRP), a valid set
nobody attacked (round 2, team 4, TRP), two attempts on one target (team 1 on
round-2 team 2 IDP, second attempt lower; team 3 on round-2 team 1 TRP,
first attempt lower) and a tie (teams 1 and 2 on the overall total, broken by
the earlier final submission -- in favour of the higher team id, so the
tie-break and not the id fallback decides).

The expected numbers below are NOT produced by the code: each is derived in
the comments from the rows above it.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from scoring.results import (
    BEST_ANONYMIZER,
    BEST_ANONYMIZER_REID,
    BEST_ANONYMIZER_TRACE,
    BEST_ATTACKER_REID,
    BEST_ATTACKER_TRACE,
    OVERALL,
    AttackRow,
    SetRef,
    UtilityRow,
    compute_results,
)
from scoring.results import (
    REIDENTIFICATION as RE,
)
from scoring.results import (
    TRACE_INFERENCE as TR,
)

W = {1: 0.1, 2: 0.9}
TEAMS = (1, 2, 3, 4)
BENCH = 5


def at(day, hour):
    return datetime(2019, 10, day, hour, 0, tzinfo=UTC)


def S(r, t, c):
    return SetRef(r, t, c)


# Final-set upload times. Team 2's last final set (20 Oct 09:00) is earlier than
# team 1's (20 Oct 11:00): team 2 wins their overall tie.
UTILITY = [
    # round 1
    UtilityRow(S(1, 1, 1), 0.80, True, at(10, 8)),
    UtilityRow(S(1, 1, 2), 0.75, True, at(10, 9)),
    UtilityRow(S(1, 2, 1), 0.90, True, at(10, 8)),
    UtilityRow(S(1, 2, 2), 0.72, True, at(10, 8)),
    UtilityRow(S(1, 3, 1), 0.60, False, at(10, 7)),   # invalid: s_U < s_req = 0.7
    UtilityRow(S(1, 3, 2), 0.85, True, at(10, 7)),
    UtilityRow(S(1, 4, 1), 0.95, True, at(10, 6)),
    #            (1, 4, 2) never submitted
    UtilityRow(S(1, 5, 1), 1.00, True, None),         # benchmark: pseudonymized only
    # round 2
    UtilityRow(S(2, 1, 1), 0.81, True, at(20, 10)),
    UtilityRow(S(2, 1, 2), 0.71, True, at(20, 11)),   # team 1's last final set
    UtilityRow(S(2, 2, 1), 0.77, True, at(20, 9)),    # team 2's last final set
    UtilityRow(S(2, 2, 2), 0.79, True, at(20, 8)),
    UtilityRow(S(2, 3, 1), 0.70, True, at(20, 12)),
    UtilityRow(S(2, 3, 2), 0.88, True, at(20, 12)),
    UtilityRow(S(2, 4, 1), 0.93, True, at(20, 7)),
    UtilityRow(S(2, 4, 2), 0.99, True, at(20, 7)),    # valid, attacked by nobody
    UtilityRow(S(2, 5, 1), 1.00, True, None),
]

ATTACKS = [
    # ---- round 1: judge attacks on every valid set
    AttackRow(S(1, 1, 1), "I2", RE, 0.80), AttackRow(S(1, 1, 1), "T2", TR, 0.50),
    AttackRow(S(1, 1, 2), "I2", RE, 0.70), AttackRow(S(1, 1, 2), "T2", TR, 0.65),
    AttackRow(S(1, 2, 1), "I2", RE, 0.60), AttackRow(S(1, 2, 1), "T2", TR, 0.40),
    AttackRow(S(1, 2, 2), "I2", RE, 0.90), AttackRow(S(1, 2, 2), "T2", TR, 0.70),
    AttackRow(S(1, 3, 2), "I2", RE, 0.50), AttackRow(S(1, 3, 2), "T2", TR, 0.80),
    AttackRow(S(1, 4, 1), "I2", RE, 0.40), AttackRow(S(1, 4, 1), "T2", TR, 0.30),
    AttackRow(S(1, 5, 1), "I2", RE, 0.30), AttackRow(S(1, 5, 1), "T2", TR, 0.20),
    # a stray judge row on the invalid set: must not count (invalid sets score 0)
    AttackRow(S(1, 3, 1), "I2", RE, 0.20),
    # ---- round 1: team attacks
    AttackRow(S(1, 1, 1), 2, RE, 0.70, at(12, 10)),
    AttackRow(S(1, 1, 2), 3, TR, 0.60, at(12, 11)),
    AttackRow(S(1, 5, 1), 1, RE, 0.10, at(12, 12)),
    AttackRow(S(1, 2, 2), 1, TR, 0.95, at(12, 13)),  # weaker than T2's 0.70
    # ---- round 2: judge attacks on every valid set except (2, 4, 2)
    AttackRow(S(2, 1, 1), "I2", RE, 0.60), AttackRow(S(2, 1, 1), "T2", TR, 0.40),
    AttackRow(S(2, 1, 2), "I2", RE, 0.50), AttackRow(S(2, 1, 2), "T2", TR, 0.70),
    AttackRow(S(2, 2, 1), "I2", RE, 0.70), AttackRow(S(2, 2, 1), "T2", TR, 0.50),
    AttackRow(S(2, 2, 2), "I2", RE, 0.80), AttackRow(S(2, 2, 2), "T2", TR, 0.60),
    AttackRow(S(2, 3, 1), "I2", RE, 0.90), AttackRow(S(2, 3, 1), "T2", TR, 0.80),
    AttackRow(S(2, 3, 2), "I2", RE, 0.60), AttackRow(S(2, 3, 2), "T2", TR, 0.50),
    AttackRow(S(2, 4, 1), "I2", RE, 0.50), AttackRow(S(2, 4, 1), "T2", TR, 0.30),
    AttackRow(S(2, 5, 1), "I2", RE, 0.20), AttackRow(S(2, 5, 1), "T2", TR, 0.10),
    # ---- round 2: team attacks
    AttackRow(S(2, 2, 1), 1, RE, 0.50, at(22, 10)),  # two attempts, second better
    AttackRow(S(2, 2, 1), 1, RE, 0.35, at(22, 11)),
    AttackRow(S(2, 3, 1), 1, RE, 0.80, at(22, 12)),
    AttackRow(S(2, 1, 1), 2, RE, 0.45, at(22, 10)),
    AttackRow(S(2, 3, 2), 2, TR, 0.40, at(22, 11)),
    AttackRow(S(2, 1, 2), 3, TR, 0.40, at(22, 10)),  # two attempts, first better
    AttackRow(S(2, 1, 2), 3, TR, 0.45, at(22, 11)),
    AttackRow(S(2, 5, 1), 3, RE, 0.05, at(22, 12)),
    AttackRow(S(2, 4, 1), 3, RE, 0.10, at(22, 13)),
    AttackRow(S(2, 1, 1), 4, RE, 0.55, at(22, 10)),
    AttackRow(S(2, 2, 2), 4, TR, 0.50, at(22, 11)),
]


@pytest.fixture(scope="module")
def res():
    return compute_results(teams=TEAMS, benchmark_team=BENCH, round_weights=W,
                           utility=UTILITY, attacks=ATTACKS)


# ---------------------------------------------------------------------------
# Per-set minima: min over judge + team attacks of each kind.
# ---------------------------------------------------------------------------
EXPECTED_MINIMA = {
    # set: (s_I,min, s_T,min)
    # round 1
    (1, 1, 1): (0.70, 0.50),  # I: min(I2 0.80, team2 0.70); T: T2 0.50
    (1, 1, 2): (0.70, 0.60),  # I: I2 0.70;                 T: min(T2 0.65, team3 0.60)
    (1, 2, 1): (0.60, 0.40),  # I2 0.60; T2 0.40
    (1, 2, 2): (0.90, 0.70),  # I2 0.90; T: min(T2 0.70, team1 0.95)
    (1, 3, 1): (0.00, 0.00),  # invalid -> 0, 0 (the I2 0.20 row is ignored)
    (1, 3, 2): (0.50, 0.80),
    (1, 4, 1): (0.40, 0.30),
    (1, 5, 1): (0.10, 0.20),  # benchmark. I: min(I2 0.30, team1 0.10)
    # round 2
    (2, 1, 1): (0.45, 0.40),  # I: min(I2 0.60, team2 0.45, team4 0.55)
    (2, 1, 2): (0.50, 0.40),  # T: min(T2 0.70, team3 best of {0.40, 0.45})
    (2, 2, 1): (0.35, 0.50),  # I: min(I2 0.70, team1 best of {0.50, 0.35})
    (2, 2, 2): (0.80, 0.50),  # T: min(T2 0.60, team4 0.50)
    (2, 3, 1): (0.80, 0.80),  # I: min(I2 0.90, team1 0.80)
    (2, 3, 2): (0.60, 0.40),  # T: min(T2 0.50, team2 0.40)
    (2, 4, 1): (0.10, 0.30),  # I: min(I2 0.50, team3 0.10)
    (2, 4, 2): (1.00, 1.00),  # valid, attacked by nobody -> 1 (module decision)
    (2, 5, 1): (0.05, 0.10),  # benchmark. I: min(I2 0.20, team3 0.05)
}


def test_set_minima(res):
    got = {(s.set.round, s.set.team, s.set.challenge): (s.s_i_min, s.s_t_min) for s in res.sets}
    assert set(got) == set(EXPECTED_MINIMA)  # (1,4,2) unsubmitted: no row
    for k, (ei, et) in EXPECTED_MINIMA.items():
        assert got[k] == pytest.approx((ei, et), abs=1e-12), k


def test_set_details(res):
    assert res.set_result(S(1, 3, 1)).valid is False
    assert res.set_result(S(1, 5, 1)).benchmark is True
    assert res.set_result(S(1, 1, 1)).benchmark is False
    # who achieved the minimum, and how many attempts entered it
    assert res.set_result(S(1, 1, 1)).s_i_min_by == (2,)
    assert res.set_result(S(1, 1, 1)).s_t_min_by == ("T2",)
    assert res.set_result(S(2, 2, 1)).n_attacks_i == 3      # I2 + team 1's two attempts
    assert res.set_result(S(2, 4, 2)).n_attacks_i == 0
    assert res.set_result(S(2, 4, 2)).n_attacks_t == 0
    assert res.set_result(S(1, 3, 1)).n_attacks_i == 0      # ignored row not counted
    assert any("invalid set r1-t3-c1" in msg for msg in res.ignored)


# ---------------------------------------------------------------------------
# Per team per round: s_I = s_I,min(t,1), s_T = s_T,min(t,2), overall = sum.
# Attacker sums: over valid sets of other teams + benchmark in the round,
# attacked -> best attempt, not attacked -> 1.
#
# Round 1 valid sets: t1c1 t1c2 t2c1 t2c2 t3c2 t4c1 b5 (7).
#   team 1 targets t2c1 t2c2 t3c2 t4c1 b5 (5):
#       RE: b5 0.10 + 4 x 1 = 4.10;     TR: t2c2 0.95 + 4 = 4.95
#   team 2 targets t1c1 t1c2 t3c2 t4c1 b5 (5):
#       RE: t1c1 0.70 + 4 = 4.70;       TR: 5
#   team 3 targets t1c1 t1c2 t2c1 t2c2 t4c1 b5 (6; own t3c2 and invalid t3c1 excluded):
#       RE: 6;                          TR: t1c2 0.60 + 5 = 5.60
#   team 4 targets t1c1 t1c2 t2c1 t2c2 t3c2 b5 (6): RE 6, TR 6
# Round 2: all 9 sets valid; every team has 7 targets.
#   team 1: RE: t2c1 0.35 + t3c1 0.80 + 5 = 6.15;   TR: 7
#   team 2: RE: t1c1 0.45 + 6 = 6.45;               TR: t3c2 0.40 + 6 = 6.40
#   team 3: RE: t4c1 0.10 + b5 0.05 + 5 = 5.15;     TR: t1c2 0.40 + 6 = 6.40
#   team 4: RE: t1c1 0.55 + 6 = 6.55;               TR: t2c2 0.50 + 6 = 6.50
# ---------------------------------------------------------------------------
EXPECTED_TEAM_ROUNDS = {
    # (round, team): (s_I, s_T, overall, attack_sum_I, attack_sum_T, n_targets)
    (1, 1): (0.70, 0.60, 1.30, 4.10, 4.95, 5),
    (1, 2): (0.60, 0.70, 1.30, 4.70, 5.00, 5),
    (1, 3): (0.00, 0.80, 0.80, 6.00, 5.60, 6),   # IDP set invalid -> 0
    (1, 4): (0.40, 0.00, 0.40, 6.00, 6.00, 6),   # TRP set unsubmitted -> 0
    (2, 1): (0.45, 0.40, 0.85, 6.15, 7.00, 7),
    (2, 2): (0.35, 0.50, 0.85, 6.45, 6.40, 7),
    (2, 3): (0.80, 0.40, 1.20, 5.15, 6.40, 7),
    (2, 4): (0.10, 1.00, 1.10, 6.55, 6.50, 7),   # unattacked TRP set -> 1
}


def test_team_rounds(res):
    for (r, t), exp in EXPECTED_TEAM_ROUNDS.items():
        tr = res.team_round(r, t)
        got = (tr.s_i_min, tr.s_t_min, tr.overall, tr.attack_sum_i, tr.attack_sum_t, tr.n_targets)
        assert got == pytest.approx(exp, abs=1e-12), (r, t)
    assert len(res.team_rounds) == 8


# ---------------------------------------------------------------------------
# Weighted totals: 0.1 x round 1 + 0.9 x round 2.
#   s_I:     t1 0.07 + 0.405 = 0.475   t2 0.06 + 0.315 = 0.375
#            t3 0    + 0.72  = 0.72    t4 0.04 + 0.09  = 0.13
#   s_T:     t1 0.06 + 0.36  = 0.42    t2 0.07 + 0.45  = 0.52
#            t3 0.08 + 0.36  = 0.44    t4 0    + 0.90  = 0.90
#   overall: t1 0.13 + 0.765 = 0.895   t2 0.13 + 0.765 = 0.895   (tie)
#            t3 0.08 + 1.08  = 1.16    t4 0.04 + 0.99  = 1.03
#   att I:   t1 0.41 + 5.535 = 5.945   t2 0.47 + 5.805 = 6.275
#            t3 0.60 + 4.635 = 5.235   t4 0.60 + 5.895 = 6.495
#   att T:   t1 0.495 + 6.30 = 6.795   t2 0.50 + 5.76  = 6.26
#            t3 0.56  + 5.76 = 6.32    t4 0.60 + 5.85  = 6.45
# ---------------------------------------------------------------------------
EXPECTED_TOTALS = {
    1: (0.475, 0.42, 0.895, 5.945, 6.795),
    2: (0.375, 0.52, 0.895, 6.275, 6.26),
    3: (0.72, 0.44, 1.16, 5.235, 6.32),
    4: (0.13, 0.90, 1.03, 6.495, 6.45),
}


def test_weighted_totals(res):
    for t, exp in EXPECTED_TOTALS.items():
        tt = res.team_total(t)
        got = (tt.s_i_min, tt.s_t_min, tt.overall, tt.attack_sum_i, tt.attack_sum_t)
        assert got == pytest.approx(exp, abs=1e-12), t


# ---------------------------------------------------------------------------
# Awards (2019 rule v1.4).
#   Overall: t3 1.16 > t4 1.03 > t1 = t2 0.895. Place 3: tie at 0.895; team
#     2's final submission (20 Oct 09:00) is earlier than team 1's (11:00) ->
#     team 2, decided by the tie-break. (Team ids alone would give team 1.)
#     In floats t1's total is 0.8950000000000001 and t2's 0.895: the tie must
#     survive that noise.
#   Best anonymizer RE: t3 0.72 (next t1 0.475).
#   Best anonymizer TR: t4 0.90 (next t2 0.52).
#   Best attacker RE: raw best t3 5.235, but t3 is the overall winner (and the
#     best RE anonymizer) -> excluded; then t1 5.945 < t2 6.275 < t4 6.495 -> t1.
#   Best attacker TR: raw best t2 6.26 -- exclusions are t3 (overall winner)
#     and t4 (best TR anonymizer), so t2 6.26 < t1 6.795 -> t2.
#     (Every team made a TR attack; t1 only the weak round-1 one.)
# ---------------------------------------------------------------------------
def test_awards_2019(res):
    a1, a2, a3 = (res.award(OVERALL, p) for p in (1, 2, 3))
    assert (a1.team, a2.team, a3.team) == (3, 4, 2)
    assert a1.value == pytest.approx(1.16) and a1.decided_by == "score"
    assert a2.value == pytest.approx(1.03) and a2.decided_by == "score"
    assert a3.value == pytest.approx(0.895)
    assert a3.decided_by == "earlier-final-submission"
    assert a3.tied_with == (1,)
    assert res.award(OVERALL, 4) is None

    b = res.award(BEST_ANONYMIZER_REID)
    assert (b.team, b.decided_by) == (3, "score") and b.value == pytest.approx(0.72)
    b = res.award(BEST_ANONYMIZER_TRACE)
    assert (b.team, b.decided_by) == (4, "score") and b.value == pytest.approx(0.90)

    a = res.award(BEST_ATTACKER_REID)
    assert (a.team, a.excluded, a.decided_by) == (1, (3,), "score")
    assert a.value == pytest.approx(5.945)
    assert [s.team for s in res.standing(BEST_ATTACKER_REID)] == [1, 2, 4]

    a = res.award(BEST_ATTACKER_TRACE)
    assert (a.team, a.excluded, a.decided_by) == (2, (3, 4), "score")
    assert a.value == pytest.approx(6.26)
    assert [s.team for s in res.standing(BEST_ATTACKER_TRACE)] == [2, 1]

    assert len(res.awards) == 7  # 3 places + 4 awards
    # full overall ranking with the tie-break order
    assert [s.team for s in res.standing(OVERALL)] == [3, 4, 2, 1]


def test_awards_paper_variant():
    # Paper: best anonymization = highest s_T,min(t,2): t4 0.90.
    # Best attackers = lowest sum, no exclusions: RE t3 5.235; TR t2 6.26 (< t3 6.32).
    res = compute_results(teams=TEAMS, benchmark_team=BENCH, round_weights=W,
                          utility=UTILITY, attacks=ATTACKS, variant="paper")
    assert res.award(OVERALL) is None and res.award(BEST_ANONYMIZER_REID) is None
    assert res.award(BEST_ANONYMIZER).team == 4
    a = res.award(BEST_ATTACKER_REID)
    assert (a.team, a.excluded) == (3, ())
    assert a.value == pytest.approx(5.235)
    assert res.award(BEST_ATTACKER_TRACE).team == 2
    assert len(res.awards) == 3


def test_tie_break_team_id_rule():
    # Declared tie-break "team-id": the same tie at 0.895 goes to team 1.
    res = compute_results(teams=TEAMS, benchmark_team=BENCH, round_weights=W,
                          utility=UTILITY, attacks=ATTACKS, tie_break="team-id")
    a3 = res.award(OVERALL, 3)
    assert (a3.team, a3.decided_by, a3.tied_with) == (1, "team-id", (2,))


# ---------------------------------------------------------------------------
# Attack matrix: attacker x target set x kind -> (best, attempts).
# ---------------------------------------------------------------------------
EXPECTED_MATRIX = {
    # team attackers
    (1, (1, 5, 1), RE): (0.10, 1),
    (1, (1, 2, 2), TR): (0.95, 1),
    (1, (2, 2, 1), RE): (0.35, 2),   # min(0.50, 0.35)
    (1, (2, 3, 1), RE): (0.80, 1),
    (2, (1, 1, 1), RE): (0.70, 1),
    (2, (2, 1, 1), RE): (0.45, 1),
    (2, (2, 3, 2), TR): (0.40, 1),
    (3, (1, 1, 2), TR): (0.60, 1),
    (3, (2, 1, 2), TR): (0.40, 2),   # min(0.40, 0.45)
    (3, (2, 5, 1), RE): (0.05, 1),
    (3, (2, 4, 1), RE): (0.10, 1),
    (4, (2, 1, 1), RE): (0.55, 1),
    (4, (2, 2, 2), TR): (0.50, 1),
}
JUDGE_I2 = {(1, 1, 1): 0.80, (1, 1, 2): 0.70, (1, 2, 1): 0.60, (1, 2, 2): 0.90, (1, 3, 2): 0.50,
            (1, 4, 1): 0.40, (1, 5, 1): 0.30, (2, 1, 1): 0.60, (2, 1, 2): 0.50, (2, 2, 1): 0.70,
            (2, 2, 2): 0.80, (2, 3, 1): 0.90, (2, 3, 2): 0.60, (2, 4, 1): 0.50, (2, 5, 1): 0.20}
JUDGE_T2 = {(1, 1, 1): 0.50, (1, 1, 2): 0.65, (1, 2, 1): 0.40, (1, 2, 2): 0.70, (1, 3, 2): 0.80,
            (1, 4, 1): 0.30, (1, 5, 1): 0.20, (2, 1, 1): 0.40, (2, 1, 2): 0.70, (2, 2, 1): 0.50,
            (2, 2, 2): 0.60, (2, 3, 1): 0.80, (2, 3, 2): 0.50, (2, 4, 1): 0.30, (2, 5, 1): 0.10}


def test_attack_matrix(res):
    expected = dict(EXPECTED_MATRIX)
    expected.update({("I2", k, RE): (v, 1) for k, v in JUDGE_I2.items()})
    expected.update({("T2", k, TR): (v, 1) for k, v in JUDGE_T2.items()})
    got = {(c.attacker, (c.set.round, c.set.team, c.set.challenge), c.kind): (c.best, c.attempts)
           for c in res.matrix}
    assert got == expected   # the ignored row on the invalid set is absent
    assert res.cell(1, S(2, 3, 2), RE) is None  # not attacked -> no cell


def test_to_dict_is_json(res):
    d = json.loads(json.dumps(res.to_dict()))
    assert d["variant"] == "2019-v1.4"
    assert d["round_weights"] == [{"round": 1, "weight": 0.1}, {"round": 2, "weight": 0.9}]
    s = next(x for x in d["sets"] if x["set"]["key"] == "r2-t4-c2")
    assert s["s_i_min"] == 1.0 and s["n_attacks_t"] == 0
    a3 = next(x for x in d["awards"] if x["award"] == OVERALL and x["place"] == 3)
    assert a3["team"] == 2 and a3["decided_by"] == "earlier-final-submission"
    assert [x["team"] for x in d["standings"][OVERALL]] == [3, 4, 2, 1]
    assert d["standings"][OVERALL][2]["final_submission_at"] == "2019-10-20T09:00:00+00:00"


def test_leaderboards_rank_as_the_awards_do(res):
    """Every team here has a valid set, so the total leaderboard is the overall award's standing."""
    board = dict(res.leaderboards)
    assert [s.team for s in board["total"]] == [3, 4, 2, 1]
    assert [(s.position, s.tied) for s in board["total"]] == [(1, False), (2, False), (3, True), (4, True)]
    # per round, from test_team_rounds: the round-1 and round-2 ties of teams 1 and 2 go to team 2,
    # whose latest set of the round was earlier (10 Oct 08:00 < 09:00; 20 Oct 09:00 < 11:00)
    assert [s.team for s in board["round-1"]] == [2, 1, 3, 4]
    assert [s.team for s in board["round-2"]] == [3, 4, 2, 1]
    # per challenge: the submitted sets by s_I,min (IDP) or s_T,min (TRP); team 3's invalid
    # round-1 IDP set scores 0, team 4 submitted no round-1 TRP set; round-2 TRP: teams 1 and 3
    # tie at 0.4 and team 1's set (20 Oct 11:00) is earlier than team 3's (12:00)
    assert [s.team for s in board["round-1-challenge-1"]] == [1, 2, 4, 3]
    assert [s.team for s in board["round-1-challenge-2"]] == [3, 2, 1]
    assert [s.team for s in board["round-2-challenge-1"]] == [3, 1, 2, 4]
    assert [(s.team, s.tied) for s in board["round-2-challenge-2"]] == [(4, False), (2, False), (1, True), (3, True)]
