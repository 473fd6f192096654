"""Job rows: idempotent execution, visible failures, bounded retries, the stuck-job sweep."""
from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

from contest import job_kinds
from contest.models import Job, Phase, PublicSet
from contest.services import jobs
from contest.tasks import sweep
from tests.contest.conftest import move_phase

pytestmark = pytest.mark.django_db


def test_execute_runs_once_and_records_progress(generated):
    rnd = generated.rounds.get()
    job = jobs.create_job("generate_round", contest=generated, dispatch=False, round_id=rnd.pk)
    assert jobs.execute(job.pk) == Job.SUCCEEDED
    job.refresh_from_db()
    assert job.progress == 1.0 and job.attempts == 1 and job.finished_at and "0 of 12 data sets queued" in job.message
    assert jobs.execute(job.pk) == Job.SUCCEEDED  # a duplicate delivery does nothing
    job.refresh_from_db()
    assert job.attempts == 1


def test_failure_is_recorded_with_the_error(generated):
    job = jobs.create_job("score_anonymized", contest=generated, dispatch=False, anonymized_set_id=999999)
    assert jobs.execute(job.pk) == Job.FAILED
    job.refresh_from_db()
    assert job.status == Job.FAILED and "DoesNotExist" in job.error and job.finished_at


_FLAKY_CALLS: list = []


def flaky_handler(job, **kwargs):
    """A handler whose database is always locked (a transient error)."""
    _FLAKY_CALLS.append(job.pk)
    raise OperationalError("database is locked")


def test_transient_errors_are_retried_without_using_up_the_attempts(generated, monkeypatch, settings):
    """A database error is the database's fault, not the job's: the job is queued again each time with its
    attempt given back (Celery retries it; past Celery's retries the sweep sends it), never failed for good."""
    monkeypatch.setitem(jobs._REGISTRY, "rescore", flaky_handler)
    _FLAKY_CALLS.clear()
    job = jobs.create_job("rescore", contest=generated, dispatch=False, contest_id=generated.pk)
    for _ in range(settings.TRACECUP_JOB_MAX_ATTEMPTS + 2):
        with pytest.raises(jobs.TransientJobError):
            jobs.execute(job.pk)
        job.refresh_from_db()
        assert (job.status, job.attempts) == (Job.QUEUED, 0)
        assert job.message == "retrying after a database error: database is locked"
    assert len(_FLAKY_CALLS) == settings.TRACECUP_JOB_MAX_ATTEMPTS + 2
    monkeypatch.setitem(jobs._REGISTRY, "rescore", lambda job, **kwargs: "done at last")
    assert jobs.execute(job.pk) == Job.SUCCEEDED


def test_the_celery_task_retries_transient_errors():
    from contest.tasks import run_job
    assert jobs.TransientJobError in run_job.autoretry_for and run_job.max_retries == 3
    assert run_job.acks_late and run_job.reject_on_worker_lost


