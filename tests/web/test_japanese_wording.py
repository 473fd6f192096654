"""Japanese that read oddly (issue 40): the console's training note names the kind of file in Japanese
(it read 「運営が与えたtraces train.csv」), the analyses page's points-of-interest line ends with 「。」 (not an
ASCII period), and the reset mail says, as the English does, to ignore it if one did not ask for it (not
「(あなたご自身であれば幸いです)」)."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from contest.services import results
from tests.contest.conftest import user
from tests.contest.test_analyses import closed_small  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def test_the_training_note_names_traces_in_japanese(make_contest):
    from contest.services import training_data
    from scoring.io.writers import write_traces
    from scoring.traces import Traces
    contest = make_contest(slug="slots", synthesizer="coloc",
                           extra={"synthesizer_params": {"min_users": 2, "options": {"theta": 5}}})
    rnd = contest.rounds.get()
    n_ids = rnd.time_axis().slots_per_day
    traces = Traces(np.arange(1, 41), np.arange(1, n_ids + 1), np.random.default_rng(0).integers(
        0, contest.grid_nx * contest.grid_ny, (40, n_ids)).astype(np.int32))
    buf = io.BytesIO()
    write_traces(traces, buf)
    training_data.give_training_data(rnd, user=user("judge"), content=buf.getvalue(), name="train.csv",
                                     kind="traces")
    c = Client(HTTP_ACCEPT_LANGUAGE="ja")
    c.force_login(user("judge"))
    page = c.get(f"/console/{contest.slug}/").content.decode()
    note = re.search(r'<p class="small training">(.*?)</p>', page, re.S).group(1)
    assert "traces" not in note and "トレース train.csv" in note, note


def test_the_analyses_pages_points_of_interest_line_ends_in_a_japanese_period(closed_small, client):
    results.snapshot(closed_small)
    results.publish_results(closed_small)
    ja = client.get(f"/c/{closed_small.slug}/analyses/", HTTP_ACCEPT_LANGUAGE="ja").content.decode()
    line = re.search(r"関心地点[^<]*", ja.split("POI 精度:", 1)[1]).group(0)
    assert line.rstrip().endswith("。") and not re.search(r"箇所\s*\.", ja), line


def test_the_reset_mail_reads_naturally_in_japanese(generated):
    get_user_model().objects.filter(username="alpha1").update(email="alpha1@example.org")
    c = Client()
    c.cookies["django_language"] = "ja"
    c.post("/password-reset/", {"email": "alpha1@example.org"})
    body = mail.outbox[0].body
    assert "幸い" not in body and "あなたご自身" not in body, body
    assert "心当たりがない場合は無視してください" in body, body
