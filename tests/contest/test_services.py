"""The judge pipeline at the service level: generation, uploads, rules, close, attacks, results."""
from __future__ import annotations

import gzip
import io
import json
import zipfile

import numpy as np
import pytest

from contest.models import AnonymizedSet, Attack, AuditLog, Dataset, JudgeAttackResult, Phase, PublicSet, Round, Score
from contest.services import data, judge, results, storage, uploads
from contest.services.generation import generate_round_data
from tests.contest.conftest import SMALL_USERS, anonymize_csv, move_phase, user

pytestmark = pytest.mark.django_db


def _team_ds(contest, team_number, challenge):
    return Dataset.objects.get(round__contest=contest, number=team_number, challenge=challenge)


def test_generation_creates_every_dataset_once(generated):
    rnd = generated.rounds.get()
    ds = list(Dataset.objects.filter(round=rnd))
    assert len(ds) == (3 + 3) * 2
    kinds = sorted((d.number, d.kind) for d in ds if d.challenge == 1)
    assert kinds == [(1, "team"), (2, "team"), (3, "team"), (4, "benchmark"), (5, "sample"), (6, "sample")]
    grid = generated.grid()
    ref = data.traces(ds[0].reference, grid)
    org = data.traces(ds[0].original, grid)
    assert ref.regions.shape == (SMALL_USERS, 2 * 20) and org.regions.shape == (SMALL_USERS, 2 * 20)
    assert org.time_ids[0] == 41
    before = {d.pk: (d.reference.sha256, d.original.sha256) for d in ds}
    generate_round_data(rnd)  # idempotent
    after = {d.pk: (d.reference.sha256, d.original.sha256) for d in Dataset.objects.filter(round=rnd)}
    assert before == after
    rnd.refresh_from_db()
    assert rnd.info_region is not None and rnd.manifest["sets"]


def test_ppmtf_generation_small(make_contest):
    contest = make_contest(slug="pp", synthesizer="ppmtf")
    rnd = contest.rounds.get()
    generate_round_data(rnd)
    rnd.refresh_from_db()
    assert rnd.model_file is not None
    assert Dataset.objects.filter(round=rnd).count() == 12
    assert "PPMTF" in Dataset.objects.filter(round=rnd).first().generator


@pytest.mark.slow  # each synthesizer trains and generates a round: make test runs it, make check does not
@pytest.mark.parametrize("method, params, generator", [
    ("sglt", {"train_users": 40, "train_days": 3, "clusters": 6, "options": {"max_tries": 3}}, "SGLT"),
    ("coloc", {"train_users": 40, "train_days": 3, "eps1": 5.0, "min_meetings": 1, "mechanism": "wavelet",
               "hierarchy": "categories",
               "options": {"theta": 10}}, "coloc"),
])
def test_every_synthesizer_generates_a_round_through_the_job(make_contest, method, params, generator):
    from contest.models import Job
    from contest.services import jobs
    from synth.methods import load_model
    contest = make_contest(slug=f"m-{method}", synthesizer=method, extra={"synthesizer_params": params})
    rnd = contest.rounds.get()
    job = jobs.create_job("generate_round", contest=contest, dispatch=False, round_id=rnd.pk)
    assert jobs.execute(job.pk) == Job.SUCCEEDED                             # the model, then a job per set
    for set_job in Job.objects.filter(kind="generate_dataset", status=Job.QUEUED):
        assert jobs.execute(set_job.pk) == Job.SUCCEEDED
    rnd.refresh_from_db()
    assert load_model(storage.read_bytes(rnd.model_file)).method == method      # stored, reused on a re-run
    sets = list(Dataset.objects.filter(round=rnd))
    assert len(sets) == 12 and all(d.generator.startswith(generator) for d in sets)
    grid = contest.grid()
    ref, org = data.traces(sets[0].reference, grid), data.traces(sets[0].original, grid)
    assert ref.regions.shape == (SMALL_USERS, 40) and org.time_ids[0] == 41
    manifest = rnd.manifest
    assert manifest["model"]["method"] == method and all("report" in s for s in manifest["sets"])
    from contest.api.serializers import RoundSerializer
    shown = RoundSerializer(rnd).data["synthesizer"]                         # what the API shows of it
    assert shown["generator"] == generator and "seed" not in json.dumps(shown)
    if method == "coloc":
        assert manifest["model"]["privacy"]["totals"] == {"training traces": 7.0}
        planted = [s["report"]["colocations_planted"] for s in manifest["sets"]]
        # theta = 10 a set unless p' (fresh noise, p = 0.083 here, scale 0.01) leaves too few friends to plant all
        assert max(planted) <= 10 and sum(planted) >= 100
        assert shown["budget"] == [["training traces", 7.0]] and shown["planted"] == sum(planted)
    else:
        assert shown["tested"] and shown["budget"] == []
        reports = [s["report"] for s in manifest["sets"]]
        assert shown["failing"] == 0 and shown["drawn"] == sum(r["draws"] for r in reports) >= 12 * SMALL_USERS
        assert shown["dropped"] == shown["drawn"] - 12 * SMALL_USERS
        from django.test import Client
        judge = Client()
        judge.force_login(user("judge"))
        page = judge.get(f"/console/{contest.slug}/").content.decode()
        assert (f"{shown['drawn']} fakes drawn, {shown['dropped']} dropped for failing the privacy test; "
                "every fake written passed it") in page


