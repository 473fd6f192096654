"""Rule-by-rule tests of scoring.results: exclusions, tie-breaks, determinism, late attacks, errors."""
from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

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

T0 = datetime(2019, 10, 1, 12, 0, tzinfo=UTC)


def t(minutes):
    return T0 + timedelta(minutes=minutes)


def one_round(teams, bench=None, invalid=(), times=None):
    """Utility rows of one round (round 1) for both challenges of every team (+ benchmark IDP set)."""
    rows = []
    for team in teams:
        for c in (1, 2):
            valid = (team, c) not in invalid
            rows.append(UtilityRow(SetRef(1, team, c), 0.9 if valid else 0.5, valid,
                                   (times or {}).get(team, t(team))))
    if bench is not None:
        rows.append(UtilityRow(SetRef(1, bench, 1), 1.0, True, None))
    return rows


def judge(teams, s_i, s_t, bench=None):
    """Judge attacks giving each team's IDP set s_I,min = s_i[team] and TRP set s_T,min = s_t[team]."""
    rows = []
    for team in teams:
        for c in (1, 2):
            rows.append(AttackRow(SetRef(1, team, c), "I1", RE, s_i[team] if c == 1 else 1.0))
            rows.append(AttackRow(SetRef(1, team, c), "T1", TR, s_t[team] if c == 2 else 1.0))
    if bench is not None:
        rows += [AttackRow(SetRef(1, bench, 1), "I1", RE, 0.9), AttackRow(SetRef(1, bench, 1), "T1", TR, 0.9)]
    return rows


def run(utility, attacks, teams=(1, 2, 3, 4), bench=None, **kw):
    return compute_results(teams=teams, benchmark_team=bench, round_weights={1: 1.0},
                           utility=utility, attacks=attacks, **kw)


# --------------------------------------------------------------------------
# exclusions
# --------------------------------------------------------------------------
def cross(attacker, targets, value):
    """``attacker``'s RE attacks on the targets' TRP sets and TR attacks on their IDP sets.

    Those minima do not enter any anonymizer award, so the attacks shape the
    attacker sums without moving the anonymizer rankings.
    """
    return ([AttackRow(SetRef(1, x, 2), attacker, RE, value) for x in targets]
            + [AttackRow(SetRef(1, x, 1), attacker, TR, value) for x in targets])


def test_overall_winner_excluded_from_both_attacker_awards():
    teams = (1, 2, 3, 4)
    # team 1: overall 0.9+0.9 (winner), but best anonymizer RE is team 2 (0.95), TR team 3 (0.95)
    s_i = {1: 0.9, 2: 0.95, 3: 0.1, 4: 0.1}
    s_t = {1: 0.9, 2: 0.1, 3: 0.95, 4: 0.1}
    # team 1 is the strongest attacker in both kinds; team 4 second
    attacks = judge(teams, s_i, s_t) + cross(1, (2, 3, 4), 0.9) + cross(4, (1, 2, 3), 0.95)
    res = run(one_round(teams), attacks)
    assert res.award(OVERALL).team == 1
    assert res.award(BEST_ANONYMIZER_REID).team == 2
    assert res.award(BEST_ANONYMIZER_TRACE).team == 3
    a = res.award(BEST_ATTACKER_REID)
    # sums over 6 target sets: team 1: 3 x 0.9 + 3 x 1 = 5.7 (excluded);
    # team 4: 3 x 0.95 + 3 = 5.85; teams 2, 3 attacked nothing (not eligible)
    assert res.team_total(1).attack_sum_i == pytest.approx(5.7)
    assert (a.team, a.excluded) == (4, (1, 2))
    assert a.value == pytest.approx(5.85)
    assert res.award(BEST_ATTACKER_TRACE).excluded == (1, 3)
    assert res.award(BEST_ATTACKER_TRACE).team == 4


def test_best_anonymizer_excluded_only_from_its_own_kind():
    teams = (1, 2, 3)
    s_i = {1: 0.9, 2: 0.95, 3: 0.1}   # best RE anonymizer: 2
    s_t = {1: 0.9, 2: 0.1, 3: 0.2}    # overall: 1 (1.8); best TR anonymizer: 1
    # team 2 is the best attacker of both kinds, team 3 second
    attacks = judge(teams, s_i, s_t) + cross(2, (1, 3), 0.5) + cross(3, (1, 2), 0.7)
    res = run(one_round(teams), attacks, teams=teams)
    assert res.award(OVERALL).team == 1 and res.award(BEST_ANONYMIZER_REID).team == 2
    assert res.award(BEST_ANONYMIZER_TRACE).team == 1
    # RE: team 2 excluded as best RE anonymizer -> team 3
    assert res.award(BEST_ATTACKER_REID).team == 3
    assert res.award(BEST_ATTACKER_REID).excluded == (1, 2)
    # TR: only team 1 excluded (winner and best TR anonymizer) -> team 2 wins
    assert res.award(BEST_ATTACKER_TRACE).team == 2
    assert res.award(BEST_ATTACKER_TRACE).excluded == (1,)