def test_sweep_requeues_dead_workers_jobs_once_and_resends_lost_messages(generated, settings, monkeypatch):
    from django.db.models import F
    sent = []
    now = timezone.now()

    def dispatch(pk, kind):                    # what the real one records, without a broker
        sent.append(pk)
        return bool(Job.objects.filter(pk=pk).update(sent_at=now, sends=F("sends") + 1))
    monkeypatch.setattr(jobs, "dispatch", dispatch)
    dead_for = timedelta(seconds=settings.TRACECUP_JOB_STALE_SECONDS + 1)   # a minute, not the time limit
    args = {"contest_id": generated.pk}
    stuck = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING, attempts=1,
                               heartbeat_at=now - dead_for, claim="a" * 32, args=args)
    never_sent = Job.objects.create(kind="rescore", contest=generated, status=Job.QUEUED, args=args)
    lost = Job.objects.create(kind="rescore", contest=generated, status=Job.QUEUED, args=args, sends=1,
                              sent_at=now - dead_for)
    waiting = Job.objects.create(kind="rescore", contest=generated, status=Job.QUEUED, args=args, sends=3,
                                 sent_at=now - dead_for)       # sent 3 times: backs off before a 4th
    fresh = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING, attempts=1,
                               heartbeat_at=now, args=args)
    dead = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING,
                              attempts=settings.TRACECUP_JOB_MAX_ATTEMPTS, heartbeat_at=now - dead_for, args=args)
    Job.objects.filter(pk__in=[never_sent.pk, lost.pk, waiting.pk]).update(created_at=now - dead_for)
    report = sweep(now)
    assert report["requeued"] == 1 and report["failed"] == 1 and report["sent"] == 2
    assert sorted(sent) == sorted([never_sent.pk, lost.pk])
    s = Job.objects.get(pk=stuck.pk)
    assert s.status == Job.QUEUED and s.retrying and "retrying: the worker stopped (attempt 2 of 3)" == s.message
    assert Job.objects.get(pk=fresh.pk).status == Job.RUNNING
    d = Job.objects.get(pk=dead.pk)
    assert d.status == Job.FAILED and "stopped on every attempt" in d.message
    sent.clear()
    Job.objects.filter(pk=stuck.pk).update(created_at=now - dead_for)
    report = sweep(now)                       # exactly once: the requeued job is sent, never requeued again
    assert report["requeued"] == 0 and sent == [stuck.pk]


def test_a_duplicate_delivery_does_not_run_the_handler_again(generated, monkeypatch):
    """The same message delivered while the job runs: the second delivery claims nothing and returns."""
    runs = []

    def handler(job, **kwargs):
        runs.append(job.pk)
        assert jobs.execute(job.pk) == Job.RUNNING      # a duplicate delivery arriving meanwhile
        return "ran"
    monkeypatch.setitem(jobs._REGISTRY, "rescore", handler)
    job = jobs.create_job("rescore", contest=generated, dispatch=False, contest_id=generated.pk)
    assert jobs.execute(job.pk) == Job.SUCCEEDED and runs == [job.pk]
    assert jobs.execute(job.pk) == Job.SUCCEEDED and runs == [job.pk]
    assert Job.objects.get(pk=job.pk).attempts == 1


def test_a_dead_workers_job_is_claimed_by_its_redelivery(generated, settings, monkeypatch):
    monkeypatch.setitem(jobs._REGISTRY, "rescore", lambda job, **kw: "ran")
    old = timezone.now() - timedelta(seconds=settings.TRACECUP_JOB_STALE_SECONDS + 1)
    job = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING, attempts=1, heartbeat_at=old,
                             claim="b" * 32, args={"contest_id": generated.pk})
    assert jobs.execute(job.pk) == Job.SUCCEEDED
    assert Job.objects.get(pk=job.pk).attempts == 2
    alive = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING, attempts=1,
                               heartbeat_at=timezone.now(), args={"contest_id": generated.pk})
    assert jobs.execute(alive.pk) == Job.RUNNING          # its worker is alive: not taken from it


def test_one_current_score_per_scored_object_is_a_database_rule(generated):
    from django.db import IntegrityError, transaction

    from contest.models import Score
    from contest.services import uploads
    from tests.contest.conftest import anonymize_csv, user
    from tests.contest.test_services import _team_ds

    ds = _team_ds(generated, 1, 1)
    aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Score.objects.create(dataset=ds, metric=Score.UTILITY, value=0.5, anonymized_set=aset)
    assert Score.objects.filter(anonymized_set=aset, current=True).count() == 1