def test_an_sglt_round_that_cannot_pass_the_privacy_test_fails_with_what_to_relax(make_contest):
    from contest.models import Job
    from contest.services import jobs
    params = {"train_users": 40, "train_days": 3, "clusters": 6, "options": {"max_tries": 2, "par_d": 0.0}}
    contest = make_contest(slug="strict", synthesizer="sglt", extra={"synthesizer_params": params})
    rnd = contest.rounds.get()
    job = jobs.create_job("generate_round", contest=contest, dispatch=False, round_id=rnd.pk)
    assert jobs.execute(job.pk) == Job.SUCCEEDED  # the model is trained; each data set is a job of its own
    set_jobs = Job.objects.filter(kind="generate_dataset", args__round_id=rnd.pk).order_by("pk")
    assert set_jobs.count() == 12
    job = set_jobs.first()
    assert jobs.execute(job.pk) == Job.FAILED
    message = Job.objects.get(pk=job.pk).message
    assert message.startswith(f"failed: sglt: {SMALL_USERS} of {SMALL_USERS} fakes still fail the privacy test")
    assert "relax par_d or k" in message
    assert not Dataset.objects.filter(round=rnd).exists()                    # nothing of the round is written
    assert Round.objects.get(pk=rnd.pk).generated_at is None                 # and the round is not ready


def test_valid_upload_scores_utility_like_scoring(generated):
    from scoring.scores import utility
    ds = _team_ds(generated, 1, 1)
    content = anonymize_csv(ds, "A2-MRLH", mu_x=1, mu_y=1, **{"lambda": 0.0})
    aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=content, name="a.csv")
    aset = uploads.score_anonymized_set(aset)
    grid = generated.grid()
    truth = data.traces(ds.original, grid)
    expected = utility(grid, truth, data.anotraces(content, grid, truth), convention="mean-distance", lambda_u=2.0)
    assert aset.s_u == pytest.approx(expected, abs=1e-12)
    assert aset.status == AnonymizedSet.VALID and aset.valid
    assert Score.objects.get(anonymized_set=aset, metric="utility").value == aset.s_u
    assert storage.read_bytes(aset.file) == content
    assert AuditLog.objects.filter(action="upload_anonymized", object_id=str(aset.pk)).exists()


