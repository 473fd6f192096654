"""The leaderboard's CSV says what the page says (issue 22 item 4): for every round tab and the
weighted total, the CSV has the page table's rows in the page's order, and each cell of the page --
rank, the "tie" badge, the "≈" statistically tied badge, the team, the overall value and its interval,
s_U and validity of both sets, the minima, the attacker sums, the final submission -- is the CSV's
value as the page prints it. Both come from ``_board_rows`` and ``board_csv_columns``."""
from __future__ import annotations

import csv
import io
import re

import pytest
from django.template.defaultfilters import floatformat
from django.test import Client

from contest.services import results
from tests.contest.test_round_publishing import close_attack_phase, judge_api, play, two_rounds

pytestmark = pytest.mark.django_db


def _page_rows(html: str) -> list[list[str]]:
    """The raw HTML of each cell of each body row of the page's main table (#leaderboard)."""
    table = re.search(r'<table[^>]*id="leaderboard".*?</table>', html, re.S).group(0)
    rows = re.findall(r"<tr(?: [^>]*)?>\s*<td.*?</tr>", table, re.S)
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S) for row in rows]


def _text(cell: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", cell).split())


def _four(value: str) -> str:
    return floatformat(float(value), 4)


def test_the_csv_of_every_round_and_the_total_is_the_pages_table(django_capture_on_commit_callbacks):
    contest = two_rounds()
    for rnd in contest.rounds.order_by("number"):
        play(rnd, django_capture_on_commit_callbacks)
        close_attack_phase(rnd, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert judge_api().post(f"/api/contests/{contest.slug}/publish/", {}, format="json").status_code == 202
    snap = results.published_snapshot(contest)
    assert snap.data["standing"]["final"]
    public = Client()
    marks = 0
    for choice in ("1", "2", "total"):
        html = public.get(f"/c/{contest.slug}/leaderboard/?round={choice}").content.decode()
        response = public.get(f"/c/{contest.slug}/leaderboard.csv?round={choice}")
        assert response.status_code == 200
        rows = list(csv.DictReader(io.StringIO(response.content.decode())))
        page = _page_rows(html)
        assert len(rows) == len(page) == contest.teams.count(), choice
        for row, cells in zip(rows, page, strict=True):
            if choice == "total":
                rank, team, overall, s_i, s_t, sum_i, sum_t, final = cells
                assert "s_u_idp" not in row
            else:
                rank, team, overall, u_idp, u_trp, s_i, s_t, sum_i, sum_t, final = cells
                for cell, s_u, valid in ((u_idp, row["s_u_idp"], row["idp_valid"]),
                                         (u_trp, row["s_u_trp"], row["trp_valid"])):
                    assert _text(cell).startswith(_four(s_u)) and ("invalid" in cell) == (valid == "0")
            assert _text(rank).split()[0] == row["rank"]
            assert ("equal value; ranked by the tie-break" in rank) == (row["tied"] == "1")
            assert ("stat-tied" in rank) == (row["statistically_tied"] == "1"), (choice, row)
            marks += row["statistically_tied"] == "1"
            assert row["team_name"] in _text(team) and row["team"] in _text(team)
            assert _text(overall).startswith(_four(row["overall"]))
            lo, hi = float(row["overall_ci_low"]), float(row["overall_ci_high"])
            assert f"[{floatformat(lo, 3)}, {floatformat(hi, 3)}]" in _text(overall)
            assert lo <= float(row["overall"]) <= hi
            for cell, key in ((s_i, "s_i_min_idp"), (s_t, "s_t_min_trp"), (sum_i, "attacker_sum_s_i"),
                              (sum_t, "attacker_sum_s_t")):
                assert _text(cell) == _four(row[key]), (choice, key)
            assert f'datetime="{row["final_submission_at"]}"' in final
    # the teams all anonymize with the same algorithm: the page marks statistical ties, and so does the CSV
    assert marks > 0
