"""Attack scoring in batches: one run scores a target set's queued attacks together.

Every attack upload has its own scoring job (``score_attack``), whose row is the attack's trail: its
status, message, error, attempts and worker, what the dashboard, the API and the console follow. At the
attack phase's busiest, hundreds of those jobs wait on a few dozen target sets, and scoring one attack
at the small sizes is a few milliseconds of the judge's work against as much again of a job's own
overhead (its claim, the target's ID table or original traces read for each). So the run of one attack's
job also claims the other queued scoring jobs of attacks on the same target (:func:`claim_batch`, at most
:data:`BATCH_LIMIT` in all; ``jobs.claim_also``), reads the target's secrets once and scores each attack
with the same functions as alone (``uploads.attack_outcome``): the same scores, byte for byte.

Each attack is stored in the same transaction as its own job's end (``jobs.finish_claimed_many``), only
while it is still pending, :data:`STORE_CHUNK` attacks a transaction, so a crash leaves both or neither
and a re-run after it (the sweep re-queues the unfinished jobs) never scores an attack twice. An attack
whose scoring fails fails its own job, with its traceback, and the batch goes on; a database error or the
time limit hands the jobs not yet stored back to the queue (``jobs.release_claimed``).
"""
from __future__ import annotations

import logging

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction

from contest import job_kinds
from contest.models import Attack, Job, PublicSet
from contest.services import jobs, uploads
from contest.services.job_messages import say

log = logging.getLogger(__name__)

#: The most attacks one run scores (its own and those it claims): a batch of 2019-size trace-inference
#: files (about 0.1-0.3 s each) stays well within a job's time limit and its heartbeat's period.
BATCH_LIMIT = 64


def claim_batch(job: Job | None, attack_id: int) -> list[Job]:
    """Claim for ``job``'s run (scoring attack ``attack_id``) the queued scoring jobs of the other pending
    attacks on the same target set, oldest first, up to :data:`BATCH_LIMIT` attacks with its own; none for
    a run without a claim (a test's direct call).

    Under the target's row lock, which every attack upload to it holds until it commits
    (``uploads._store_attack``): an upload whose job was left without a message of its own, because a
    queued job of the target would carry it, is either claimed here or sees that job claimed and sends
    its own. Jobs over the limit stay queued, and one of them is sent (their carrier may be in this batch).
    """
    if job is None or not job.claim:
        return []
    target_id = Attack.objects.filter(pk=attack_id).values_list("target_id", flat=True).first()
    with transaction.atomic():
        PublicSet.objects.select_for_update().filter(pk=target_id).first()
        queued = [(pk, args) for pk, args in uploads.queued_attack_scoring(target_id).values_list("pk", "args")
                  if pk != job.pk and not args.get("force")]
        claimed = jobs.claim_also(job, [pk for pk, _args in queued[:BATCH_LIMIT - 1]])
        if len(queued) >= BATCH_LIMIT:
            jobs.send(Job(pk=queued[BATCH_LIMIT - 1][0], kind=job_kinds.SCORE_ATTACK))
    return claimed


@jobs.handles(job_kinds.SCORE_ATTACK)
def score_attack_job(job, attack_id: int, force: bool = False) -> str:
    """Score attack ``attack_id`` (``force``: again, alone), and in the same run the other queued attacks on its
    target (:func:`claim_batch`). Its own failure fails this job after the others are scored."""
    if force:
        return uploads.attack_scored_message(uploads.score_attack(Attack(pk=attack_id), force=True))
    batch = claim_batch(job, attack_id)
    secrets: dict = {}  # the target's ID table and original traces, read once for the whole batch
    own_failure = None
    try:
        attack = uploads.score_attack(Attack(pk=attack_id), secrets=secrets)
    except (*jobs.TRANSIENT_DATABASE_ERRORS, SoftTimeLimitExceeded):
        jobs.release_claimed(batch, say("retrying: the run of its batch stopped"))
        raise
    except Exception as exc:  # noqa: BLE001 - this attack's own failure: its job fails below, the others go on
        own_failure = exc
    score_claimed(batch, secrets)
    wake_the_queue()
    if own_failure is not None:
        raise own_failure
    return uploads.attack_scored_message(attack)


