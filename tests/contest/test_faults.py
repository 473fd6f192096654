"""Faults against a real worker (issue 9): nothing lost, nothing counted twice, the state told truly.

Each test runs ``celery worker`` processes on the test database and broker
(PostgreSQL and Redis in CI; SQLite and the filesystem broker on the embedded
default) and breaks them as a machine breaks: SIGKILL of the whole worker and
of its pool children in the middle of a job, the broker's queue lost with jobs
in it, the database connections dropped under a running job, a job stuck past
its time limit. The test process plays the beat: it calls the sweep
(``jobs.requeue_stalled``) as the periodic task would, with a stale period of
3 s instead of 60 s (the worker beats every 0.5 s).

The slow job is a real one: PPMTF training and generation of a round (some
seconds here), so a kill lands in the middle of the judge's work; scoring an
upload at this size takes 15 ms, too short to hit, and it recovers through the
same claim, heartbeat and sweep code. After each fault: every stored file
hashes to its recorded SHA-256 and equals what was sent or generated, every
score equals a fresh recomputation, no object has two current scores, and the
console, the API and the team's page say what happened.
"""
from __future__ import annotations

import hashlib
import time

import pytest
from django.db import connection
from django.db.models import Count
from django.test import Client
from rest_framework.test import APIClient

from contest.models import AnonymizedSet, Dataset, Job, Score, StoredFile
from contest.services import generation, jobs, storage
from contest.services.setup import create_contest
from tests.contest.conftest import anonymize_csv, contest_spec, user
from tests.worker import wait_for_jobs, worker_env  # noqa: F401  (worker_env is a fixture)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

#: Worker settings of these tests: a heartbeat every 0.5 s, a job silent for 3 s counts as lost.
FAST_BEATS = {"TRACECUP_JOB_HEARTBEAT_SECONDS": "0.5", "TRACECUP_JOB_STALE_SECONDS": "3"}
#: PPMTF trained long enough (about 10 s of CPU) to keep a worker busy while a test does several things.
SLOW_TRAINING = {"synthesizer_params": {"train_users": 300, "train_days": 4, "K": 8, "sweeps": 100}}
#: PPMTF trained long enough (about 2 s of CPU) that a fault lands inside the training: these tests strike
#: once two of its 20 sweeps are done (progress past 5 %, polled every 0.25 s), and each job trains again in
#: full when it is retried, so a longer one costs the suite its seconds twice (40 sweeps cost the three
#: tests 37 CPU-seconds, 20 sweeps 29).
FAULT_TRAINING = {"synthesizer_params": {"train_users": 300, "train_days": 4, "K": 8, "sweeps": 20}}
#: PPMTF trained past the 2 s time limit of the time-limit test (about 4 s of CPU).
LIMIT_TRAINING = {"synthesizer_params": {"train_users": 300, "train_days": 4, "K": 8, "sweeps": 40}}


@pytest.fixture
def fast_sweep(settings):
    settings.TRACECUP_JOB_HEARTBEAT_SECONDS = 0.5
    settings.TRACECUP_JOB_STALE_SECONDS = 3.0


def slow_contest(slug, training=SLOW_TRAINING):
    return create_contest(contest_spec(slug=slug, synthesizer="ppmtf", users=30, extra=training))


def request_generation(contest) -> Job:
    return generation.request_generation(contest.rounds.get())


def generation_under_way(worker_env, slug) -> tuple:
    """(contest, job) once a started worker is inside the contest's PPMTF training."""
    worker_env.env.update(FAST_BEATS)
    worker_env.start()
    contest = slow_contest(slug, FAULT_TRAINING)
    job = request_generation(contest)
    wait_until(lambda: training_under_way(job), "training started", workers=worker_env)
    return contest, job


def wait_until(predicate, what: str, timeout: float = 120.0, sweep: bool = False, workers=None):
    """Poll ``predicate`` (calling the sweep each time when ``sweep``) until it is true; fail after ``timeout``."""
    deadline = time.time() + timeout
    while True:
        if sweep:
            jobs.requeue_stalled()
        value = predicate()
        if value:
            return value
        if time.time() > deadline:
            log = workers.log() if workers is not None else ""
            pytest.fail(f"{what}: not after {timeout} s; jobs "
                        f"{list(Job.objects.values_list('pk', 'kind', 'status', 'attempts', 'message'))}\n{log}")
        time.sleep(0.25)


def training_under_way(job: Job) -> bool:
    """The job has been claimed by a worker and is inside PPMTF training (not before, not after)."""
    job.refresh_from_db()
    return job.status == Job.RUNNING and job.message.startswith("training") and job.progress > 0.05