def test_a_broker_outage_keeps_the_upload_and_the_sweep_sends_it(generated, django_capture_on_commit_callbacks):
    """The outbox: the upload is accepted and counted, its job waits unsent, the sweep sends it later."""
    from contest.celery import app
    from contest.models import AnonymizedSet
    from contest.services import uploads
    from tests.contest.conftest import anonymize_csv, user
    from tests.contest.test_services import _team_ds
    from tests.worker import reset_broker_pools

    saved = {k: app.conf[k] for k in ("task_always_eager", "broker_url", "broker_transport_options")}
    saved_env = os.environ.get("CELERY_BROKER_URL")  # Celery reads the URL from the environment first
    ds = _team_ds(generated, 1, 1)
    try:
        # A real broker that is down: nothing listens on port 1 (the publish retries once, then gives up).
        os.environ["CELERY_BROKER_URL"] = "redis://127.0.0.1:1/0"
        app.conf.update(task_always_eager=False, broker_url="redis://127.0.0.1:1/0",
                        broker_transport_options={"socket_connect_timeout": 1})
        reset_broker_pools(app)
        with django_capture_on_commit_callbacks(execute=True):
            aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds),
                                                 name="a.csv")
        job = Job.objects.get(kind="score_anonymized", args__anonymized_set_id=aset.pk)
        assert job.status == Job.QUEUED and job.sent_at is None
        assert AnonymizedSet.objects.get(pk=aset.pk).status == AnonymizedSet.PENDING
        assert uploads.counts_towards_limit(aset)
    finally:  # the broker is back (here: jobs run inline, as in every unit test)
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env
        app.conf.update(saved)
        reset_broker_pools(app)
    with django_capture_on_commit_callbacks(execute=True):
        report = sweep(timezone.now() + jobs.OUTBOX_GRACE)
    assert report["sent"] >= 1
    assert AnonymizedSet.objects.get(pk=aset.pk).status == AnonymizedSet.VALID


