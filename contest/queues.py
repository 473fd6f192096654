"""The Celery queues of the judge's work, one per kind of work (DESIGN "Work in the background").

Pure data, importable without Django (settings, the demo command, benchmarks and
tests start workers with it). A team's upload is scored on its own queue, so it
is never stuck behind a round's generation, judge attacks or results (minutes
each at the 2019 size): a worker started on ``interactive`` answers teams while
others grind through the round. ``celery -A contest worker -Q <queues>`` picks
what a worker serves. ``contest.services.jobs`` routes each job kind here.
"""

#: queue -> the job kinds (contest.services.jobs.KINDS) sent to it
QUEUES: dict[str, tuple[str, ...]] = {
    "interactive": ("score_anonymized", "score_attack", "email_announcement"),
    "generation": ("generate_round", "generate_dataset"),
    "judge": ("close_anonymization", "close_set", "judge_attacks", "set_analyses", "privacy_preview"),
    "results": ("compute_results", "rescore", "round_figures", "build_bundle"),
}

#: job kind -> its queue
QUEUE_OF: dict[str, str] = {kind: queue for queue, kinds in QUEUES.items() for kind in kinds}

#: The teams' queue; also the periodic sweep's (beat) and anything not routed by kind.
DEFAULT_QUEUE = "interactive"

#: Every queue, for ``-Q``: a single worker that does everything (tests, a small contest).
ALL_QUEUES = ",".join(QUEUES)

#: Every queue but the teams', for ``-Q``: the judge's workers.
JUDGE_QUEUES = ",".join(q for q in QUEUES if q != DEFAULT_QUEUE)