def assert_stored_files_intact() -> None:
    """Every stored file's bytes hash to its recorded SHA-256 and size (no torn or half-written blob)."""
    for f in StoredFile.objects.all():
        content = storage.read_bytes(f)
        assert (hashlib.sha256(content).hexdigest(), len(content)) == (f.sha256, f.size), f.name


def assert_no_duplicate_current_scores() -> None:
    for field in ("anonymized_set", "attack", "judge_attack"):
        dup = (Score.objects.filter(current=True, **{f"{field}__isnull": False})
               .values(field, "metric").annotate(n=Count("id")).filter(n__gt=1))
        assert not dup.exists(), list(dup)


def assert_generation_complete(contest, tmp_path) -> None:
    """The round's data sets are all there, once each, byte for byte what the stored model generates
    (after the per-set jobs the model's job queued have run)."""
    # The job that stores the last set marks the round ready, then finishes: wait for both.
    set_jobs = Job.objects.filter(contest=contest, kind="generate_dataset")
    wait_until(lambda: contest.rounds.filter(generated_at__isnull=False).exists()
               and not set_jobs.filter(status__in=(Job.QUEUED, Job.RUNNING)).exists(),
               "the round's last data set and its job", timeout=240, sweep=True)
    assert not set_jobs.exclude(status=Job.SUCCEEDED).exists(), list(set_jobs.values_list("pk", "status", "message"))
    rnd = contest.rounds.get()
    n_teams = contest.teams.filter(approved=True).count()
    datasets = Dataset.objects.filter(round=rnd)
    assert datasets.count() == (n_teams + 3) * 2
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for ds in datasets:  # from the model the worker stored
        names = generation.write_set_files(rnd, ds.number, ds.challenge, fresh)
        for stored, name in ((ds.reference, names["reftraces"]), (ds.original, names["orgtraces"])):
            assert stored.sha256 == hashlib.sha256((fresh / name).read_bytes()).hexdigest(), name
    assert_stored_files_intact()


def job_status_texts(contest, job: Job) -> tuple[str, str]:
    """(the console's job page HTML, the API's job message) as the organizer sees them."""
    judge = Client()
    judge.force_login(contest.organizers.get(username="judge"))
    page = judge.get(f"/console/{contest.slug}/jobs/{job.pk}/").content.decode()
    api = APIClient()
    api.force_authenticate(contest.organizers.get(username="judge"))
    return page, api.get(f"/api/jobs/{job.pk}/").json()["message"]


def test_whole_worker_killed_mid_generation_is_retried_once_and_loses_nothing(worker_env, fast_sweep, tmp_path):
    contest, job = generation_under_way(worker_env, "fault-kill")

    worker_env.kill()  # the main process and every pool child at once: the heartbeat stops
    job.refresh_from_db()
    assert job.status == Job.RUNNING and job.attempts == 1
    wait_until(lambda: Job.objects.filter(pk=job.pk, status=Job.QUEUED).exists(), "requeued by the sweep",
               timeout=30, sweep=True)
    for _ in range(5):  # more sweeps while no worker runs: queued once, not again and again
        jobs.requeue_stalled()
    job.refresh_from_db()
    assert (job.status, job.attempts, job.message) == (
        Job.QUEUED, 1, "retrying: the worker stopped (attempt 2 of 3)")
    page, api_message = job_status_texts(contest, job)
    assert "retrying: the worker stopped (attempt 2 of 3)" in page
    assert api_message == job.message  # the organizer's API shows the whole message

    worker_env.start()  # the operator restarts the worker; the sweep sends the job again
    wait_until(lambda: Job.objects.filter(pk=job.pk, status__in=(Job.SUCCEEDED, Job.FAILED)).exists(),
               "generation finished after the restart", timeout=240, sweep=True, workers=worker_env)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.SUCCEEDED, 2), job.message
    assert_generation_complete(contest, tmp_path)
    page, api_message = job_status_texts(contest, job)
    assert "retrying" not in page and api_message.endswith("of 12 data sets queued")


