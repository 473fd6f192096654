"""Celery tasks: thin wrappers over ``contest.services`` (DESIGN "Work in the background")."""
from __future__ import annotations

from celery import shared_task

from contest.services import jobs


@shared_task(name="contest.tasks.run_job", bind=True, acks_late=True, reject_on_worker_lost=True,
             autoretry_for=(jobs.TransientJobError,), max_retries=3, retry_backoff=5, retry_jitter=True)
def run_job(self, job_id: int) -> str:
    """Run the job row ``job_id`` (generation, scoring, phase close, judge attacks, results)."""
    return jobs.execute(job_id)


@shared_task(name="contest.tasks.sweep", acks_late=True)
def sweep() -> dict:
    """Periodic (beat): re-queue or fail stuck jobs, close phases whose deadline passed."""
    return jobs.sweep()