def test_paper_variant_has_no_exclusions_and_ranks_trace_anonymizer():
    teams = (1, 2, 3)
    s_i = {1: 0.99, 2: 0.1, 3: 0.1}
    s_t = {1: 0.5, 2: 0.6, 3: 0.4}
    attacks = judge(teams, s_i, s_t)
    attacks += [AttackRow(SetRef(1, 3, c), 2, k, 0.1) for c in (1, 2) for k in (RE, TR)]
    attacks += [AttackRow(SetRef(1, 1, c), 2, k, 0.1) for c in (1, 2) for k in (RE, TR)]
    attacks += [AttackRow(SetRef(1, 1, 1), 3, k, 0.5) for k in (RE, TR)]
    v14 = run(one_round(teams), attacks, teams=teams)
    paper = run(one_round(teams), attacks, teams=teams, variant="paper")
    # minima: t1 (0.1, 0.1), t2 (0.1, 0.6), t3 (0.1, 0.1) -- team 2's attacks at 0.1 lower t1 and t3
    # TR attacker sums: t2 4 x 0.1 = 0.4; t3 0.5 + 3 x 1 = 3.5; t1 made no attack (not eligible)
    # 2019: team 2 is the overall winner (0.7) and best TR anonymizer -> excluded -> team 3
    assert v14.award(OVERALL).team == 2
    assert v14.award(BEST_ANONYMIZER_TRACE).team == 2
    assert v14.award(BEST_ATTACKER_TRACE).team == 3
    assert v14.award(BEST_ATTACKER_REID).team == 3
    # paper: no exclusions, so team 2 wins best anonymization and both attacker awards
    assert paper.award(BEST_ANONYMIZER).team == 2
    assert paper.award(BEST_ATTACKER_TRACE).team == 2
    assert paper.award(BEST_ATTACKER_TRACE).value == pytest.approx(0.4)
    assert paper.award(BEST_ATTACKER_REID).team == 2
    assert {a.award for a in paper.awards} == {BEST_ANONYMIZER, BEST_ATTACKER_REID, BEST_ATTACKER_TRACE}


# --------------------------------------------------------------------------
# counting rules of the attacker sum
# --------------------------------------------------------------------------
def test_attacker_sum_counting_rules():
    teams = (1, 2, 3)
    # team 3's IDP set invalid, team 2's TRP set unsubmitted
    util = [r for r in one_round(teams, bench=9, invalid={(3, 1)}) if r.set != SetRef(1, 2, 2)]
    attacks = [AttackRow(SetRef(1, 2, 1), 1, RE, 0.4), AttackRow(SetRef(1, 2, 1), 1, RE, 0.3),
               AttackRow(SetRef(1, 9, 1), 1, RE, 0.2)]
    res = run(util, attacks, teams=teams, bench=9)
    # team 1 targets: t2c1 (0.3 best of two), t3c2 (valid, unattacked: 1), bench (0.2);
    # own sets, invalid t3c1 and unsubmitted t2c2 count 0 -> 1.5
    tr = res.team_round(1, 1)
    assert tr.n_targets == 3 and tr.attack_sum_i == pytest.approx(1.5)
    assert tr.attack_sum_t == pytest.approx(3.0)  # nothing attacked: every target 1, bench too
    # team 2 attacked nothing: t1c1, t1c2, t3c2, bench -> 4
    assert res.team_round(1, 2).attack_sum_i == pytest.approx(4.0)
    # team 1 made the only RE attacks but is the overall winner (2.0 vs 1.0 + 0 for teams 2
    # and 3): excluded, so the RE attacker award is vacant; nobody made a TR attack
    assert res.award(OVERALL).team == 1
    assert res.standing(BEST_ATTACKER_REID) == ()
    assert res.award(BEST_ATTACKER_REID) is None and res.award(BEST_ATTACKER_TRACE) is None


def test_a_benchmark_set_per_challenge_is_one_attacker_term_each():
    """The platform generates a benchmark set per challenge (rules §9.4 writes one term, s_I(bench); the
    README's note says why): each is a target like a team's set, counting 1 unless attacked."""
    teams = (1, 2)
    util = one_round(teams) + [UtilityRow(SetRef(1, 9, c), 1.0, True, None) for c in (1, 2)]
    attacks = [AttackRow(SetRef(1, 9, 1), 1, RE, 0.2)]
    res = run(util, attacks, teams=teams, bench=9)
    # team 1: team 2's two sets (unattacked: 1 each) + bench IDP (0.2) + bench TRP (unattacked: 1)
    assert res.team_round(1, 1).attack_sum_i == pytest.approx(3.2)
    assert res.team_round(1, 1).n_targets == 4
    # team 2 attacked nothing: team 1's two sets and both benchmark sets count 1
    assert res.team_round(1, 2).attack_sum_i == pytest.approx(4.0)
    one_bench = run(one_round(teams, bench=9), attacks, teams=teams, bench=9)  # the 2019 layout: one term
    assert one_bench.team_round(1, 2).attack_sum_i == pytest.approx(3.0)


