"""The organizer's own training data (issue 27 item 8): a round trained on the 2019 Osaka practice set's traces
or on a model trained offline; the data is read by the upload reader, readable by organizers only, and never
shown to teams or the public."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from contest import permissions
from contest.models import Dataset, Job, Round, StoredFile
from contest.services import jobs, storage, training_data
from contest.services.uploads import RuleViolation
from synth.calibrate import OSAKA
from tests.contest.conftest import user

pytestmark = pytest.mark.django_db

OSAKA_REF = OSAKA / "reftraces_team001_data01_IDP.csv"
needs_2019 = pytest.mark.skipif(not OSAKA_REF.exists(), reason="2019 Osaka data not present")


def _coloc_contest(make_contest, slug, **params):
    return make_contest(slug=slug, synthesizer="coloc",
                        extra={"synthesizer_params": {"min_users": 1000, "options": {"theta": 5}, **params}})


def _api(username, password="pw"):
    c = APIClient()
    r = c.post("/api/auth/token/", {"username": username, "password": password}, format="json")
    c.credentials(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    return c


def _generate(rnd):
    """The round's jobs as the workers run them: the model's job, then one job per data set."""
    job = jobs.create_job("generate_round", contest=rnd.contest, dispatch=False, round_id=rnd.pk)
    assert jobs.execute(job.pk) == Job.SUCCEEDED, Job.objects.get(pk=job.pk).error
    for set_job in Job.objects.filter(kind="generate_dataset", args__round_id=rnd.pk, status=Job.QUEUED):
        assert jobs.execute(set_job.pk) == Job.SUCCEEDED, Job.objects.get(pk=set_job.pk).error
    rnd.refresh_from_db()


@needs_2019
def test_a_round_trained_on_the_2019_osaka_traces_which_no_team_can_read(make_contest):
    from contest.services.generation import _round_seed
    from scoring.io import read_traces
    from synth import coloc
    from synth.methods import load_model
    # Large eps1 and eps2: p' and Q' are the exact statistics of the given traces up to tiny noise (the noise
    # comes from fresh randomness, never from a seed one could know).
    contest = _coloc_contest(make_contest, "own", eps1=1000.0, eps2=1000.0)
    rnd = contest.rounds.get()
    content = OSAKA_REF.read_bytes()
    # Through the API, as an organizer: the upload reader checks the file, the round says what trains it.
    judge = _api("judge", "judge-pass")
    r = judge.post(f"/api/rounds/{rnd.pk}/training/",
                   {"kind": "traces", "file": SimpleUploadedFile("osaka_ref.csv", content)}, format="multipart")
    assert r.status_code == 201, r.content
    shown = r.json()["training"]
    import hashlib
    sha = hashlib.sha256(content).hexdigest()
    assert shown == {"kind": "traces", "name": "osaka_ref.csv", "size": len(content), "sha256": sha,
                     "reading": {"users": 2000, "days": 2, "slots_per_day": 20, "time_ids": 40, "extra_slots": 0}}
    _generate(rnd)
    # The generation job trained the contest's method on these traces, with the contest's parameters.
    grid = contest.grid()
    traces = read_traces(content, grid)
    exact = coloc.exact_statistics(traces, grid, slots_per_day=20)
    model = load_model(storage.read_bytes(rnd.model_file))
    assert model.p_friend == pytest.approx(exact["p"], abs=1e-4)               # Lap(2 / (1000 x 1000))
    assert np.abs(model.Q - exact["Q"]).max() < 0.2 and exact["Q"].sum() > 0   # Lap(5 / 1000)
    again = coloc.train(traces, grid, min_users=1000, eps1=1000.0, eps2=1000.0, seed=_round_seed(rnd))
    assert not np.array_equal(model.Q, again.Q)                                # not the round's seed
    assert Dataset.objects.filter(round=rnd).count() == 12
    assert rnd.manifest["model"]["privacy"]["per_user"] == 2001.0
    # Organizers only: the file, the API's training view; nothing of it in the public API or the manifest.
    stored = rnd.training_data
    assert permissions.can_read_file(user("judge"), stored)
    assert not permissions.can_read_file(user("alpha1"), stored)
    alpha = _api("alpha1")
    assert alpha.get(f"/api/files/{stored.pk}/").status_code in (403, 404)
    assert alpha.get(f"/api/rounds/{rnd.pk}/training/").status_code == 403
    assert judge.get(f"/api/rounds/{rnd.pk}/training/").json()["training"]["sha256"] == sha
    public = json.dumps(APIClient().get(f"/api/contests/{contest.slug}/").json())
    team = json.dumps(alpha.get(f"/api/contests/{contest.slug}/").json())
    for text in (public, team, json.dumps(rnd.manifest)):
        assert sha not in text and "osaka_ref" not in text
    # The organizers' export of everything carries it (a row must find its file), byte for byte.
    from contest.services.transfer import export_contest
    buf = io.BytesIO()
    doc = export_contest(contest, buf)
    assert sha in {f["sha256"] for f in doc["files"]}
    # Too late once the data exists.
    with pytest.raises(RuleViolation, match="generated already"):
        training_data.give_training_data(rnd, user=user("judge"), content=content, name="again.csv", kind="traces")


@needs_2019
def test_a_round_from_a_model_trained_offline(make_contest):
    from django.test import Client

    from scoring.grid import Grid
    from scoring.io import read_traces
    from synth import coloc
    from synth.methods import load_model
    contest = _coloc_contest(make_contest, "offline")
    rnd = contest.rounds.get()
    traces = read_traces(OSAKA_REF.read_bytes(), Grid.from_info_region(OSAKA / "info_region.csv"))
    model = coloc.train(traces, contest.grid(), min_users=1000, seed=7)
    buf = io.BytesIO()
    model.save(buf)
    # Through the console.
    judge = Client()
    judge.force_login(user("judge"))
    r = judge.post(f"/console/{contest.slug}/rounds/{rnd.pk}/training/",
                   {"kind": "model", "file": SimpleUploadedFile("offline.npz", buf.getvalue())})
    assert r.status_code == 302
    rnd.refresh_from_db()
    assert rnd.training_kind == Round.TRAINING_MODEL and rnd.model_file_id == rnd.training_data_id
    page = judge.get(f"/console/{contest.slug}/").content.decode()
    assert "offline.npz" in page and rnd.training_data.sha256 in page
    _generate(rnd)
    assert load_model(storage.read_bytes(rnd.model_file)).p_friend == model.p_friend      # used as given
    assert rnd.manifest["model"]["p_friend"] == model.p_friend


def test_bad_training_data_is_a_clear_error_and_changes_nothing(make_contest):
    from synth import sglt
    from synth.city import CityModel
    contest = _coloc_contest(make_contest, "bad")
    rnd = contest.rounds.get()
    judge = user("judge")
    before = StoredFile.objects.count()
    cases = [
        ("traces", b"user_id,time_id,reg_id\n1,1,5000\n", r"training traces: line 2: region id 5000 is outside 1\.\.1024"),
        ("traces", b"user_id,time_id,reg_id\n" + b"".join(b"%d,%d,1\n" % (u, t) for u in (1, 2) for t in (1, 2)),
         "fewer than min_users = 1000"),
        ("model", b"not a zip", "model: not a model file"),
        ("csv", b"x", "kind 'csv'"),
    ]
    grid = contest.grid()
    other = sglt.train(CityModel(grid, seed=0).simulate(20, 2, seed=1), grid, clusters=3, seed=0)
    buf = io.BytesIO()
    other.save(buf)
    cases.append(("model", buf.getvalue(), "a sglt model, but the contest's synthesizer is coloc"))
    for kind, content, message in cases:
        with pytest.raises(RuleViolation, match=message):
            training_data.give_training_data(rnd, user=judge, content=content, name="x", kind=kind)
    rnd.refresh_from_db()
    assert rnd.training_data is None and rnd.model_file is None and StoredFile.objects.count() == before
    # A team member cannot give training data through the API.
    r = _api("alpha1").post(f"/api/rounds/{rnd.pk}/training/",
                            {"kind": "traces", "file": SimpleUploadedFile("t.csv", b"x")}, format="multipart")
    assert r.status_code == 403


@pytest.mark.slow
@needs_2019
def test_neighbouring_training_sets_give_pages_that_differ_only_in_noised_values(make_contest):
    """Two coloc rounds trained on the Osaka traces D and D minus one user: the API's round summary, the
    console's round card (apart from the organizer-only training file line) and the manifest's model and
    parameters are the same; what differs is noised (p', Q', the model) or computed from it (the data)."""
    import re

    from django.test import Client

    from scoring.grid import Grid
    from scoring.io import read_traces
    from scoring.io.writers import write_traces
    from scoring.traces import Traces
    full = read_traces(OSAKA_REF.read_bytes(), Grid.from_info_region(OSAKA / "info_region.csv"))
    keep = np.arange(full.m) != 17
    sub = Traces(np.arange(1, keep.sum() + 1), full.time_ids, full.regions[keep])
    seen = []
    for slug, traces in (("d", full), ("d-minus", sub)):
        contest = _coloc_contest(make_contest, slug)
        rnd = contest.rounds.get()
        buf = io.BytesIO()
        write_traces(traces, buf)
        training_data.give_training_data(rnd, user=user("judge"), content=buf.getvalue(), name="train.csv",
                                         kind="traces")
        _generate(rnd)
        judge = Client()
        judge.force_login(user("judge"))
        page = judge.get(f"/console/{slug}/").content.decode()
        # The co-locations planted follow the noisy p' (how many friends G' has): post-processing, left out.
        card = re.sub(r"\d+ co-locations planted", "N co-locations planted",
                      re.search(r"Generated by.*?</p>", page, re.S).group(0))
        model = dict(rnd.manifest["model"])
        assert model.pop("p_friend") is not None
        api = APIClient().get(f"/api/contests/{slug}/").json()["rounds"][0]["synthesizer"]
        assert 0 <= api.pop("planted") <= 12 * 5
        seen.append((card, model, rnd.manifest["parameters"], api))
    assert seen[0] == seen[1]