def test_short_time_limits_keep_a_soft_limit_below_the_hard_one():
    import subprocess
    import sys
    code = ("import django, os; os.environ['TRACECUP_JOB_TIME_LIMIT']='10'; "
            "from contest import settings as s; print(s.CELERY_TASK_SOFT_TIME_LIMIT, s.CELERY_TASK_TIME_LIMIT)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    soft, hard = map(int, out)
    assert 0 < soft < hard == 10


def test_sweep_closes_anonymization_phases_past_their_deadline(generated, django_capture_on_commit_callbacks):
    rnd = generated.rounds.get()
    move_phase(rnd, Phase.ANONYMIZATION, -5, -1)
    generated.judge_attacks_enabled = False
    generated.save()
    with django_capture_on_commit_callbacks(execute=True):
        report = sweep()
    assert report["phases_closed"] == 1
    assert Phase.objects.get(round=rnd, kind="anonymization").closed_at is not None
    assert PublicSet.objects.filter(dataset__round=rnd, dataset__kind="benchmark").count() == 2
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep()["phases_closed"] == 0


def test_every_job_kind_has_one_registered_handler_and_no_service_imports_the_tasks():
    """The registry holds a function for each kind; jobs.py imports no service (the circle is gone)."""
    import ast
    from pathlib import Path

    assert set(jobs._REGISTRY) == set(job_kinds.KINDS)
    assert all(callable(f) and f.__module__.startswith("contest.services.") for f in jobs._REGISTRY.values())
    with pytest.raises(ValueError, match="already handled"):
        jobs.handles("rescore")(flaky_handler)
    with pytest.raises(ValueError, match="unknown job kind"):
        jobs.handles("no_such_kind")
    services = Path(jobs.__file__).parent

    def imports(path):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
        return imported

    def services_of(imported):
        return {m.removeprefix("contest.services.") for m in imported
                if m.startswith("contest.services.") and (services / f"{m.removeprefix('contest.services.')}.py").exists()}

    for path in services.glob("*.py"):
        imported = imports(path)
        assert "contest.tasks" not in imported, f"{path.name} imports contest.tasks"
        if path.name == "jobs.py":
            # only leaves (the audit log, the site's state stamp, the errors' base, the job messages' templates,
            # the one-statement row writes), which import no service back
            leaves = services_of(imported)
            assert leaves == {"audit", "errors", "job_messages", "rows", "site_state"}, leaves
            for leaf in leaves:
                assert not services_of(imports(services / f"{leaf}.py")) - {"site_state"}, leaf


def test_rescore_is_one_job_per_scored_object(generated, django_capture_on_commit_callbacks):
    """A full rescore queues a job per anonymized set, attack and public set; the workers share them."""
    from contest.services import results, uploads
    from tests.contest.conftest import anonymize_csv, user
    from tests.contest.test_services import _team_ds

    ds = _team_ds(generated, 1, 1)
    aset = uploads.score_anonymized_set(uploads.submit_anonymized_set(
        user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv"))
    before = set(Job.objects.values_list("pk", flat=True))
    job = results.request_rescore(generated)
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.execute(job.pk) == Job.SUCCEEDED
    children = Job.objects.exclude(pk__in=before | {job.pk})
    assert [(j.kind, j.args) for j in children.filter(kind="score_anonymized")] == [
        ("score_anonymized", {"anonymized_set_id": aset.pk, "force": True})]
    assert "queued re-scoring: 1 anonymized sets" in Job.objects.get(pk=job.pk).message
    assert all(j.status == Job.SUCCEEDED for j in children)


def test_a_team_sees_retrying_not_a_frozen_spinner(generated, client, settings, django_capture_on_commit_callbacks):
    """After its worker died, the upload's live status says it is being retried, in the API too."""
    from contest.models import AnonymizedSet
    from contest.services import uploads
    from tests.contest.conftest import anonymize_csv, user
    from tests.contest.test_services import _team_ds

    ds = _team_ds(generated, 1, 1)
    aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds), name="a.csv")
    old = timezone.now() - timedelta(seconds=settings.TRACECUP_JOB_STALE_SECONDS + 1)
    Job.objects.filter(kind="score_anonymized", args__anonymized_set_id=aset.pk).update(
        status=Job.RUNNING, attempts=1, heartbeat_at=old, claim="c" * 32)
    assert AnonymizedSet.objects.get(pk=aset.pk).status == AnonymizedSet.PENDING
    sweep()
    client.force_login(user("alpha1"))
    state = client.get(f"/c/{generated.slug}/team/uploads/{aset.pk}/status.json").json()
    assert "retrying (attempt 2)" in state["html"] and not state["finished"]
    api = client.get(f"/api/jobs/{Job.objects.get(kind='score_anonymized', args__anonymized_set_id=aset.pk).pk}/")
    assert api.json()["message"] == "retrying" and api.json()["status"] == "queued"


def test_held_jobs_are_sent_together_at_release_and_a_rolled_back_one_never(generated, monkeypatch,
                                                                            django_capture_on_commit_callbacks):
    """``jobs.Held``: a committed job waits for the batch's release (or the block's end) instead of being
    sent at its commit; a job whose transaction rolls back is never sent; batches do not nest; after the
    release, and outside a batch, a job is sent at its commit as before."""
    from django.db import transaction

    sent = []
    monkeypatch.setattr(jobs, "dispatch", lambda pk, kind: sent.append(pk))

    def create():
        with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            return jobs.create_job("rescore", contest=generated, contest_id=generated.pk)

    with jobs.Held() as batch:
        first, second = create(), create()
        with pytest.raises(RuntimeError, match="rolled back"), \
                django_capture_on_commit_callbacks(execute=True), transaction.atomic():
            jobs.create_job("rescore", contest=generated, contest_id=generated.pk)
            raise RuntimeError("rolled back")
        assert sent == []                                          # committed, held
        with pytest.raises(RuntimeError, match="already held"), jobs.Held():
            pass
        assert batch.release() == 2 and sent == [first.pk, second.pk]
        third = create()
        assert sent == [first.pk, second.pk, third.pk]             # released: sent at its commit
    with jobs.Held():
        fourth = create()
    assert sent == [first.pk, second.pk, third.pk, fourth.pk]      # sent at the block's end
    fifth = create()
    assert sent[-1] == fifth.pk                                     # no batch: sent at its commit
