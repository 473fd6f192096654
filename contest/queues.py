"""The Celery queues of the judge's work, one per kind of work (DESIGN "Work in the background").

Pure data, importable without Django (settings, the demo command, benchmarks and
tests start workers with it). A team's upload is scored on its own queue, so it
is never stuck behind a round's generation, judge attacks or results (minutes
each at the 2019 size): a worker started on ``interactive`` answers teams while
others grind through the round. ``celery -A contest worker -Q <queues>`` picks
what a worker serves. ``contest.job_kinds`` declares the queue of each job kind.
"""

#: The job queues, one per kind of work. Which kinds go to which queue, and their ranks within it, is
#: declared with each kind (``contest.job_kinds``).
INTERACTIVE, GENERATION, JUDGE, RESULTS = "interactive", "generation", "judge", "results"
NAMES: tuple[str, ...] = (INTERACTIVE, GENERATION, JUDGE, RESULTS)

#: The teams' queue; also anything not routed by kind.
DEFAULT_QUEUE = INTERACTIVE

#: The periodic sweep's own queue (beat sends it there), which every worker serves besides its work
#: (``contest.workers.worker_command`` adds it): the sweep watches the job queues, so it must not wait in
#: one of them (a dead teams' worker would have silenced the sweep that re-sends the teams' jobs).
SWEEP_QUEUE = "sweep"

#: Every queue, for ``-Q``: a single worker that does everything (tests, a small contest).
ALL_QUEUES = ",".join(NAMES)

#: Every queue but the teams', for ``-Q``: the judge's workers.
JUDGE_QUEUES = ",".join(q for q in NAMES if q != DEFAULT_QUEUE)


def with_sweep(queues: str) -> str:
    """``queues`` (comma-separated, for ``-Q``) and the sweep's queue: what a worker serves."""
    names = [q for q in queues.split(",") if q]
    return ",".join(names + ([] if SWEEP_QUEUE in names else [SWEEP_QUEUE]))


#: Options of every worker (``contest.workers.worker_command``, docker-compose): no mingle and no gossip.
#: Neither is used (job rows carry the state), and gossip's restart after a lost broker connection is
#: what stopped the teams' worker on a Redis restart (errors in Gossip's teardown, Celery 5.7
#: with redis 8.1).
WORKER_OPTIONS = ("--without-mingle", "--without-gossip")
