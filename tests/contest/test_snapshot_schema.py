"""Results snapshots carry their shape's version; older shapes are migrated, and pages read one shape.

A snapshot of the old shape (no ``version``, ``leaderboards``, ``standing`` or ``correlation``: what
the results job stored before them) goes through the data migration ``0016_snapshot_schema_version``
and comes out with the leaderboards the judge computes for the same results, ties and tie-breaks
included, and its leaderboard page ranks the teams.
"""
from __future__ import annotations

import importlib
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps

from contest.models import ResultsSnapshot
from contest.services import results as results_service
from contest.services.results import SNAPSHOT_VERSION
from scoring.results import REIDENTIFICATION as RE
from scoring.results import TRACE_INFERENCE as TR
from scoring.results import AttackRow, SetRef, UtilityRow, compute_results, leaderboards_of

MIGRATION = importlib.import_module("contest.migrations.0016_snapshot_schema_version")
T0 = datetime(2019, 10, 1, 12, 0, tzinfo=UTC)


def _two_rounds():
    """Results of 4 teams over two rounds: teams 2 and 3 tie on every value (the earlier final upload
    wins), team 4's TRP set of round 2 is invalid, team 1 uploads nothing in round 2."""
    s_i = {1: 0.30, 2: 0.55, 3: 0.55, 4: 0.70}
    s_t = {1: 0.40, 2: 0.20, 3: 0.20, 4: 0.10}
    utility, attacks = [], []
    for rnd in (1, 2):
        for team in (1, 2, 3, 4):
            if rnd == 2 and team == 1:
                continue
            for c in (1, 2):
                valid = not (rnd == 2 and team == 4 and c == 2)
                ref = SetRef(rnd, team, c)
                utility.append(UtilityRow(ref, 0.9 if valid else 0.4, valid, T0 + timedelta(hours=rnd, minutes=5 - team)))
                attacks.append(AttackRow(ref, "I1", RE, s_i[team] if c == 1 else 1.0))
                attacks.append(AttackRow(ref, "T1", TR, s_t[team] if c == 2 else 1.0))
    return compute_results(teams=(1, 2, 3, 4), benchmark_team=None, round_weights={1: 0.1, 2: 0.9},
                           utility=utility, attacks=attacks)


def test_leaderboards_of_a_stored_result_are_the_judges_own():
    full = _two_rounds().to_dict()
    assert {"total", "round-1", "round-2", "round-2-challenge-1", "round-2-challenge-2"} <= set(full["leaderboards"])
    assert any(row["tied"] for board in full["leaderboards"].values() for row in board)  # the tie-break matters
    old = {k: v for k, v in full.items() if k != "leaderboards"}
    assert leaderboards_of(old) == full["leaderboards"]


@pytest.mark.django_db
def test_an_old_snapshot_is_migrated_to_the_current_shape_and_its_page_ranks_the_teams(make_contest, client):
    contest = make_contest()
    full = _two_rounds().to_dict()
    old = {k: v for k, v in full.items() if k not in ("leaderboards", "standing", "correlation", "version")}
    snap = ResultsSnapshot.objects.create(contest=contest, data=old, sha256="0" * 64, published=True)
    current = ResultsSnapshot.objects.create(contest=contest, data={**full, "version": SNAPSHOT_VERSION,
                                                                    "marker": "untouched"}, sha256="1" * 64)

    MIGRATION.upgrade_snapshots(apps, None)

    snap.refresh_from_db()
    assert snap.data["version"] == SNAPSHOT_VERSION
    assert snap.data["leaderboards"] == full["leaderboards"]
    assert snap.data["standing"]["final"] is True
    assert [r["number"] for r in snap.data["standing"]["rounds"]] == [1, 2]
    assert all(r["included"] for r in snap.data["standing"]["rounds"])
    assert set(snap.data["correlation"]) == {"1", "2"}
    assert {k: snap.data[k] for k in old} == old and snap.sha256 == "0" * 64  # nothing else changes
    current.refresh_from_db()
    assert current.data["marker"] == "untouched"
    current.delete()

    snap.published_at = contest.results_published_at = datetime.now(UTC)
    snap.save()
    contest.save()
    html = client.get(f"/c/{contest.slug}/leaderboard/").content.decode()
    ranks = re.findall(r'<td class="num" data-sort="(\d*)">', html)
    assert ranks[:4] == ["1", "2", "3", "4"], ranks
    assert "listed by number" not in html


@pytest.mark.django_db
def test_a_new_snapshot_carries_the_current_version(generated):
    assert results_service.snapshot(generated).data["version"] == SNAPSHOT_VERSION