def test_a_killed_pool_child_and_a_lost_queue_lose_no_upload(worker_env, fast_sweep, tmp_path):
    contest, job = generation_under_way(worker_env, "fault-pool")

    worker_env.kill_busy_child()  # the main process lives and forks a new child
    wait_until(lambda: Job.objects.filter(pk=job.pk, status__in=(Job.SUCCEEDED, Job.FAILED)).exists(),
               "generation finished after the pool child died", timeout=240, sweep=True, workers=worker_env)
    job.refresh_from_db()
    assert (job.status, job.attempts) == (Job.SUCCEEDED, 2), job.message
    assert_generation_complete(contest, tmp_path)

    # The worker stops; three teams upload; the broker loses its queue (a Redis restart without
    # persistence): the uploads are stored, counted and shown queued; nothing was lost for good.
    worker_env.stop()
    sent = {}
    for team in (1, 2, 3):
        ds = Dataset.objects.get(round__contest=contest, number=team, challenge=1)
        content = anonymize_csv(ds, "A3-kRR", seed=team)
        member = Client()
        member.force_login(user(f"{ds.team.name.lower()}1"))
        r = member.post(f"/c/{contest.slug}/team/datasets/{ds.pk}/upload/",
                        {"file": _named(content, f"team{team}.csv")})
        assert r.status_code == 302, r.content[:500]
        sent[team] = content
    assert worker_env.lose_queue() >= 3  # each upload's scoring job (and any other waiting message)
    team1 = Client()
    team1.force_login(user("alpha1"))
    assert "queued" in team1.get(f"/c/{contest.slug}/team/").content.decode()

    worker_env.start()
    wait_until(lambda: not AnonymizedSet.objects.filter(status=AnonymizedSet.PENDING).exists(),
               "uploads scored after the queue was lost", timeout=120, sweep=True, workers=worker_env)
    wait_for_jobs(contest, timeout=60)
    assert_stored_files_intact()
    assert_no_duplicate_current_scores()
    from scoring import io as sio
    from scoring.scores import utility
    grid = contest.grid()
    for team, content in sent.items():
        aset = AnonymizedSet.objects.get(dataset__round__contest=contest, dataset__number=team)
        assert aset.file.sha256 == hashlib.sha256(content).hexdigest()
        truth = sio.read_traces(storage.read_bytes(aset.dataset.original), grid)
        anon = sio.read_anotraces(content, grid, truth)
        expected = utility(grid, truth, anon, convention=contest.utility_convention, lambda_u=contest.lambda_u)
        current = Score.objects.get(anonymized_set=aset, metric=Score.UTILITY, current=True)
        assert current.value == pytest.approx(expected, abs=1e-12)
        assert aset.s_u == pytest.approx(expected, abs=1e-12)
    page = team1.get(f"/c/{contest.slug}/team/").content.decode()
    assert "retrying" not in page and "queued" not in page


@pytest.mark.skipif(connection.vendor != "postgresql", reason="dropping a server connection needs PostgreSQL")
def test_dropped_database_connections_under_a_job_are_retried(worker_env, fast_sweep, tmp_path):
    contest, job = generation_under_way(worker_env, "fault-db")
    with connection.cursor() as cur:  # every other session of this database: the worker's
        cur.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        assert cur.fetchone()[0] >= 1
    wait_until(lambda: Job.objects.filter(pk=job.pk, status__in=(Job.SUCCEEDED, Job.FAILED)).exists(),
               "generation finished after the dropped connections", timeout=240, sweep=True, workers=worker_env)
    job.refresh_from_db()
    # The lost connection's attempt is given back (the database's fault, not the job's): one attempt counted.
    assert (job.status, job.attempts) == (Job.SUCCEEDED, 1), job.message
    assert_generation_complete(contest, tmp_path)


def test_a_job_past_its_time_limit_fails_with_a_clear_message_and_can_be_retried(worker_env, fast_sweep, tmp_path):
    worker_env.env.update(FAST_BEATS, TRACECUP_JOB_TIME_LIMIT="2")  # the least the settings allow
    worker_env.start()
    contest = slow_contest("fault-limit", LIMIT_TRAINING)
    job = request_generation(contest)
    wait_until(lambda: Job.objects.filter(pk=job.pk, status=Job.FAILED).exists(), "failed at its limit",
               timeout=60, sweep=True, workers=worker_env)
    job.refresh_from_db()
    assert (job.message, job.attempts) == ("failed: ran past its time limit of 2 s", 1)
    assert not Dataset.objects.filter(round__contest=contest).exists()
    page, api_message = job_status_texts(contest, job)
    assert "ran past its time limit of 2 s" in page and api_message == job.message

    # The operator raises the limit, restarts the worker and retries the job from the console.
    worker_env.stop()
    del worker_env.env["TRACECUP_JOB_TIME_LIMIT"]
    worker_env.start()
    judge = Client()
    judge.force_login(contest.organizers.get(username="judge"))
    assert judge.post(f"/console/{contest.slug}/jobs/{job.pk}/retry/").status_code == 302
    retry = Job.objects.exclude(pk=job.pk).get(contest=contest, kind="generate_round")
    wait_until(lambda: Job.objects.filter(pk=retry.pk, status__in=(Job.SUCCEEDED, Job.FAILED)).exists(),
               "the retried generation finished", timeout=240, sweep=True, workers=worker_env)
    retry.refresh_from_db()
    assert retry.status == Job.SUCCEEDED, retry.message
    assert_generation_complete(contest, tmp_path)