def test_unattacked_valid_set_minimum_is_one_and_invalid_is_zero():
    util = one_round((1, 2), invalid={(2, 2)})
    res = run(util, [], teams=(1, 2))
    assert res.set_result(SetRef(1, 1, 1)).s_i_min == 1.0
    assert res.set_result(SetRef(1, 1, 1)).s_t_min == 1.0
    assert res.set_result(SetRef(1, 2, 2)).s_t_min == 0.0


# --------------------------------------------------------------------------
# tie-break
# --------------------------------------------------------------------------
def tied_pair(times):
    teams = (1, 2)
    s = {1: 0.5, 2: 0.5}
    return run(one_round(teams, times=times), judge(teams, s, s), teams=teams)


def test_tie_break_earlier_final_submission_wins():
    res = tied_pair({1: t(30), 2: t(10)})
    a = res.award(OVERALL, 1)
    assert (a.team, a.decided_by, a.tied_with) == (2, "earlier-final-submission", (1,))
    assert res.award(OVERALL, 2).team == 1
    assert res.award(OVERALL, 2).decided_by == "score"  # last place: nobody below it


def test_tie_break_missing_time_ranks_last():
    res = tied_pair({1: None, 2: t(10)})
    assert res.award(OVERALL).team == 2
    assert res.award(OVERALL).decided_by == "earlier-final-submission"


def test_tie_break_falls_back_to_team_id_when_times_equal():
    res = tied_pair({1: t(10), 2: t(10)})
    a = res.award(OVERALL)
    assert (a.team, a.decided_by) == (1, "team-id")


def test_tie_break_uses_latest_final_set_over_rounds():
    # team 1 submitted first in round 1 but last in round 2 -> its final submission is later
    util = [UtilityRow(SetRef(1, 1, 1), 0.9, True, t(0)), UtilityRow(SetRef(1, 2, 1), 0.9, True, t(5)),
            UtilityRow(SetRef(2, 1, 1), 0.9, True, t(100)), UtilityRow(SetRef(2, 2, 1), 0.9, True, t(90))]
    res = compute_results(teams=(1, 2), round_weights={1: 0.1, 2: 0.9}, utility=util, attacks=[])
    a = res.award(BEST_ANONYMIZER_REID)
    assert (a.team, a.decided_by) == (2, "earlier-final-submission")


def test_near_equal_floats_tie():
    teams = (1, 2)
    util = one_round(teams, times={1: t(20), 2: t(10)})
    attacks = judge(teams, {1: 0.45, 2: 0.35}, {1: 0.4, 2: 0.5})  # 0.85000000000000001 vs 0.85
    res = run(util, attacks, teams=teams)
    assert res.team_total(1).overall != res.team_total(2).overall  # float noise is real
    assert res.award(OVERALL).team == 2
    assert res.award(OVERALL).decided_by == "earlier-final-submission"


def test_sole_candidate():
    res = run(one_round((1, 2), invalid={(2, 1), (2, 2)}), [], teams=(1, 2))
    assert res.award(OVERALL).decided_by == "sole-candidate"
    assert res.award(OVERALL, 2) is None   # team 2 has no valid set: not eligible


def test_no_eligible_team_leaves_award_vacant():
    res = run(one_round((1, 2), invalid={(1, 1), (1, 2), (2, 1), (2, 2)}), [], teams=(1, 2))
    assert res.awards == ()


# --------------------------------------------------------------------------
# determinism and recomputation
# --------------------------------------------------------------------------
def contest_rows():
    rng = random.Random(7)
    teams = (1, 2, 3, 4, 5)
    util = []
    for r in (1, 2):
        for team in teams:
            for c in (1, 2):
                valid = rng.random() > 0.15
                util.append(UtilityRow(SetRef(r, team, c), rng.random(), valid, t(rng.randrange(1000))))
        util.append(UtilityRow(SetRef(r, 6, 1), 1.0, True, None))
    attacks = []
    for u in util:
        if not u.valid:
            continue
        for j in ("I1", "I2", "T1"):
            attacks.append(AttackRow(u.set, j, RE if j[0] == "I" else TR, round(rng.random(), 3)))
        for a in teams:
            if a != u.set.team and rng.random() < 0.6:
                for _ in range(rng.randint(1, 2)):
                    attacks.append(AttackRow(u.set, a, rng.choice((RE, TR)), round(rng.random(), 3),
                                             t(rng.randrange(2000))))
    return teams, util, attacks