def test_rejected_upload_keeps_errors_and_does_not_count(generated):
    ds = _team_ds(generated, 1, 1)
    generated.anonymized_upload_limit = 1
    generated.save()
    bad = b"reg_id\n" + b"99999\n" * (SMALL_USERS * 40)
    aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds,
                                                                      content=bad, name="bad.csv"))
    assert aset.status == AnonymizedSet.REJECTED
    assert aset.errors and aset.errors[0]["line"] == 2 and "99999" in str(aset.errors[0]["value"])
    assert aset.error_total == SMALL_USERS * 40
    # not counted: the single allowed upload is still available
    good = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="g.csv")
    assert good.seq == 2
    with pytest.raises(uploads.LimitReached):
        uploads.submit_anonymized_set(user=user("alpha2"), dataset=ds, content=anonymize_csv(ds), name="h.csv")


def test_an_upload_whose_distinct_sets_name_too_many_regions_is_rejected_with_the_bound(generated, monkeypatch):
    """The worker's memory bound (issue 25): an upload past ``MAX_SET_MEMBERS`` is stored, rejected with one
    issue naming its count and the bound (in the team's language on the page), and does not count."""
    from django.utils import translation

    from contest.web.common import issue_rows
    from scoring.io import formats

    ds = _team_ds(generated, 1, 1)
    rows = SMALL_USERS * 40
    content = b"reg_id\n" + b"".join(f"{1 + k % 900} {901 + k % 100}\n".encode() for k in range(rows))
    monkeypatch.setattr(formats, "MAX_SET_MEMBERS", 1_000)
    aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds,
                                                                      content=content, name="many.csv"))
    assert aset.status == AnonymizedSet.REJECTED and aset.error_total == 1
    assert aset.errors[0]["code"] == "set_members_too_many"
    named = 2 * len({(k % 900, k % 100) for k in range(rows)})
    assert f"{named:,} region ids" in aset.errors[0]["message"] and "at most 1,000" in aset.errors[0]["message"]
    with translation.override("ja"):
        [row] = issue_rows(aset.errors)
    assert "1,000" in row["text"] and "region ids" not in row["text"]
    assert storage.read_bytes(aset.file) == content                       # kept as sent
    monkeypatch.setattr(formats, "MAX_SET_MEMBERS", named)
    again = uploads.score_anonymized_set(aset, force=True)
    assert again.status in (AnonymizedSet.VALID, AnonymizedSet.INVALID)   # at the bound it is scored


def test_gz_and_zip_uploads(generated):
    ds = _team_ds(generated, 2, 2)
    content = anonymize_csv(ds)
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("anotraces.csv", content)
    for blob, name in ((gzip.compress(content), "a.csv.gz"), (zbuf.getvalue(), "a.zip")):
        aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(user=user("beta1"), dataset=ds,
                                                                          content=blob, name=name))
        assert aset.status == AnonymizedSet.VALID and aset.s_u == pytest.approx(1.0)
        assert storage.read_bytes(aset.file) == blob  # the exact upload is kept


def test_size_limit_refuses_before_storing(generated):
    ds = _team_ds(generated, 1, 1)
    generated.upload_size_limit = 1000
    generated.save()
    with pytest.raises(uploads.RuleViolation) as exc:
        uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")
    assert exc.value.status == 413
    assert not AnonymizedSet.objects.exists()


