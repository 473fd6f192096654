"""The Celery queues of the judge's work, one per kind of work (DESIGN "Work in the background").

Pure data, importable without Django (settings, the demo command, benchmarks and
tests start workers with it). A team's upload is scored on its own queue, so it
is never stuck behind a round's generation, judge attacks or results (minutes
each at the 2019 size): a worker started on ``interactive`` answers teams while
others grind through the round. ``celery -A contest worker -Q <queues>`` picks
what a worker serves. ``contest.services.jobs`` routes each job kind here.
"""

#: The job queues, one per kind of work. Which kinds go to which queue, and their ranks within it, is
#: declared with each kind (``contest.job_kinds``).
INTERACTIVE, GENERATION, JUDGE, RESULTS = "interactive", "generation", "judge", "results"
NAMES: tuple[str, ...] = (INTERACTIVE, GENERATION, JUDGE, RESULTS)

# The tables below go once contest.services.jobs reads them from contest.job_kinds (the next commit).
#: queue -> the job kinds (contest.services.jobs.KINDS) sent to it
QUEUES: dict[str, tuple[str, ...]] = {
    "interactive": ("score_anonymized", "score_attack", "email_announcement"),
    "generation": ("generate_round", "generate_dataset"),
    "judge": ("close_anonymization", "close_set", "judge_attacks", "set_analyses", "privacy_preview"),
    "results": ("compute_results", "rescore", "round_figures", "build_bundle"),
}

#: job kind -> its queue
QUEUE_OF: dict[str, str] = {kind: queue for queue, kinds in QUEUES.items() for kind in kinds}

#: Ranks within a queue, first served first. A worker does not run the jobs in the broker's order: each
#: message wakes it to claim its queue's next job by a database query (``contest.services.jobs.claim_next``),
#: the queued job of the best rank, then of the team served least recently, then the oldest. The deadline's
#: own work (the close, the judge's attacks) never waits behind previews, a team's convenience that a
#: burst of uploads queues by the dozen. Kinds not listed rank ``SCORING``.
CLOSE, SCORING, PREVIEW = 0, 1, 2
RANK: dict[str, int] = {"close_anonymization": CLOSE, "close_set": CLOSE, "judge_attacks": CLOSE,
                        "privacy_preview": PREVIEW}


def rank(kind: str) -> int:
    """The rank of job ``kind`` within its queue (:data:`RANK`; lower is served first)."""
    return RANK.get(kind, SCORING)


#: The teams' queue; also anything not routed by kind.
DEFAULT_QUEUE = "interactive"

#: The periodic sweep's own queue (beat sends it there), which every worker serves besides its work
#: (``contest.workers.worker_command`` adds it): the sweep watches the job queues, so it must not wait in
#: one of them (a dead teams' worker would have silenced the sweep that re-sends the teams' jobs).
SWEEP_QUEUE = "sweep"

#: Every queue, for ``-Q``: a single worker that does everything (tests, a small contest).
ALL_QUEUES = ",".join(QUEUES)

#: Every queue but the teams', for ``-Q``: the judge's workers.
JUDGE_QUEUES = ",".join(q for q in QUEUES if q != DEFAULT_QUEUE)


def with_sweep(queues: str) -> str:
    """``queues`` (comma-separated, for ``-Q``) and the sweep's queue: what a worker serves."""
    names = [q for q in queues.split(",") if q]
    return ",".join(names + ([] if SWEEP_QUEUE in names else [SWEEP_QUEUE]))


#: Options of every worker (``contest.workers.worker_command``, docker-compose): no mingle and no gossip.
#: Neither is used (job rows carry the state), and gossip's restart after a lost broker connection is
#: what stopped the teams' worker on a Redis restart (errors in Gossip's teardown, Celery 5.7
#: with redis 8.1).
WORKER_OPTIONS = ("--without-mingle", "--without-gossip")
