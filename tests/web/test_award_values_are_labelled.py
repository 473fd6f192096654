"""Same place, two values, both labelled (issue 22 item 7): the awards page shows round-weighted values
and says so (and how the rounds are weighted); the leaderboard's round tab, where it opens, shows the
round's own values and says they are before the round's weight; the "Weighted total" tab shows the
awards' values."""
from __future__ import annotations

import re

import pytest
from django.template.defaultfilters import floatformat
from django.test import Client
from django.utils import translation
from django.utils.translation import gettext

from contest.services import results
from tests.contest.test_round_publishing import close_attack_phase, judge_api, play, two_rounds

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_weighted_and_unweighted_values_are_labelled(django_capture_on_commit_callbacks):
    contest = two_rounds()
    r1 = contest.rounds.get(number=1)
    play(r1, django_capture_on_commit_callbacks)
    close_attack_phase(r1, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert judge_api().post(f"/api/contests/{contest.slug}/publish/", {"round": 1},
                                format="json").status_code == 202
    snap = results.published_snapshot(contest)
    overall = next(a for a in snap.data["awards"] if a["award"] == "overall" and a["place"] == 1)
    round_value = next(tr["overall"] for tr in snap.data["team_rounds"] if tr["team"] == overall["team"])
    assert overall["value"] == pytest.approx(0.1 * round_value)  # the preliminary round weighs 0.1
    public = Client()

    awards = public.get(f"/c/{contest.slug}/awards/").content.decode()
    card = re.search(r"<h2>Overall, place 1</h2>.*?</section>", awards, re.S).group(0)
    assert re.search(rf'<span class="mono">{re.escape(floatformat(overall["value"], 4))}</span> '
                     r'<span class="small muted value-basis">weighted total: Preliminary × 0.1</span>', card)
    assert 'id="weighting-note"' in awards and "Value (weighted total)" in awards

    board = public.get(f"/c/{contest.slug}/leaderboard/").content.decode()  # opens on the round tab
    assert 'aria-current="page"' in re.search(r'<a href="\?round=1"[^>]*>', board).group(0)
    assert "(this round's values, unweighted)</span>" in board
    note = re.search(r'<span id="round-values-note">(.*?)</span>', board, re.S).group(1)
    assert "before its weight (0.1)" in note and "Weighted total" in note
    assert floatformat(round_value, 4) in board

    total = public.get(f"/c/{contest.slug}/leaderboard/?round=total").content.decode()
    assert "Teams, weighted total over the rounds" in total and "Preliminary × 0.1" in total
    first_row = re.search(r'<table[^>]*id="leaderboard".*?<tbody>\s*<tr.*?</tr>', total, re.S).group(0)
    assert f"<strong>{floatformat(overall['value'], 4)}</strong>" in first_row

    # after the final publish the page opens on the weighted total, which decides the awards, in both languages
    r2 = contest.rounds.get(number=2)
    play(r2, django_capture_on_commit_callbacks)
    close_attack_phase(r2, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        assert judge_api().post(f"/api/contests/{contest.slug}/publish/", {}, format="json").status_code == 202
    for lang, caption in (("en", "Teams, weighted total over the rounds"), ("ja", _ja("Teams, weighted total over the rounds"))):
        public.cookies["django_language"] = lang
        board = public.get(f"/c/{contest.slug}/leaderboard/").content.decode()
        assert 'aria-current="page"' in re.search(r'<a href="\?round=total"[^>]*>', board).group(0), lang
        assert caption in board and 'id="round-values-note"' not in board


def _ja(text: str) -> str:
    with translation.override("ja"):
        return gettext(text)
