"""The privacy preview on the platform: the judge's own attack path, the preview job, its isolation from results."""
from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest

import scoring
from contest import job_kinds
from contest.models import AnonymizedSet, Dataset, Job, JudgeAttackResult, PrivacyPreview, PublicSet, Score
from contest.services import data, judge, previews, results, storage, uploads
from scoring.preview import prediction_interval, preview
from scoring.pseudonymize import Pseudonymized
from tests.contest.conftest import SMALL_USERS, anonymize_csv, user

pytestmark = pytest.mark.django_db


def _team_ds(contest, team_number, challenge):
    return Dataset.objects.get(round__contest=contest, number=team_number, challenge=challenge)


@pytest.mark.parametrize("mode", ["exact", "sample_2019"])
def test_preview_on_the_judges_pseudonymized_set_and_seeds_equals_the_judges_run(generated, mode):
    generated.judge_attack_mode = mode
    generated.save()
    ds = _team_ds(generated, 1, 1)
    uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=anonymize_csv(ds, "A4-PL", seed=3), name="a.csv"))
    rnd = generated.rounds.get()
    ps = PublicSet.objects.get(pk=next(p.pk for p in judge.close_anonymization(rnd) if p.dataset_id == ds.pk))
    judge.run_judge_attacks(ps)
    grid = generated.grid()
    truth = data.traces(ds.original, grid)
    pse, users = data.ptable(ps.ptable)
    pseud = Pseudonymized(data.pubtraces(ps.pubtraces, grid), pse, users, ps.commitment_nonce, ps.commitment)
    anon = data.anotraces(storage.read_csv_bytes(ps.anonymized_set.file), grid, truth)
    names = list(generated.judge_attacks)
    seeds = {name: judge.attack_seed(generated.seed, ps, name) for name in names}
    p = preview(grid, data.traces(ds.reference, grid), truth, anon, seed=0, pseudonymized=pseud, seeds=seeds,
                **judge.preview_settings(generated, rnd))
    stored = {r.algorithm: r for r in JudgeAttackResult.objects.filter(public_set=ps)}
    assert sorted(stored) == sorted(names)
    for outcome in p.attacks:
        r = stored[outcome.name]
        assert outcome.seed == r.seed and outcome.params == r.params
        assert outcome.score == r.score  # exactly: one attack path
        out = storage.read_bytes(r.output)
        written = data.etable_csv(outcome.output) if r.kind == "reidentification" else data.etraces_csv(outcome.output)
        assert written == out
    assert p.s_i_min == min(r.score for r in stored.values() if r.kind == "reidentification")
    assert not np.isnan(p.s_t_min)


def _upload(contest, team, challenge, capture, algorithm="A4-PL", **params):
    ds = _team_ds(contest, team, challenge)
    with capture(execute=True):
        aset = uploads.submit_anonymized_set(user=user(f"{ds.team.name.lower()}1"), dataset=ds, name="a.csv",
                                             content=anonymize_csv(ds, algorithm, seed=team, **params))
    aset.refresh_from_db()
    return aset