def wake_the_queue() -> None:
    """Send a message for the oldest queued attack scoring, if any is left when a run ends.

    An upload's job has no message of its own while a queued job of the same target carries it, and a
    worker's message claims whichever job is next in the fair order (``jobs.claim_next``), so two runs may
    start on one target while another target's carrier waits: without this its jobs would wait for the
    sweep. A message too many finds nothing to claim and returns at once."""
    waiting = (Job.objects.filter(kind=job_kinds.SCORE_ATTACK, status=Job.QUEUED).order_by("created_at", "id")
               .values_list("pk", flat=True).first())
    if waiting is not None:
        jobs.send(Job(pk=waiting, kind=job_kinds.SCORE_ATTACK))


#: Attacks stored per transaction by a batch: their rows, scores and jobs' ends in a few queries, instead of
#: four for each attack (at 40 teams those made attack scoring 2.8 times the judge's own work). A run
#: stopped in the middle (a database error, the time limit) loses at most this many attacks' scoring work.
STORE_CHUNK = 16


def score_claimed(batch: list[Job], secrets: dict) -> None:
    """Score the attacks of the claimed jobs ``batch`` one after the other, storing them :data:`STORE_CHUNK` at a
    time, each with its job's end in the same transaction (:func:`store_scored`); ``secrets``: the target's,
    shared (``uploads.attack_outcome``). One attack's failure fails its own job; a database error or the time
    limit hands back every job not yet stored."""
    attacks = uploads.attacks_to_score([job.args["attack_id"] for job in batch])
    scored: list[tuple[Job, Attack, dict | None]] = []
    for n, other in enumerate(batch):
        try:
            attack = attacks.get(other.args["attack_id"])
            if attack is None:
                raise Attack.DoesNotExist(f"attack {other.args['attack_id']} does not exist")
            scored.append((other, attack, uploads.attack_outcome(attack, secrets)
                           if attack.status == Attack.PENDING else None))
            if len(scored) == STORE_CHUNK:
                store_scored(scored)
                scored = []
        except (*jobs.TRANSIENT_DATABASE_ERRORS, SoftTimeLimitExceeded):
            unstored = [job for job, _a, _o in scored]  # ``other`` among them when its chunk's store failed
            jobs.release_claimed(unstored + [job for job in batch[n:] if job not in unstored],
                                 say("retrying: the run of its batch stopped"))
            raise
        except Exception as exc:  # noqa: BLE001 - one attack's failure fails its own job, never the batch
            jobs.fail_claimed(other, exc)
    try:
        store_scored(scored)
    except jobs.TRANSIENT_DATABASE_ERRORS:
        jobs.release_claimed([job for job, _a, _o in scored], say("retrying: the run of its batch stopped"))
        raise


def store_scored(scored: list[tuple[Job, Attack, dict | None]]) -> None:
    """Store each ``(job, attack, outcome)`` (outcome None: the attack was no longer pending when read) with its
    job's end, in one transaction: an attack is stored only while its job is still this run's (the sweep did
    not hand it to another run) and the attack still pending; a job whose attack another run stored first
    ends on what that run stored. So a crash leaves both an attack and its job's end, or neither."""
    if not scored:
        return
    with transaction.atomic():
        token = scored[0][0].claim
        ours = set(Job.objects.select_for_update().filter(pk__in=[job.pk for job, _a, _o in scored], claim=token,
                                                          status=Job.RUNNING).values_list("pk", flat=True))
        stored = uploads.store_attack_outcomes([(attack, outcome) for job, attack, outcome in scored
                                                if job.pk in ours and outcome is not None])
        current = Attack.objects.in_bulk([attack.pk for job, attack, _o in scored
                                          if job.pk in ours and attack.pk not in stored])
        messages = {}
        for job, attack, outcome in scored:
            if job.pk not in ours:
                continue
            if attack.pk in stored:
                attack.status, attack.score, attack.error_total = (outcome["status"], outcome["score"],
                                                                   outcome["error_total"])
            else:  # scored by another run first: the job ends on what that run stored
                attack = current[attack.pk]
            messages[job] = uploads.attack_scored_message(attack)
        jobs.finish_claimed_many(messages)
