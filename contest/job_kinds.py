"""Every kind of background job, declared once (DESIGN "Work in the background").

A kind's one declaration, :func:`_declare` below, states its name, the queue it is sent to
(``contest.queues``), its rank within that queue and the label a person reads. Everything else is derived
from here: ``Job.kind``'s choices (:data:`CHOICES`), the queue table (:data:`BY_QUEUE`, :data:`QUEUE_OF`),
the ranks the workers claim by (:func:`rank`) and the console's labels (:func:`label`, or
``job.get_kind_display()``). Code names a kind by its constant (``job_kinds.CLOSE_SET``), never by a
string; the service that does the work binds its handler with ``@jobs.handles(job_kinds.CLOSE_SET)``.
``tests/contest/test_job_kinds.py`` fails when a kind is named a second way.

Importable without Django's settings (the labels are lazy), like ``contest.queues``.
"""
from __future__ import annotations

from typing import NamedTuple

from django.utils.translation import gettext_lazy as _

from contest.queues import GENERATION, INTERACTIVE, JUDGE, NAMES, RESULTS

#: Ranks within a queue, first served first. A worker does not run the jobs in the broker's order: each
#: message wakes it to claim its queue's next job by a database query (``contest.services.jobs.claim_next``),
#: the queued job of the best rank, then of the team served least recently, then the oldest. The deadline's
#: own work (the close, the judge's attacks) never waits behind previews, a team's convenience that a
#: burst of uploads queues by the dozen.
CLOSE, SCORING, PREVIEW = 0, 1, 2
RANKS = (CLOSE, SCORING, PREVIEW)


class JobKind(NamedTuple):
    """One kind of job: its name (``Job.kind``), queue, rank (:data:`RANKS`) and label (lazy, translatable)."""

    name: str
    queue: str
    rank: int
    label: str


#: name -> its declaration, in the order declared (the console lists the kinds in this order).
DECLARED: dict[str, JobKind] = {}


def _declare(name: str, *, queue: str, rank: int, label) -> str:
    """Declare job kind ``name`` (once) and return the name, the constant code refers to it by."""
    if name in DECLARED:
        raise ValueError(f"job kind {name!r} declared twice")
    if queue not in NAMES or rank not in RANKS or not str(label):
        raise ValueError(f"job kind {name!r}: queue {queue!r} (one of {NAMES}), rank {rank!r} (one of {RANKS}) "
                         "and a label, please")
    DECLARED[name] = JobKind(name, queue, rank, label)
    return name


# The teams' queue: a team's upload is never stuck behind a round's generation or the judge's work.
SCORE_ANONYMIZED = _declare("score_anonymized", queue=INTERACTIVE, rank=SCORING,  # services.uploads: s_U
                            label=_("Scoring of an anonymized set"))
SCORE_ATTACK = _declare("score_attack", queue=INTERACTIVE, rank=SCORING,  # services.uploads: etable/etraces
                        label=_("Scoring of an attack"))
EMAIL_ANNOUNCEMENT = _declare("email_announcement", queue=INTERACTIVE, rank=SCORING,  # services.announcements
                              label=_("Announcement by e-mail"))
# services.generation: train a round's model, then queue one job per data set (team x challenge)
GENERATE_ROUND = _declare("generate_round", queue=GENERATION, rank=SCORING, label=_("Generation of a round"))
GENERATE_DATASET = _declare("generate_dataset", queue=GENERATION, rank=SCORING,
                            label=_("Generation of a data set"))
# services.judge: close the phase and freeze the final sets, then per set pseudonymize and attack it
CLOSE_ANONYMIZATION = _declare("close_anonymization", queue=JUDGE, rank=CLOSE,
                               label=_("Close of the anonymization phase"))
CLOSE_SET = _declare("close_set", queue=JUDGE, rank=CLOSE, label=_("Close of a final set"))
JUDGE_ATTACKS = _declare("judge_attacks", queue=JUDGE, rank=CLOSE, label=_("Judge's attacks on a set"))
SET_ANALYSES = _declare("set_analyses", queue=JUDGE, rank=SCORING,  # services.analyses, at the close
                        label=_("Utility analyses of a final set"))
PRIVACY_PREVIEW = _declare("privacy_preview", queue=JUDGE, rank=PREVIEW,  # services.previews: the team's own
                           label=_("Privacy preview"))
# services.results: the results snapshot (and its publication), re-scoring everything
COMPUTE_RESULTS = _declare("compute_results", queue=RESULTS, rank=SCORING, label=_("Results"))
RESCORE = _declare("rescore", queue=RESULTS, rank=SCORING, label=_("Re-scoring"))
ROUND_FIGURES = _declare("round_figures", queue=RESULTS, rank=SCORING,  # services.round_figures: fairness
                         label=_("Figures of a round"))
BUILD_BUNDLE = _declare("build_bundle", queue=RESULTS, rank=SCORING,  # services.bundles: a zip to download
                        label=_("Download bundle"))

#: Every job kind's name.
KINDS: tuple[str, ...] = tuple(DECLARED)

#: ``Job.kind``'s choices: (name, label).
CHOICES: list[tuple[str, str]] = [(k.name, k.label) for k in DECLARED.values()]

#: queue -> the job kinds sent to it (every queue of ``contest.queues.NAMES``, in that order).
BY_QUEUE: dict[str, tuple[str, ...]] = {q: tuple(k.name for k in DECLARED.values() if k.queue == q) for q in NAMES}

#: job kind -> its queue.
QUEUE_OF: dict[str, str] = {k.name: k.queue for k in DECLARED.values()}


def rank(kind: str) -> int:
    """The rank of job ``kind`` within its queue (lower is served first); a kind no longer declared (an old
    row) ranks with the scoring."""
    declared = DECLARED.get(kind)
    return declared.rank if declared is not None else SCORING


def label(kind: str) -> str:
    """What a person calls job ``kind`` (translated); the name itself for a kind no longer declared."""
    declared = DECLARED.get(kind)
    return str(declared.label) if declared is not None else kind
