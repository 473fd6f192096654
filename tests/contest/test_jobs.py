"""Job rows: idempotent execution, visible failures, bounded retries, the stuck-job sweep."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.utils import timezone

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
    assert job.progress == 1.0 and job.attempts == 1 and job.finished_at and "12 datasets" in job.message
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


def test_transient_errors_retry_a_bounded_number_of_times(generated, monkeypatch, settings):
    monkeypatch.setitem(jobs._REGISTRY, "rescore", flaky_handler)
    _FLAKY_CALLS.clear()
    job = jobs.create_job("rescore", contest=generated, dispatch=False, contest_id=generated.pk)
    for _ in range(settings.TRACECUP_JOB_MAX_ATTEMPTS - 1):
        with pytest.raises(jobs.TransientJobError):
            jobs.execute(job.pk)
        assert Job.objects.get(pk=job.pk).status == Job.QUEUED
    assert jobs.execute(job.pk) == Job.FAILED
    assert len(_FLAKY_CALLS) == settings.TRACECUP_JOB_MAX_ATTEMPTS
    assert "database is locked" in Job.objects.get(pk=job.pk).error


def test_the_celery_task_retries_transient_errors():
    from contest.tasks import run_job
    assert jobs.TransientJobError in run_job.autoretry_for and run_job.max_retries == 3
    assert run_job.acks_late and run_job.reject_on_worker_lost


def test_sweep_requeues_then_fails_stuck_jobs(generated, settings, monkeypatch):
    sent = []
    monkeypatch.setattr(jobs, "send", lambda job: sent.append(job.pk))
    old = timezone.now() - timedelta(seconds=settings.TRACECUP_JOB_TIME_LIMIT + 60)
    stuck = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING, attempts=1, heartbeat_at=old,
                               args={"contest_id": generated.pk})
    lost = Job.objects.create(kind="rescore", contest=generated, status=Job.QUEUED, args={"contest_id": generated.pk})
    Job.objects.filter(pk=lost.pk).update(created_at=old)
    fresh = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING, attempts=1,
                               heartbeat_at=timezone.now(), args={})
    dead = Job.objects.create(kind="rescore", contest=generated, status=Job.RUNNING,
                              attempts=settings.TRACECUP_JOB_MAX_ATTEMPTS, heartbeat_at=old, args={})
    report = sweep()
    assert report["requeued"] == 2 and report["failed"] == 1
    assert sorted(sent) == sorted([stuck.pk, lost.pk])
    assert Job.objects.get(pk=stuck.pk).status == Job.QUEUED
    assert Job.objects.get(pk=fresh.pk).status == Job.RUNNING
    d = Job.objects.get(pk=dead.pk)
    assert d.status == Job.FAILED and "time limit" in d.message


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

    assert set(jobs._REGISTRY) == set(jobs.KINDS)
    assert all(callable(f) and f.__module__.startswith("contest.services.") for f in jobs._REGISTRY.values())
    with pytest.raises(ValueError, match="already handled"):
        jobs.handles("rescore")(flaky_handler)
    with pytest.raises(ValueError, match="unknown job kind"):
        jobs.handles("no_such_kind")
    services = Path(jobs.__file__).parent
    for path in services.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
        assert "contest.tasks" not in imported, f"{path.name} imports contest.tasks"
        if path.name == "jobs.py":
            assert not {m for m in imported if m.startswith("contest.services.") and m != "contest.services.audit"}


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