def _named(content: bytes, name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile
    return SimpleUploadedFile(name, content, content_type="text/csv")


@pytest.fixture
def own_redis(tmp_path, monkeypatch):
    """A Redis server of this test's own (free port, no persistence), which the test may shut down and
    start again; the test process's Celery app sends to it. Never the shared Redis."""
    import shutil
    import socket
    import subprocess

    import redis

    from contest.celery import app
    from tests.worker import reset_broker_pools
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server); .ci/run has it")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class OwnRedis:
        url = f"redis://127.0.0.1:{port}/0"
        proc = None

        def start(self):
            self.proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                          "--appendonly", "no", "--dir", str(tmp_path)],
                                         stdout=subprocess.DEVNULL, start_new_session=True)
            client = redis.Redis(port=port)
            for _ in range(100):
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    time.sleep(0.1)
            pytest.fail("redis-server did not start")

        def shutdown_nosave(self):
            """What ``redis-cli shutdown nosave`` does: the server exits and every queued message is gone."""
            try:
                redis.Redis(port=port).shutdown(nosave=True)
            except redis.ConnectionError:
                pass
            self.proc.wait(10)

    own = OwnRedis()
    own.start()
    old = (app.conf.broker_url, dict(app.conf.broker_transport_options or {}))
    app.conf.broker_url = own.url
    monkeypatch.setenv("CELERY_BROKER_URL", own.url)  # Celery reads the variable before its conf (CI sets it)
    app.conf.broker_transport_options = {"visibility_timeout": 3600, "socket_connect_timeout": 3,
                                         "socket_timeout": 10}
    reset_broker_pools(app)
    try:
        yield own
    finally:
        app.conf.broker_url, app.conf.broker_transport_options = old
        reset_broker_pools(app)
        if own.proc.poll() is None:
            own.proc.terminate()
            own.proc.wait(10)


def test_a_broker_restart_with_uploads_in_flight_loses_no_upload_and_no_worker(own_redis, worker_env, fast_sweep):
    """Redis shut down without saving (its queues lost) while teams upload, back 15 s later: the workers run
    on (nobody restarts them), beat's sweep reaches them through its own queue, and every upload is
    scored, once (issue 25 item 2)."""
    from contest import queues
    from contest.celery import app
    worker_env.env.update(FAST_BEATS, CELERY_BROKER_URL=own_redis.url)
    worker_env.env.pop("TRACECUP_BROKER_DIR", None)
    worker_env.broker_dir = None
    contest = create_contest(contest_spec(slug="fault-broker"))
    generation.generate_round_data(contest.rounds.get())  # in this process, before the workers start
    teams = worker_env.start(concurrency=1, queues=queues.DEFAULT_QUEUE)  # as compose and the demo run them
    judge = worker_env.start(concurrency=1, queues=queues.JUDGE_QUEUES)

    def upload(team, challenge):
        ds = Dataset.objects.get(round__contest=contest, number=team, challenge=challenge)
        member = Client()
        member.force_login(user(f"{ds.team.name.lower()}1"))
        t0 = time.monotonic()
        r = member.post(f"/c/{contest.slug}/team/datasets/{ds.pk}/upload/",
                        {"file": _named(anonymize_csv(ds, "A3-kRR", seed=team), f"team{team}.csv")})
        assert r.status_code == 302, r.content[:500]
        assert time.monotonic() - t0 < 10, "an upload hung on the dead broker"

    for team in (1, 2, 3):  # in flight when the broker goes
        upload(team, 1)
    own_redis.shutdown_nosave()
    for team in (1, 2, 3):  # while the broker is down: stored, their jobs wait in the outbox
        upload(team, 2)
    time.sleep(15)
    own_redis.start()

    def all_scored():
        app.send_task("contest.tasks.sweep")  # what beat sends every minute, routed to the sweep's queue
        return not AnonymizedSet.objects.filter(dataset__round__contest=contest,
                                                status=AnonymizedSet.PENDING).exists()
    wait_until(all_scored, "every upload scored after the broker restart", timeout=180, workers=worker_env)
    wait_for_jobs(contest, timeout=120)
    assert teams.poll() is None and judge.poll() is None, "a worker exited:\n" + worker_env.log()
    for n in (1, 2):  # the fault did reach both workers
        assert "Connection to broker lost" in (worker_env.tmp_path / f"worker{n}.log").read_text()
    assert AnonymizedSet.objects.filter(dataset__round__contest=contest, status=AnonymizedSet.VALID).count() == 6
    for aset in AnonymizedSet.objects.filter(dataset__round__contest=contest):
        assert Score.objects.filter(anonymized_set=aset, metric=Score.UTILITY).count() == 1  # scored once
    assert_no_duplicate_current_scores()
    assert_stored_files_intact()