def test_phase_window_and_ownership(generated):
    rnd = generated.rounds.get()
    ds = _team_ds(generated, 1, 1)
    with pytest.raises(uploads.NotAllowed):
        uploads.submit_anonymized_set(user=user("beta1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")
    with pytest.raises(uploads.NotAllowed):
        uploads.submit_anonymized_set(user=user("beta1"), dataset=_team_ds(generated, 5, 1), content=b"x", name="a")
    move_phase(rnd, Phase.ANONYMIZATION, 1, 2)  # not open yet
    with pytest.raises(uploads.RuleViolation, match="not open"):
        uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")


def _full_round(contest):
    """Upload for every team (team 3's TRP set below s_req, team 2's IDP set rejected), then close."""
    sets = {}
    for t in (1, 2, 3):
        for c in (1, 2):
            ds = _team_ds(contest, t, c)
            member = user({1: "alpha1", 2: "beta1", 3: "gamma1"}[t])
            if (t, c) == (2, 1):
                content = b"reg_id\n*\n"  # wrong row count: rejected
            elif (t, c) == (3, 2):
                content = anonymize_csv(ds, "A3-kRR", eps=0.5)  # s_U far below 0.7
            else:
                content = anonymize_csv(ds, "A2-MRLH", mu_x=1, mu_y=0, seed=t * 10 + c, **{"lambda": 0.1})
            a = uploads.submit_anonymized_set(user=member, dataset=ds, content=content, name=f"t{t}c{c}.csv")
            sets[(t, c)] = uploads.score_anonymized_set(a)
    return sets


def test_close_pseudonymize_judge_attacks_and_results(generated):
    from scoring.pseudonymize import verify_commitment
    from scoring.scores import reidentification, trace_inference

    rnd = generated.rounds.get()
    sets = _full_round(generated)
    assert sets[(2, 1)].status == AnonymizedSet.REJECTED
    assert sets[(3, 2)].status == AnonymizedSet.INVALID
    public = judge.close_anonymization(rnd)
    labels = sorted(ps.dataset.label for ps in public)
    # 4 valid team sets + 2 benchmark sets; no public set for the rejected or the invalid one
    assert labels == ["team001_data01", "team001_data02", "team002_data02", "team003_data01",
                      "team004_data01", "team004_data02"]
    assert judge.close_anonymization(rnd) and PublicSet.objects.count() == 6  # idempotent
    grid = generated.grid()
    for ps in public:
        pse, users = data.ptable(ps.ptable)
        assert np.array_equal(pse, np.arange(SMALL_USERS + 1, 2 * SMALL_USERS + 1))
        assert sorted(users) == list(range(1, SMALL_USERS + 1))
        assert len(ps.commitment_nonce) == 32 and ps.ptable.sha256 != ps.commitment
        assert verify_commitment(ps.commitment, storage.read_bytes(ps.ptable), ps.commitment_nonce)
    ps = PublicSet.objects.get(dataset__number=1, dataset__challenge=1)
    run = judge.run_judge_attacks(ps)
    assert sorted(r.algorithm for r in run) == sorted(generated.judge_attacks)
    assert judge.run_judge_attacks(ps) == []  # idempotent
    # every judge score equals scoring on the stored files
    truth = data.traces(ps.dataset.original, grid)
    _, f = data.ptable(ps.ptable)
    for r in JudgeAttackResult.objects.filter(public_set=ps):
        out = storage.read_bytes(r.output)
        if r.kind == "reidentification":
            expected = reidentification(f, data.etable(out, SMALL_USERS, SMALL_USERS))
        else:
            expected = trace_inference(grid, truth, data.etraces(out, grid, truth), lambda_t=2.0,
                                       hospital_weight=10.0)
        assert r.score == pytest.approx(expected, abs=1e-12)
        assert Score.objects.get(judge_attack=r).value == r.score
    for other in public:
        judge.run_judge_attacks(other)

    # attack phase: team 2 attacks team 1's IDP set with the true ID table (s_I = 0) and a bad file
    move_phase(rnd, Phase.ATTACK, -1, 5)
    beta, alpha = sets[(2, 2)].team, sets[(1, 1)].team
    perfect = data.etable_csv(f)
    a = uploads.score_attack(uploads.submit_attack(user=user("beta1"), attacker=beta, target=ps, kind="etable",
                                                   content=perfect, name="e.csv"))
    assert a.status == Attack.VALID and a.score == 0.0
    bad = uploads.score_attack(uploads.submit_attack(user=user("beta2"), attacker=beta, target=ps, kind="etable",
                                                     content=b"user_id\n0\n", name="e.csv"))
    assert bad.status == Attack.REJECTED and bad.errors
    uploads.submit_attack(user=user("beta2"), attacker=beta, target=ps, kind="etable", content=perfect, name="e2")
    with pytest.raises(uploads.LimitReached):
        uploads.submit_attack(user=user("beta2"), attacker=beta, target=ps, kind="etable", content=perfect, name="e3")
    with pytest.raises(uploads.NotAllowed, match="own"):
        uploads.submit_attack(user=user("alpha1"), attacker=alpha, target=ps, kind="etable", content=perfect, name="x")

    res = results.compute(generated)
    from scoring.results import SetRef
    assert res.set_result(SetRef(1, 1, 1)).s_i_min == 0.0
    assert res.set_result(SetRef(1, 3, 2)).valid is False
    snap = results.publish_results(generated)
    generated.refresh_from_db()
    assert snap.published and generated.results_published_at is not None
    assert snap.awards.exists()
    assert AuditLog.objects.filter(action="publish_results").exists()


def test_rescore_keeps_old_rows(generated, django_capture_on_commit_callbacks):
    ds = _team_ds(generated, 1, 1)
    aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv"))
    with django_capture_on_commit_callbacks(execute=True):
        results.rescore(generated)
    rows = Score.objects.filter(anonymized_set=aset, metric="utility")
    assert rows.count() == 2 and rows.filter(current=True).count() == 1
    assert {r.value for r in rows} == {aset.s_u}


def test_freeze_time_excludes_later_uploads_from_results(generated):
    from datetime import timedelta

    from django.utils import timezone

    from scoring.results import SetRef
    ds = _team_ds(generated, 1, 1)
    uploads.score_anonymized_set(uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds,
                                                               content=anonymize_csv(ds), name="a.csv"))
    generated.judge_attacks = ["I1-rand"]
    generated.save()
    rnd = generated.rounds.get()
    ps = [p for p in judge.close_anonymization(rnd) if p.dataset_id == ds.pk][0]
    judge.run_judge_attacks(ps)
    move_phase(rnd, Phase.ATTACK, -1, 5)
    _, f = data.ptable(ps.ptable)
    beta = user("beta1").memberships.get().team
    uploads.score_attack(uploads.submit_attack(user=user("beta1"), attacker=beta, target=ps, kind="etable",
                                               content=data.etable_csv(f), name="e.csv"))
    assert results.compute(generated).set_result(SetRef(1, 1, 1)).s_i_min == 0.0
    generated.freeze_at = timezone.now() - timedelta(minutes=1)  # the perfect attack came after the freeze
    generated.save()
    frozen = results.compute(generated).set_result(SetRef(1, 1, 1))
    judge_score = JudgeAttackResult.objects.get(public_set=ps).score
    assert frozen.s_i_min == pytest.approx(judge_score)


def test_archives_the_judge_reads_are_uploads_the_platform_scores(generated):
    """Zero-padded gzip and a Mac zip (with __MACOSX/ entries) score like the plain file; a nested
    archive is stored and rejected with the judge's message, not counted."""
    import gzip

    ds = _team_ds(generated, 1, 1)
    csv = anonymize_csv(ds)
    mac = io.BytesIO()
    with zipfile.ZipFile(mac, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("anon.csv", csv)
        z.writestr("__MACOSX/._anon.csv", b"\x00\x05\x16\x07 resource fork")
    plain = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=csv, name="a.csv"))
    for content, name in ((gzip.compress(csv) + b"\0" * (4 << 20), "padded.csv.gz"), (mac.getvalue(), "mac.zip")):
        aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(
            user=user("alpha1"), dataset=ds, content=content, name=name))
        assert (aset.status, aset.s_u) == (plain.status, plain.s_u), name
        assert storage.read_bytes(aset.file) == content  # stored exactly as sent
    nested = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=gzip.compress(gzip.compress(csv)), name="twice.gz"))
    assert nested.status == AnonymizedSet.REJECTED and nested.errors[0]["code"] == "nested_archive"
    assert not uploads.counts_towards_limit(nested)
