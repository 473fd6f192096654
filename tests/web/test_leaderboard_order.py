"""The leaderboard shows the judge's own ranking: its order equals the awards' order for every tie-break.

A hand-made round in which teams 1 and 2 tie on every value the leaderboard ranks by (overall,
s_I,min of the IDP set, s_T,min of the TRP set) while team 2 submitted its final sets earlier:
the tie-break alone decides, so the two rules give different orders and a page that ranked on
its own (as the removed ``rank_rows`` did, always by time) disagrees with the awards under one of them.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from contest.models import ResultsSnapshot
from contest.services.results import upgraded_snapshot_data
from scoring.results import (
    IDP,
    REIDENTIFICATION,
    TIE_BREAKS,
    TRACE_INFERENCE,
    TRP,
    AttackRow,
    SetRef,
    UtilityRow,
    compute_results,
)

pytestmark = pytest.mark.django_db


def at(hour):
    return datetime(2026, 3, 1, hour, tzinfo=UTC)


UTILITY = [
    UtilityRow(SetRef(1, 1, IDP), 0.9, True, at(11)), UtilityRow(SetRef(1, 1, TRP), 0.9, True, at(12)),
    UtilityRow(SetRef(1, 2, IDP), 0.9, True, at(9)), UtilityRow(SetRef(1, 2, TRP), 0.9, True, at(10)),
    UtilityRow(SetRef(1, 3, IDP), 0.9, True, at(8)), UtilityRow(SetRef(1, 3, TRP), 0.9, True, at(8)),
]
ATTACKS = [  # teams 1 and 2: s_I,min 0.5, s_T,min 0.25 each (overall 0.75); team 3: 0.25 + 0.125
    AttackRow(SetRef(1, 1, IDP), "I2", REIDENTIFICATION, 0.5), AttackRow(SetRef(1, 1, TRP), "T2", TRACE_INFERENCE, 0.25),
    AttackRow(SetRef(1, 2, IDP), "I2", REIDENTIFICATION, 0.5), AttackRow(SetRef(1, 2, TRP), "T2", TRACE_INFERENCE, 0.25),
    AttackRow(SetRef(1, 3, IDP), "I2", REIDENTIFICATION, 0.25), AttackRow(SetRef(1, 3, TRP), "T2", TRACE_INFERENCE, 0.125),
    AttackRow(SetRef(1, 3, IDP), 1, REIDENTIFICATION, 0.75, at(13)),
]
EXPECTED = {"earlier-final-submission": ["002 Beta", "001 Alpha", "003 Gamma"],
            "team-id": ["001 Alpha", "002 Beta", "003 Gamma"]}


def _table_rows(html: str, table_start: str) -> list[str]:
    """Row headers (team labels) of the first table after ``table_start``, in page order."""
    body = html[html.index(table_start):]
    body = body[:body.index("</table>")]
    return [re.sub(r"<.*?>.*", "", label, flags=re.S).strip()
            for label in re.findall(r'<th scope="row">(.*?)</th>', body, re.S)]


def _publish(contest, tie_break):
    contest.tie_break = tie_break
    contest.results_published_at = at(14)
    contest.save(update_fields=["tie_break", "results_published_at"])
    res = compute_results(teams=[1, 2, 3], round_weights={1: 1.0}, utility=UTILITY, attacks=ATTACKS,
                          tie_break=tie_break)
    # the snapshot's current shape (SNAPSHOT_VERSION: standing and all) around these results
    data = upgraded_snapshot_data(res.to_dict(), {1: "Final"})
    ResultsSnapshot.objects.create(contest=contest, data=data, sha256="0" * 64, published=True,
                                   published_at=at(14))
    return res


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_leaderboard_order_is_the_awards_order(make_contest, client, tie_break):
    contest = make_contest()
    res = _publish(contest, tie_break)
    board = client.get(f"/c/{contest.slug}/leaderboard/?round=total").content.decode()
    awards = client.get(f"/c/{contest.slug}/awards/").content.decode()
    by_round = client.get(f"/c/{contest.slug}/leaderboard/?round=1").content.decode()

    overall_standing = _table_rows(awards, "<caption>Overall")
    assert _table_rows(board, 'id="leaderboard"') == overall_standing == EXPECTED[tie_break]
    assert _table_rows(by_round, 'id="leaderboard"') == EXPECTED[tie_break]
    # the overall places the awards page announces, in place order
    places = [a.team for a in sorted((a for a in res.awards if a.award == "overall"), key=lambda a: a.place)]
    assert [f"{t:03d}" for t in places] == [label[:3] for label in EXPECTED[tie_break]]
    # each challenge table is ranked as its best-anonymizer award ranks
    for short, caption in (("IDP", "<caption>Best anonymizer (re-identification)"),
                           ("TRP", "<caption>Best anonymizer (trace inference)")):
        assert _table_rows(by_round, f'id="leaderboard-{short}"') == _table_rows(awards, caption), short


def test_a_tie_is_marked_on_both_teams(make_contest, client):
    contest = make_contest()
    _publish(contest, "team-id")
    board = client.get(f"/c/{contest.slug}/leaderboard/?round=total").content.decode()
    body = board[board.index('id="leaderboard"'):board.index("</table>", board.index('id="leaderboard"'))]
    rows = body.split("<tr")[2:]  # after the header row
    assert ["badge-warn" in r for r in rows] == [True, True, False]
