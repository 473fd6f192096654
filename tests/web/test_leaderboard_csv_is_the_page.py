"""The leaderboard's CSV says what the page says (issue 22 item 4): for every round tab and the
weighted total, the CSV has the page table's rows in the page's order, and each cell of the page --
rank, the "tie" badge, the "≈" statistically tied badge with its swap probability, the team, the overall
value and its interval, s_U and validity of both sets, the minima, the attacker sums, the final
submission -- is the CSV's value as the page prints it. Both come from ``_board_rows`` and
``board_csv_columns``. A round's CSV also holds its challenge tables (``table`` = IDP, TRP), and the
attack matrix's CSV is the page's matrix with its labels and its minimum row, in both languages."""
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


@pytest.mark.slow
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
        every = list(csv.DictReader(io.StringIO(response.content.decode())))
        rows = [r for r in every if r["table"] == "teams"]
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
            _check_mark(rank, row)
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
    challenge_marks = 0
    for language in ("en", "ja"):
        for choice in ("1", "2"):
            challenge_marks += _check_challenge_tables(public, contest.slug, choice, language)
            _check_attack_matrix(public, contest.slug, choice, language)
        assert public.get(f"/c/{contest.slug}/leaderboard.csv?round=total").content.decode().count("\nIDP,") == 0
    assert challenge_marks > 0


def _check_mark(rank: str, row: dict) -> None:
    """The "≈" mark of a rank cell shows the larger of the CSV's swap probabilities, and its title both."""
    probabilities = [float(row[k]) for k in ("swap_probability_above", "swap_probability_below") if row[k]]
    if row["statistically_tied"] != "1":
        return
    mark = re.search(r'class="badge badge-warn stat-tied" title="([^"]*)">≈&nbsp;([0-9.]+)</span>', rank)
    assert mark, rank
    assert mark.group(2) == floatformat(max(probabilities), 2) and max(probabilities) >= 0.05
    assert all(floatformat(p, 2) in mark.group(1) for p in probabilities)


def _table(html: str, table_id: str) -> tuple[list[str], list[list[str]], list[str]]:
    """(head cells, body rows' cells, foot cells) of the page's table ``table_id`` (each cell's HTML, tags included)."""
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, re.S).group(0)

    def cells(part):
        return re.findall(r"<t[hd][^>]*>.*?</t[hd]>", part, re.S)
    head = re.search(r"<thead>(.*?)</thead>", table, re.S)
    foot = re.search(r"<tfoot>(.*?)</tfoot>", table, re.S)
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
    rows = [cells(r) for r in re.findall(r"<tr(?: [^>]*)?>(.*?)</tr>", body, re.S)]
    return cells(head.group(1)) if head else [], rows, cells(foot.group(1)) if foot else []


def _check_challenge_tables(client, slug: str, choice: str, language: str) -> int:
    """The round's challenge tables on the page are the CSV's IDP and TRP rows; returns the "≈" marks."""
    html = client.get(f"/c/{slug}/leaderboard/?round={choice}", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    rows = list(csv.DictReader(io.StringIO(
        client.get(f"/c/{slug}/leaderboard.csv?round={choice}", HTTP_ACCEPT_LANGUAGE=language).content.decode())))
    marks = 0
    for short in ("IDP", "TRP"):
        _head, page, _foot = _table(html, f"leaderboard-{short}")
        mine = [r for r in rows if r["table"] == short]
        assert len(mine) == len(page) > 1, (choice, short)
        for row, (rank, team, s_u, validity, s_i, s_t, by_i, by_t, final) in zip(mine, page, strict=True):
            if row["benchmark"] == "1":
                assert row["rank"] == "" and "stat-tied" not in rank
            else:
                assert _text(rank).split()[0] == row["rank"]
                assert ("stat-tied" in rank) == (row["statistically_tied"] == "1"), (choice, short, row)
                _check_mark(rank, row)
                marks += row["statistically_tied"] == "1"
            assert ('class="badge badge-warn" title' in rank) == (row["tied"] == "1")
            assert row["team_name"] in _text(team) and f"{int(row['team']):03d}" in _text(team) or \
                row["benchmark"] == "1"
            assert _text(s_u) == _four(row["s_u"]) and ("badge-ok" in validity) == (row["valid"] == "1")
            for cell, key in ((s_i, "s_i_min"), (s_t, "s_t_min")):
                text = f"{_four(row[key])} ({row[key + '_attacks']})"
                if row[key + "_ci_low"]:
                    text += f" [{floatformat(float(row[key + '_ci_low']), 3)}, " \
                            f"{floatformat(float(row[key + '_ci_high']), 3)}]"
                assert _text(cell) == text, (short, key, row)
            assert _text(by_i) == (row["s_i_min_by"] or "—") and _text(by_t) == (row["s_t_min_by"] or "—")
            assert (f'datetime="{row["final_submission_at"]}"' in final) == bool(row["final_submission_at"])
    return marks


def _check_attack_matrix(client, slug: str, choice: str, language: str) -> None:
    """Each kind's matrix table on the page (labels, values, attempts, the minimum row) is the CSV's rows."""
    html = client.get(f"/c/{slug}/attack-matrix/?round={choice}", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    rows = list(csv.DictReader(io.StringIO(
        client.get(f"/c/{slug}/attack-matrix.csv?round={choice}", HTTP_ACCEPT_LANGUAGE=language).content.decode())))
    minimum = "最小値" if language == "ja" else "Minimum"
    for kind in ("reidentification", "trace_inference"):
        section = re.search(rf'<section aria-labelledby="h-{kind}">.*?</section>', html, re.S).group(0)
        head, body, foot = _table(section.replace("<table>", '<table id="m">'), "m")
        targets = [_text(c) for c in head[1:]]
        page = {}
        for cells in body:
            label = _text(re.sub(r'\s*<span class="badge.*', "", cells[0], flags=re.S))
            for target, cell in zip(targets, cells[1:], strict=True):
                if "heat-none" not in cell:
                    page[(label, target)] = (_text(cell), re.search(r'title="(\d+)', cell).group(1))
        page.update({(minimum, t): (_text(c), "") for t, c in zip(targets, foot[1:], strict=True)})
        mine = [r for r in rows if r["kind"] == kind]
        assert {(r["attacker_label"], r["target_label"]): (_four(r["best"]), r["attempts"]) for r in mine} == page
        assert len(mine) == len(page) and [r["attacker_label"] for r in mine][-1] == minimum
        assert [r["target_label"] for r in mine if r["attacker_label"] == minimum] == targets
    if language == "ja":
        assert any(r["target_label"].startswith("ベンチマーク") for r in rows)
