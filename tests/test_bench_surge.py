"""The pure parts of ``make bench-surge`` (bench/surge.py): the percentiles it prints, the deadline's
accounting, the teams' wait ratio and the upload schedule. The bench itself (a 2019-size round, about
25 minutes) is run by hand; docs/benchmarks.md gives the command and the figures."""
import math

import numpy as np
import pytest

from bench.surge import deadline_errors, send_times, spread, wait_over_median


def test_spread_gives_p50_p95_and_max():
    values = [float(v) for v in range(1, 101)]  # 1..100 s
    p50, p95, most = spread(values)
    assert p50 == pytest.approx(50.5)
    assert p95 == pytest.approx(95.05)
    assert most == 100.0
    assert spread([7.0]) == (7.0, 7.0, 7.0)
    assert all(math.isnan(x) for x in spread([]))


def test_deadline_errors_count_refusals_before_and_acceptances_after():
    deadline = 1000.0
    requests = [(990.0, 202), (999.9, 202),   # begun before, accepted: right
                (999.5, 409), (998.0, 0),     # begun before, refused or unanswered: errors
                (1000.0, 409), (1002.0, 403),  # begun at or after, refused: right
                (1000.5, 202)]                # begun after, accepted: an error
    assert deadline_errors(requests, deadline) == (2, 1)
    assert deadline_errors([], deadline) == (0, 0)


def test_wait_over_median_is_the_worst_team_over_the_median_team():
    assert wait_over_median({1: 10.0, 2: 10.0, 3: 10.0}) == pytest.approx(1.0)
    assert wait_over_median({1: 5.0, 2: 10.0, 3: 30.0}) == pytest.approx(3.0)
    assert math.isnan(wait_over_median({}))


def test_send_times_lie_in_the_window_and_three_teams_send_in_its_last_two_seconds():
    before = send_times(np.random.default_rng(1), teams=20, per_team=5, window=60.0)
    assert before.shape == (20, 5)
    assert (before > 0).all() and (before <= 60.0).all()
    assert (np.diff(before, axis=1) <= 0).all()  # each team's uploads in time order: seconds before, falling
    assert sorted(before[:, -1])[:3] == pytest.approx([0.4, 1.2, 2.0])
