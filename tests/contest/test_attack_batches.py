"""Attack scoring in batches (issue 37): one run scores a target set's queued attacks together.

Each attack keeps its own job row (status, message, error), its own score and status; one attack's
failure fails its own job only; a re-run after a crash in the middle of a batch scores no attack twice;
and the scores are those of scoring the attacks one by one.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contest import job_kinds
from contest.models import Attack, Job, PublicSet, Score, Team
from contest.services import attack_batches, data, jobs, storage, uploads
from scoring.algorithms.registry import get
from tests.contest.conftest import user

pytestmark = pytest.mark.django_db


@pytest.fixture
def attacks(closed_unobfuscated, monkeypatch, django_capture_on_commit_callbacks) -> list[Attack]:
    """Eight uploads against team 1's first public set, queued and not yet scored: teams 2 and 3 each send
    two etables (I2) and two etraces (T2); team 3's second etable is unreadable (rejected when scored).
    Their messages are recorded in ``attacks.sent`` (job ids), not sent."""
    target = PublicSet.objects.get(dataset__round__contest=closed_unobfuscated, dataset__number=1,
                                   dataset__challenge=1)
    made = Uploads()
    monkeypatch.setattr(jobs, "dispatch", lambda pk, kind: made.sent.append(pk) or True)
    with django_capture_on_commit_callbacks(execute=True):
        _upload(closed_unobfuscated, target, made)
    return made


class Uploads(list):
    """The attacks of the fixture, and the jobs whose messages were sent."""

    def __init__(self):
        super().__init__()
        self.sent: list[int] = []


def _upload(contest, target: PublicSet, made: list) -> None:
    grid = contest.grid()
    reference, pub = data.traces(target.dataset.reference, grid), data.pubtraces(target.pubtraces, grid)
    axis = target.dataset.round.time_axis()
    for number, member in ((2, "beta1"), (3, "gamma1")):
        team = Team.objects.get(contest=contest, number=number)
        for kind, name in (("etable", "I2-VisitProb"), ("etraces", "T2-VisitProb")):
            algorithm = get(name)
            for seed in (1, 2):
                estimate = algorithm.run(grid, reference, pub, seed=10 * number + seed, **algorithm.axis_params(axis))
                content = data.etable_csv(estimate) if kind == "etable" else data.etraces_csv(estimate)
                if (number, kind, seed) == (3, "etable", 2):
                    content = b"user_id\n0\n"
                made.append(uploads.submit_attack(user=user(member), attacker=team, target=target, kind=kind,
                                                  content=content, name=f"{kind}-{seed}.csv"))


def _job(attack: Attack) -> Job:
    return Job.objects.get(kind=job_kinds.SCORE_ATTACK, args__attack_id=attack.pk)


def _scores(attack: Attack) -> list[Score]:
    return list(Score.objects.filter(attack=attack).order_by("pk"))


@pytest.mark.parametrize("chunk", [3, attack_batches.STORE_CHUNK], ids=["stored-in-chunks-of-3", "in-one-chunk"])
def test_one_run_scores_every_queued_attack_on_the_target_as_one_by_one_would(attacks, monkeypatch, chunk):
    monkeypatch.setattr(attack_batches, "STORE_CHUNK", chunk)
    reads = []
    secret_truth = data.secret_truth
    monkeypatch.setattr(data, "secret_truth", lambda ps, kind: reads.append(kind) or secret_truth(ps, kind))
    assert {_job(a).status for a in attacks} == {Job.QUEUED}
    # one message for the target while its jobs queue, the first upload's; it carries the later ones
    assert attacks.sent == [_job(attacks[0]).pk]
    assert jobs.execute(_job(attacks[0]).pk) == Job.SUCCEEDED
    # every attack scored in that one run, the target's ID table and original traces read once
    assert sorted(reads) == ["reidentification", "trace_inference"]
    rows = {a.pk: Attack.objects.get(pk=a.pk) for a in attacks}
    rejected = attacks[5]
    assert rows[rejected.pk].status == Attack.REJECTED and rows[rejected.pk].errors and not _scores(rejected)
    assert _job(rejected).message == f"rejected: {rows[rejected.pk].error_total} problem(s)"
    for a in attacks:
        job = _job(a)
        assert job.status == Job.SUCCEEDED and job.progress == 1.0 and job.attempts == 1 and job.finished_at
        if a.pk != rejected.pk:
            assert rows[a.pk].status == Attack.VALID and len(_scores(a)) == 1
            assert job.message == f"score = {rows[a.pk].score:.4f}"
    # the other jobs' own messages find nothing left to do
    assert all(jobs.execute(_job(a).pk) == Job.SUCCEEDED for a in attacks[1:])
    assert all(len(_scores(a)) == 1 for a in attacks if a.pk != rejected.pk)
    # one by one (a forced re-score scores an attack alone): the same values and per-user parts, to the bit
    for a in attacks:
        if a.pk == rejected.pk:
            continue
        batch = _scores(a)[0]
        alone = uploads.score_attack(Attack(pk=a.pk), force=True)
        again = Score.objects.get(attack=a, current=True)
        assert again.pk != batch.pk and again.value == batch.value == alone.score
        assert again.per_user == batch.per_user


@pytest.mark.parametrize("failing", [0, 3], ids=["its-own-attack", "a-claimed-attack"])
def test_a_failing_attack_fails_its_own_job_and_the_batch_goes_on(attacks, monkeypatch, failing):
    broken = attacks[failing]
    read = storage.read_csv_bytes

    def read_csv_bytes(stored, *args, **kwargs):
        if stored.pk == broken.file_id:
            raise RuntimeError("the stored file cannot be read")
        return read(stored, *args, **kwargs)
    monkeypatch.setattr(storage, "read_csv_bytes", read_csv_bytes)
    leader = _job(attacks[0])
    assert jobs.execute(leader.pk) == (Job.FAILED if failing == 0 else Job.SUCCEEDED)
    failed = _job(broken)
    assert failed.status == Job.FAILED and "the stored file cannot be read" in failed.message
    assert "RuntimeError" in failed.error
    assert Attack.objects.get(pk=broken.pk).status == Attack.PENDING and not _scores(broken)
    for a in attacks:
        if a.pk != broken.pk:
            assert Attack.objects.get(pk=a.pk).status != Attack.PENDING and _job(a).status == Job.SUCCEEDED


class WorkerDied(BaseException):
    """What a killed worker leaves: nothing after it runs (not an Exception, which a job would catch)."""


def test_a_rerun_after_a_crash_in_the_middle_of_a_batch_scores_no_attack_twice(attacks, monkeypatch, settings):
    """The worker dies while scoring the sixth attack of the batch, after the leader's own (stored alone) and a
    first chunk of the claimed ones (stored together with their jobs' ends): those are kept, the rest is
    neither stored nor ended, and the re-run after the sweep scores each attack once."""
    monkeypatch.setattr(attack_batches, "STORE_CHUNK", 3)
    outcome, calls = uploads.attack_outcome, []

    def crash_on_the_sixth(attack, secrets):
        calls.append(attack.pk)
        if len(calls) == 6:
            raise WorkerDied
        return outcome(attack, secrets)
    monkeypatch.setattr(uploads, "attack_outcome", crash_on_the_sixth)
    with pytest.raises(WorkerDied):
        jobs.execute(_job(attacks[0]).pk)
    scored = [a for a in attacks if Attack.objects.get(pk=a.pk).status != Attack.PENDING]
    assert [a.pk for a in scored] == calls[:4]   # the leader's, then a chunk of 3 with its jobs' ends; not the 5th
    assert {_job(a).status for a in scored[1:]} == {Job.SUCCEEDED}
    assert {_job(a).status for a in attacks if a not in scored[1:]} == {Job.RUNNING}  # the dead run's claims
    monkeypatch.setattr(uploads, "attack_outcome", outcome)
    # the sweep finds their heartbeat stale and queues them again; their messages run them
    monkeypatch.setattr(jobs, "dispatch", lambda pk, kind: True)
    later = timezone.now() + timedelta(seconds=settings.TRACECUP_JOB_STALE_SECONDS + 1)
    assert jobs.requeue_stalled(later)["requeued"] == len(attacks) - 3
    for a in attacks:
        jobs.execute(_job(a).pk)
    for a in attacks:
        row, job = Attack.objects.get(pk=a.pk), _job(a)
        assert row.status != Attack.PENDING and job.status == Job.SUCCEEDED
        assert len(_scores(a)) == (0 if row.status == Attack.REJECTED else 1)


def test_a_forced_rescore_and_a_run_without_a_claim_score_one_attack(attacks):
    queued = [_job(a).pk for a in attacks]
    job = jobs.create_job(job_kinds.SCORE_ATTACK, contest=attacks[0].attacker.contest, dispatch=False,
                          attack_id=attacks[1].pk, force=True)
    assert attack_batches.claim_batch(None, attacks[0].pk) == []
    assert jobs.execute(job.pk) == Job.SUCCEEDED
    assert [a.pk for a in attacks if Attack.objects.get(pk=a.pk).status != Attack.PENDING] == [attacks[1].pk]
    assert set(Job.objects.filter(pk__in=queued).values_list("status", flat=True)) == {Job.QUEUED}


def test_a_run_that_ends_with_attacks_queued_on_another_set_sends_a_message_for_them(
        attacks, django_capture_on_commit_callbacks):
    """A worker's message claims the next job in the fair order, whichever set it attacks: so two messages may
    start runs on one set while another set's jobs wait, their carrier's message spent. A run that ends with
    attack scoring still queued sends a message for the oldest."""
    other = PublicSet.objects.get(dataset__round__contest=attacks[0].attacker.contest, dataset__number=1,
                                  dataset__challenge=2)
    with django_capture_on_commit_callbacks(execute=True):
        waiting = uploads.submit_attack(user=user("beta1"), attacker=attacks[0].attacker, target=other,
                                        kind="etable", content=b"user_id\n0\n", name="e.csv")
    attacks.sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.execute(_job(attacks[0]).pk) == Job.SUCCEEDED
    assert attacks.sent == [_job(waiting).pk] and _job(waiting).status == Job.QUEUED
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.execute(_job(waiting).pk) == Job.SUCCEEDED
    assert attacks.sent == [_job(waiting).pk]                      # nothing left: no message more


def test_a_database_error_while_a_chunk_is_stored_hands_each_unstored_job_back_once(
        attacks, monkeypatch, django_capture_on_commit_callbacks):
    """The store of the first chunk fails (a dropped connection): that chunk's jobs and the batch's rest go
    back to the queue, each once and with one message, and the leader's own attack stays stored."""
    from django.db import OperationalError
    monkeypatch.setattr(attack_batches, "STORE_CHUNK", 3)
    monkeypatch.setattr(attack_batches, "store_scored", lambda scored: (_ for _ in ()).throw(OperationalError("gone")))
    attacks.sent.clear()
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(jobs.TransientJobError):
        jobs.execute(_job(attacks[0]).pk)
    handed_back = [_job(a).pk for a in attacks[1:]]
    assert sorted(attacks.sent) == sorted(handed_back)  # one message each, none twice
    assert {_job(a).status for a in attacks[1:]} == {Job.QUEUED}
    assert Attack.objects.get(pk=attacks[0].pk).status != Attack.PENDING
