"""The results job keeps per-user score parts and stores bootstrap intervals in the snapshot."""
from __future__ import annotations

import numpy as np
import pytest

from contest.models import Score
from contest.services import results
from tests.contest.conftest import upload_all_and_close

pytestmark = pytest.mark.django_db


def test_score_rows_keep_per_user_parts_and_the_snapshot_holds_intervals(generated,
                                                                        django_capture_on_commit_callbacks):
    contest = upload_all_and_close(generated, {1: ("A1-none", {}), 2: ("A3-kRR", {"eps": 8.0}),
                                               3: ("A4-PL", {})}, django_capture_on_commit_callbacks)
    rows = Score.objects.filter(dataset__round__contest=contest, current=True)
    assert rows.filter(judge_attack__isnull=False).exists()
    for s in rows:
        num = np.asarray(s.per_user["num"])
        assert len(num) == contest.users_per_set
        value = num.sum() / np.sum(s.per_user["den"]) if "den" in s.per_user else num.mean()
        assert value == pytest.approx(s.value, abs=1e-12), (s.metric, s.source)
    snap = results.snapshot(contest)
    u = snap.data["uncertainty"]
    assert "error" not in u and u["replicates"] == 1000
    for s in snap.data["sets"]:
        iv = u["sets"][s["set"]["key"]]
        for field in ("s_u", "s_i_min", "s_t_min"):
            assert iv[field][0] <= s[field] <= iv[field][1]
    board = snap.data["leaderboards"]["total"]
    assert [r["team"] for r in u["leaderboards"]["total"]] == [r["team"] for r in board]
    assert set(u["awards"]) == {f"{a['award']}-{a['place']}" for a in snap.data["awards"]}
    assert all(0.0 <= p <= 1.0 for p in u["awards"].values())