def test_a_valid_upload_gets_its_preview_by_a_low_priority_job(generated, django_capture_on_commit_callbacks):
    aset = _upload(generated, 1, 1, django_capture_on_commit_callbacks)
    assert aset.status == AnonymizedSet.VALID
    job = Job.objects.get(kind="privacy_preview")
    assert job.status == Job.SUCCEEDED and job.args == {"anonymized_set_id": aset.pk, "round_id": aset.dataset.round_id}
    assert job_kinds.rank("privacy_preview") > job_kinds.rank("score_anonymized") > job_kinds.rank("close_set")
    p = PrivacyPreview.objects.get(anonymized_set=aset)
    # the stored figures are scoring.preview's on the same set with the same seed and the judge's settings
    ds, grid = aset.dataset, generated.grid()
    truth = data.traces(ds.original, grid)
    anon = data.anotraces(storage.read_csv_bytes(aset.file), grid, truth)
    rnd = ds.round
    # ... with the attack seeds the judge's attacks will use on this dataset's public set
    assert p.summary["attack_seeds"] == judge.judge_attack_seeds(generated, ds)
    again = preview(grid, data.traces(ds.reference, grid), truth, anon, seed=p.seed,
                    seeds=p.summary["attack_seeds"], **judge.preview_settings(generated, rnd))
    s = p.summary
    assert s["s_u"] == aset.s_u and s["valid"] is True
    assert [(a["name"], a["score"]) for a in s["attacks"]] == [(a.name, a.score) for a in again.attacks]
    assert s["s_i_min"] == again.s_i_min and s["s_t_min"] == again.s_t_min
    assert s["version"] == scoring.__version__ and s["users"] == SMALL_USERS
    # the per-user CSV sums to the set's preview scores (minimum s_I and minimum s_T)
    rows = list(csv.DictReader(io.StringIO(storage.read_bytes(p.per_user).decode())))
    assert [int(r["user_id"]) for r in rows] == list(range(1, SMALL_USERS + 1))
    assert sum(float(r["s_i_contribution"]) for r in rows) == pytest.approx(s["s_i_min"], abs=1e-12)
    assert sum(float(r["s_t_contribution"]) for r in rows) == pytest.approx(s["s_t_min"], abs=1e-12)
    # the riskiest users first: named by the most attacks
    top = s["top_users"]
    assert len(top) == min(SMALL_USERS, previews.TOP_USERS)
    assert top[0][2] == max(int(r["n_reidentified"]) for r in rows)
    assert len(p.leak_map["home"]) == grid.M and p.leak_map["users"] == s["reidentified_users"]
    assert sum(p.leak_map["home"]) == p.leak_map["users"]
    # idempotent: a second delivery stores nothing new
    assert previews.compute_preview(aset) == p and PrivacyPreview.objects.count() == 1


def test_an_invalid_upload_gets_no_preview(generated, django_capture_on_commit_callbacks):
    aset = _upload(generated, 1, 1, django_capture_on_commit_callbacks, "A3-kRR", eps=0.0)
    assert aset.status == AnonymizedSet.INVALID
    assert not Job.objects.filter(kind="privacy_preview").exists() and not PrivacyPreview.objects.exists()


def test_nothing_of_the_preview_enters_the_results(generated, django_capture_on_commit_callbacks):
    aset = _upload(generated, 1, 1, django_capture_on_commit_callbacks)
    assert PrivacyPreview.objects.filter(anonymized_set=aset).exists()
    # the only score is the upload's utility; no judge attack ran, nothing was published
    assert list(Score.objects.values_list("metric", "anonymized_set")) == [("utility", aset.pk)]
    assert JudgeAttackResult.objects.count() == 0 and PublicSet.objects.count() == 0
    snapshot = results.compute(generated)
    PrivacyPreview.objects.all().delete()
    assert results.compute(generated) == snapshot


def test_a_phase_close_pre_empts_queued_previews(generated, django_capture_on_commit_callbacks):
    """The close skips the queued previews of sets that are not final (the final set's preview still runs:
    tests/contest/test_fair_queue.py)."""
    ds = _team_ds(generated, 1, 1)
    asets = []
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=False) as queued:  # the worker has not run anything yet
            asets.append(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds),
                                                       name="a.csv"))
        for send in queued:
            send()  # the upload is scored; its preview job is queued but not yet run
        if len(asets) == 1:
            uploads.select_anonymized_set(user=user("alpha1"), aset=asets[0])  # the first is the final set
    aset = asets[1]
    preview_job = Job.objects.get(kind="privacy_preview", args__anonymized_set_id=aset.pk)
    rnd = generated.rounds.get()
    with django_capture_on_commit_callbacks(execute=False):
        judge.request_close(rnd)
    preview_job.refresh_from_db()
    assert preview_job.status == Job.SUCCEEDED and "skipped" in preview_job.message
    # a preview that starts once the close is queued does nothing
    assert previews.compute_preview(aset) is None and not PrivacyPreview.objects.exists()


@pytest.mark.parametrize("extra", [{}, {"judge_attack_mode": "sample_2019", "s_req": 0.6, "lambda_t": 1.5,
                                        "judge_attacks": ["I1-rand", "I2-VisitProb", "T2-VisitProb"]}])