def test_shuffled_input_gives_identical_results():
    teams, util, attacks = contest_rows()
    ref = compute_results(teams=teams, benchmark_team=6, round_weights={1: 0.1, 2: 0.9},
                          utility=util, attacks=attacks)
    ref_json = json.dumps(ref.to_dict(), sort_keys=True)
    for seed in range(5):
        rng = random.Random(seed)
        u, a, tm = list(util), list(attacks), list(teams)
        rng.shuffle(u), rng.shuffle(a), rng.shuffle(tm)
        got = compute_results(teams=tm, benchmark_team=6, round_weights={2: 0.9, 1: 0.1},
                              utility=u, attacks=a)
        assert got == ref
        assert json.dumps(got.to_dict(), sort_keys=True) == ref_json


def test_late_attack_recomputes_target_minimum():
    teams, util, attacks = contest_rows()
    kw = dict(teams=teams, benchmark_team=6, round_weights={1: 0.1, 2: 0.9}, utility=util)
    before = compute_results(attacks=attacks, **kw)
    target = next(u.set for u in util if u.valid and u.set.team == 2 and u.set.round == 2)
    old = before.set_result(target)
    late = AttackRow(target, 3, TR, 0.0, t(5000))
    after = compute_results(attacks=attacks + [late], **kw)
    assert after.set_result(target).s_t_min == 0.0 < old.s_t_min
    assert after.set_result(target).s_t_min_by == (3,)
    assert after.set_result(target).n_attacks_t == old.n_attacks_t + 1
    # the attacker's sum falls by its previous value on that target (1 if unattacked before)
    prev = before.cell(3, target, TR)
    drop = prev.best if prev else 1.0
    assert after.team_round(2, 3).attack_sum_t == pytest.approx(before.team_round(2, 3).attack_sum_t - drop)
    # every other set is unchanged
    for s in after.sets:
        if s.set != target:
            assert s == before.set_result(s.set)


# --------------------------------------------------------------------------
# rows that do not count, and rows that cannot be read
# --------------------------------------------------------------------------
def test_self_attack_is_ignored_and_reported():
    util = one_round((1, 2))
    res = run(util, [AttackRow(SetRef(1, 1, 1), 1, RE, 0.0)], teams=(1, 2))
    assert res.set_result(SetRef(1, 1, 1)).s_i_min == 1.0
    assert res.ignored == ("reidentification attack by team 1 on its own set r1-t1-c1: not counted",)
    assert res.award(BEST_ATTACKER_REID) is None


@pytest.mark.parametrize("kwargs, attack, message", [
    ({}, AttackRow(SetRef(1, 1, 1), 7, RE, 0.5), "attacker team 7 is not a participating team"),
    ({}, AttackRow(SetRef(1, 1, 1), 2, "guess", 0.5), "kind 'guess'"),
    ({}, AttackRow(SetRef(1, 1, 1), 2, RE, 1.5), "score 1.5 is outside [0, 1]"),
    ({}, AttackRow(SetRef(2, 1, 1), 2, RE, 0.5), "no utility row for this set"),
    ({}, AttackRow(SetRef(1, 1, 1), 2, RE, 0.5, datetime(2019, 1, 1)), "has no time zone"),
    ({}, AttackRow(SetRef(1, 1, 1), True, RE, 0.5), "attacker must be a team id"),
    ({"variant": "2020"}, None, "unknown award variant '2020'"),
    ({"tie_break": "coin"}, None, "unknown tie-break 'coin'"),
])
def test_bad_rows_raise_specific_errors(kwargs, attack, message):
    with pytest.raises(ValueError) as e:
        run(one_round((1, 2)), [attack] if attack else [], teams=(1, 2), **kwargs)
    assert message in str(e.value)


def test_bad_utility_rows_raise():
    util = one_round((1, 2))
    with pytest.raises(ValueError, match="more than one utility row"):
        run(util + [util[0]], [], teams=(1, 2))
    with pytest.raises(ValueError, match="round 3 has no weight"):
        run(util + [UtilityRow(SetRef(3, 1, 1), 0.9, True)], [], teams=(1, 2))
    with pytest.raises(ValueError, match="team 8 is neither"):
        run(util + [UtilityRow(SetRef(1, 8, 1), 0.9, True)], [], teams=(1, 2))
    with pytest.raises(ValueError, match="challenge must be 1"):
        SetRef(1, 1, 3)
    with pytest.raises(ValueError, match="benchmark team 2 is also listed"):
        run(util, [], teams=(1, 2), bench=2)
