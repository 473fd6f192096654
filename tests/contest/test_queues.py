"""Queues per kind of work (issue 14 item 6): a team's upload is never stuck behind the judge's work.

Every job kind is routed to one Celery queue (``contest.queues``). The
integration test runs two real workers as the demo and docker-compose do: one
on the teams' queue, one on the judge's queues, each with a single process.
While the judge's worker is busy inside a round's generation (PPMTF training,
several seconds), a team's upload is scored by the other worker: it is done
before the generation is.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from contest import job_kinds, queues
from contest.models import AnonymizedSet, Dataset, Job
from contest.services import generation, jobs, uploads
from contest.services.setup import create_contest
from tests.contest.conftest import anonymize_csv, contest_spec, user
from tests.worker import worker_env  # noqa: F401  (fixture)


def test_every_job_kind_has_one_queue_and_uploads_have_their_own():
    assert sum(len(kinds) for kinds in job_kinds.BY_QUEUE.values()) == len(job_kinds.KINDS)  # none listed twice
    for kind in ("score_anonymized", "score_attack"):
        assert job_kinds.QUEUE_OF[kind] == queues.DEFAULT_QUEUE
    for kind in ("generate_round", "close_anonymization", "judge_attacks", "compute_results", "rescore",
                 "privacy_preview"):
        assert job_kinds.QUEUE_OF[kind] in queues.JUDGE_QUEUES.split(",")


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_jobs_are_sent_to_their_kinds_queue(worker_env):
    """The message of each job lands in its kind's queue of the real broker (no worker consumes it)."""
    from contest.celery import app
    contest = create_contest(contest_spec(slug="routing"))
    sent = {kind: jobs.create_job(kind, contest=contest, dispatch=False) for kind in job_kinds.KINDS}
    for kind, job in sent.items():
        assert jobs.dispatch(job.pk, kind)
    if worker_env.broker_dir is not None:
        # kombu's filesystem transport names each message file <time>_<uuid>.<queue>.msg
        found = sorted(Path(p).name.rsplit(".", 2)[1] for p in (worker_env.broker_dir / "queue").glob("*.msg"))
    else:
        with app.connection_for_write() as conn:
            channel = conn.default_channel
            found = sorted(q for q in queues.NAMES for _ in range(channel.queue_declare(q, passive=True).message_count))
    assert found == sorted(job_kinds.QUEUE_OF[kind] for kind in job_kinds.KINDS)


#: PPMTF trained long enough (several seconds) that the judge's worker is busy while the team uploads.
SLOW_TRAINING = {"synthesizer_params": {"train_users": 300, "train_days": 4, "K": 8, "sweeps": 100}}


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_an_upload_is_scored_while_the_judge_worker_is_busy(worker_env):
    team_contest = create_contest(contest_spec(slug="teams"))
    generation.generate_round_data(team_contest.rounds.get())  # in this process, before the workers start
    worker_env.start(concurrency=1, queues=queues.JUDGE_QUEUES)
    worker_env.start(concurrency=1, queues=queues.DEFAULT_QUEUE)

    busy = create_contest(contest_spec(slug="busy", synthesizer="ppmtf", users=30, extra=SLOW_TRAINING))
    generating = generation.request_generation(busy.rounds.get())
    deadline = time.time() + 120
    while not Job.objects.filter(pk=generating.pk, status=Job.RUNNING).exists():
        assert time.time() < deadline, "the judge's worker never started the generation\n" + worker_env.log()
        time.sleep(0.2)

    ds = Dataset.objects.get(round__contest=team_contest, number=1, challenge=1)
    aset = uploads.submit_anonymized_set(user=user("alpha1"), dataset=ds, content=anonymize_csv(ds, "A3-kRR", eps=8.0),
                                         name="alpha.csv")
    while AnonymizedSet.objects.get(pk=aset.pk).status == AnonymizedSet.PENDING:
        assert time.time() < deadline, "the upload was not scored\n" + worker_env.log()
        time.sleep(0.1)
    generating.refresh_from_db()
    assert generating.status == Job.RUNNING, (
        f"the generation ended ({generating.status}) before the upload was scored: the test shows nothing")
    assert AnonymizedSet.objects.get(pk=aset.pk).status == AnonymizedSet.VALID


def test_docker_compose_serves_every_queue_once():
    """The production stack's workers serve every queue: the teams' on its own worker, the judge's on the other."""
    import yaml
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    served = {}
    for name, service in compose["services"].items():
        command = service.get("command") or []
        if "worker" in command:
            served[name] = command[command.index("-Q") + 1]
            # every worker also serves the sweep, and runs with the options every worker has
            assert served[name].split(",")[-1] == queues.SWEEP_QUEUE, (name, served[name])
            assert set(queues.WORKER_OPTIONS) <= set(command), (name, command)
    assert sorted(served.values()) == sorted(queues.with_sweep(q) for q in (queues.DEFAULT_QUEUE,
                                                                           queues.JUDGE_QUEUES)), served


def test_every_long_running_compose_service_is_restarted_when_it_dies():
    """A worker that exits (a lost broker, an out-of-memory kill) comes back without anyone acting (issue 25)."""
    import yaml
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    for name, service in compose["services"].items():
        if name == "migrate":  # runs once and exits
            continue
        assert service.get("restart") in ("always", "unless-stopped"), name