def test_the_shown_command_prints_the_previews_figures(make_contest, extra, tmp_path, capsys,
                                                       django_capture_on_commit_callbacks):
    """The team card's ``python -m scoring preview`` command, run on the team's files, prints exactly
    the stored preview's figures, whatever the contest's judge mode and parameters."""
    from contest.services.generation import generate_round_data
    from scoring.cli import main
    contest = make_contest(slug="cmd", extra=extra)
    rnd = contest.rounds.get()
    generate_round_data(rnd)
    rnd.refresh_from_db()
    aset = _upload(contest, 1, 1, django_capture_on_commit_callbacks)
    p = PrivacyPreview.objects.get(anonymized_set=aset)
    ds = aset.dataset
    files = {"info_region.csv": rnd.info_region, "info_time.csv": rnd.info_time, ds.reference.name: ds.reference,
             ds.original.name: ds.original, "anotraces.csv": aset.file}
    for name, stored in files.items():
        (tmp_path / name).write_bytes(storage.read_csv_bytes(stored))
    cmd = previews.preview_command(contest, ds, p.seed, p.summary["attack_seeds"])
    assert "--attack-seeds" in cmd
    assert cmd[:4] == ["python", "-m", "scoring", "preview"]
    argv = [str(tmp_path / a) if a in files or a == "risk.csv" else a for a in cmd[3:]]
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    for a in p.summary["attacks"]:
        assert re.search(rf"^{re.escape(a['name'])}\s+s_[IT] {a['score']!r}$", out, re.M), (a, out)
    assert f"s_I,min {p.summary['s_i_min']!r}" in out and f"s_T,min {p.summary['s_t_min']!r}" in out
    assert (tmp_path / "risk.csv").read_bytes() == storage.read_bytes(p.per_user)


def test_the_preview_says_what_it_is_same_file_same_preview_judge_seeds_and_an_interval(
        generated, django_capture_on_commit_callbacks):
    """Issue 22 item 5: the same file uploaded three times gets the same preview (the pseudonymization is
    seeded per dataset, the attacks with the judge's seeds); its attacks ran with the seeds the judge's
    attacks then use at the close; and the summary carries the 95% prediction interval of the judge's
    figure from several pseudonymizations, which holds the judge's minima here."""
    ds = _team_ds(generated, 1, 2)
    content = anonymize_csv(ds, "A4-PL", seed=5)
    asets = []
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            asets.append(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=content,
                                                       name="same.csv"))
    previews_ = [PrivacyPreview.objects.get(anonymized_set=a) for a in asets]
    first = previews_[0].summary
    for p in previews_[1:]:
        assert p.seed == previews_[0].seed
        assert [(a["name"], a["score"], a["seed"]) for a in p.summary["attacks"]] == \
            [(a["name"], a["score"], a["seed"]) for a in first["attacks"]]
        assert (p.summary["s_i_min"], p.summary["s_t_min"]) == (first["s_i_min"], first["s_t_min"])
    assert len(first["draws"]) == previews.DRAWS and first["draws"][0]["seed"] == previews_[0].seed
    assert len({d["seed"] for d in first["draws"]}) == previews.DRAWS
    assert first["interval"]["level"] == 0.95 and "range" not in first
    for key in ("s_i_min", "s_t_min"):
        interval = first["interval"][key]
        assert interval == prediction_interval([d[key] for d in first["draws"]])
        assert interval["low"] <= first[key] <= interval["high"]
    # the judge's attacks at the close run with exactly the seeds the preview used
    rnd = generated.rounds.get()
    ps = next(p for p in judge.close_anonymization(rnd) if p.dataset_id == ds.pk)
    judge.run_judge_attacks(ps)
    ran = {r.algorithm: r.seed for r in JudgeAttackResult.objects.filter(public_set=ps)}
    assert ran == {a["name"]: a["seed"] for a in first["attacks"]} == first["attack_seeds"]
    # the judge's figure is one more draw: here inside the 95% prediction interval (as 19 times in 20,
    # tests/scoring/test_preview_interval.py)
    published = JudgeAttackResult.objects.filter(public_set=ps, current=True)
    for key, kind in (("s_i_min", "reidentification"), ("s_t_min", "trace_inference")):
        judge_min = min(r.score for r in published if r.kind == kind)
        assert first["interval"][key]["low"] - 1e-12 <= judge_min <= first["interval"][key]["high"] + 1e-12
