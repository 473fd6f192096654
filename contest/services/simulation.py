"""A whole contest played by simulated teams through the real pipeline (``manage.py simulate_contest``).

An organizer runs this before opening a contest to teams, to know the
platform holds its size. :func:`simulate` creates a contest, has the judge
generate its data, and plays each round as teams and organizer would:

1. **generation** - each round's ``generate_round`` job (its model) and the ``generate_dataset`` job of
   each data set, then the round figures (a job per team data set);
2. **anonymize (teams)** - each simulated team makes one anonymized set per
   challenge with a sample anonymizer or A6-kmeans, parameters drawn per team
   (:data:`ANONYMIZER_CHOICES`); a share of them first send a broken file
   (one event missing), which the judge rejects, then the valid one. This is
   the teams' own computing, timed apart from the judge's;
3. **upload scoring** - every upload through ``uploads.submit_anonymized_set``
   (stored, counted, a ``score_anonymized`` job) until all are scored; then
   each team selects its last valid set;
4. **close + judge attacks** - the organizer closes the phase now: freeze, then a job per set
   (pseudonymize, the judge's attacks) and per final set's analyses, and the attack material;
5. **attack (teams)** - the attack phase opens now; each team attacks a share
   of the other teams' public sets with the given attacks (teams' computing);
6. **attack scoring** - every etable/etraces upload scored (jobs);
7. **results** - the attack phase closes and the results are published through
   the round (snapshot with awards, analyses and the fairness check).

Every judge's stage waits for its jobs, whoever runs them: this process
(``inline``: jobs run eagerly as they are queued) or Celery workers on the
same database and broker (started by the command with ``--workers``, or
already running). Each stage records its wall time, the number of jobs it waited
for, and the peak resident memory of this process and of the workers (sampled from /proc).
"""
from __future__ import annotations

import gzip
import os
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db.models import Count, Q
from django.utils import timezone

from contest.models import AnonymizedSet, Attack, Contest, Dataset, Job, Membership, Phase, PublicSet, Round
from contest.services import data, generation, jobs, judge, results, results_snapshot, schedule, uploads
from contest.services.errors import ServiceError
from contest.services.setup import create_contest
from contest.workers import process_tree, resident_mb
from scoring.algorithms.registry import get
from scoring.vocabulary import AttackKind

#: Per sample anonymizer, the parameter values a simulated team picks from (one value per parameter,
#: drawn per team and challenge), chosen so most sets meet s_req = 0.7 on the built-in city (measured
#: at 100 users: MRLH(1,1,0.1) 0.77, kRR(8) 0.75, kRR(10) 0.96, PL(4,1) 0.76, A6 0.705), a few near
#: it. Cheat (A5-YA) falls far under s_req (0.06 with p = 1): it is there for the paper's findings.
ANONYMIZER_CHOICES: dict[str, dict[str, tuple]] = {
    "A1-none": {},
    "A2-MRLH": {"mu_x": (1,), "mu_y": (1,), "lambda": (0.05, 0.1)},
    "A3-kRR": {"eps": (8.0, 10.0, 12.0)},
    "A4-PL": {"l": (4.0, 8.0, 16.0), "r": (1.0,)},
    "A5-YA": {"p": (0.5, 1.0)},
    "A6-kmeans": {"k": (10, 20, 50)},
}
DEFAULT_ANONYMIZERS = ("A2-MRLH", "A3-kRR", "A4-PL", "A6-kmeans")
#: The sample attacks (re-identification, trace inference) the simulated teams use by default.
DEFAULT_ATTACKS = ("I2-VisitProb", "T2-VisitProb")

#: The judge's stages, whose wall times add up to the "whole round" figure.
JUDGE_STAGES = ("generation", "upload scoring", "close + judge attacks", "attack scoring", "results")


class SimulationError(ServiceError, RuntimeError):
    """A stage that did not finish (a failed job, a timeout); the message says which and why."""

    code = "simulation_failed"
    status = 500


@dataclass(frozen=True)
class Plan:
    """What to simulate. Sizes as in rules §12: ``users`` per set, ``days`` of reference and of original traces."""

    teams: int = 4
    users: int = 100
    days: int = 2
    rounds: int = 1
    seed: int = 1
    anonymizers: tuple[str, ...] = DEFAULT_ANONYMIZERS
    attacks: tuple[str, ...] = DEFAULT_ATTACKS
    attack_share: float = 0.5   # share of the other teams' public sets each team attacks
    invalid_share: float = 0.1  # share of anonymized uploads preceded by a broken file
    synthesizer: str = "city"
    slug: str = ""
    open_rounds: int = 0        # the last rounds are generated but left open to uploads (not played)

    def check(self) -> None:
        """Refuse what cannot be simulated, naming the option."""
        if not 2 <= self.teams <= 200:
            raise ValueError(f"teams: {self.teams} is not between 2 and 200")
        if not 10 <= self.users <= 100_000:
            raise ValueError(f"users: {self.users} is not between 10 and 100000")
        if not 1 <= self.days <= 60 or not 1 <= self.rounds <= 5:
            raise ValueError("days must be 1-60 and rounds 1-5")
        if not 0 <= self.open_rounds < self.rounds:
            raise ValueError(f"open_rounds: {self.open_rounds} must leave at least one of {self.rounds} round(s) played")
        for name in self.anonymizers:
            if name not in ANONYMIZER_CHOICES:
                raise ValueError(f"anonymizers: {name!r} is not one of {', '.join(ANONYMIZER_CHOICES)}")
        for name in self.attacks:
            if get(name).kind not in {k.value for k in AttackKind}:
                raise ValueError(f"attacks: {name!r} is not an attack")
        if not 0 <= self.attack_share <= 1 or not 0 <= self.invalid_share <= 1:
            raise ValueError("attack_share and invalid_share are shares between 0 and 1")


@dataclass
class Stage:
    """One stage's figures: wall seconds, peak resident MB here and in the workers, what it did."""

    round: int
    name: str
    seconds: float = 0.0
    peak_mb_here: float = 0.0
    peak_mb_workers: float | None = None  # None: the workers' processes are not known (not started here)
    count: int = 0
    note: str = ""
    jobs: int = 0  # the judge's jobs the stage waited for
    #: The most jobs of one wait: the jobs that could run side by side. A stage whose jobs come one after
    #: another (results: the attack phase's close, then publishing) has 1 and cannot go faster with more
    #: workers.
    side_by_side: int = 0

    @property
    def judge(self) -> bool:
        return self.name in JUDGE_STAGES


@dataclass
class Report:
    contest: Contest
    stages: list[Stage] = field(default_factory=list)
    #: Seconds from storing to scored of an upload sent to a later round while the judge closed a round
    #: (None: no later round was open to uploads).
    probe_latency: float | None = None

    def whole_round_seconds(self, round_number: int | None = None) -> float:
        """The judge's wall time (teams' own computing excluded) of one round, or of the last one played."""
        number = round_number or max(s.round for s in self.stages if s.name == "results")
        return sum(s.seconds for s in self.stages if s.judge and s.round == number)

    def summary_lines(self) -> list[str]:
        """What the command prints at the end: the stage table, the paper's findings on the published
        results, the contest's address and ``whole round: <s> s``."""
        snap = results.published_snapshot(self.contest)
        return ["", self.table(), *findings(results_snapshot.read(snap.data)).lines(), f"contest: /c/{self.contest.slug}/",
                f"whole round: {self.whole_round_seconds():.1f} s"]

    def table(self) -> str:
        """The stage table as printed by the command (and kept in docs/benchmarks.md for the full size)."""
        lines = [f"{'round':>5} {'stage':<24} {'count':>6} {'jobs':>5} {'wall s':>8} {'here MB':>8} "
                 f"{'workers MB':>10}  note"]
        for s in self.stages:
            workers = "-" if s.peak_mb_workers is None else f"{s.peak_mb_workers:.0f}"
            jobs = f"{s.jobs}" if s.judge else "-"
            lines.append(f"{s.round:>5} {s.name:<24} {s.count:>6} {jobs:>5} {s.seconds:>8.1f} {s.peak_mb_here:>8.0f} "
                         f"{workers:>10}  {s.note}")
        return "\n".join(lines)


class _MemorySampler:
    """Peak resident memory of this process and of the worker processes (with their pool children),
    sampled every 0.2 s on a thread while a stage runs. The workers' figure is the largest single
    process (a pool child runs one job at a time), not their sum."""

    def __init__(self, pid: int, worker_pids: Callable[[], Iterable[int]] | None):
        self.pid, self.worker_pids = pid, worker_pids
        self.here = self.workers = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        self.here = max(self.here, resident_mb(self.pid))
        if self.worker_pids is not None:
            for root in self.worker_pids():
                for pid in process_tree(root):
                    self.workers = max(self.workers, resident_mb(pid))

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def __enter__(self):
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


class Simulation:
    """Plays :class:`Plan` (see the module docstring). ``log`` receives lines; ``progress`` is a
    factory of progress bars ``progress(total, description)`` with ``update(n)`` and ``close()``
    (tqdm in the command; None: no bars); ``worker_pids`` gives the workers' process ids to measure."""

    def __init__(self, plan: Plan, *, log: Callable[[str], None] = print, progress=None,
                 worker_pids: Callable[[], Iterable[int]] | None = None, timeout: float = 4 * 3600):
        plan.check()
        self.plan, self.log, self.progress, self.worker_pids = plan, log, progress, worker_pids
        self.timeout = timeout
        self.rng = random.Random(plan.seed)  # noqa: S311 - a rehearsal plan's reproducible choices, nothing secret
        self.report: Report | None = None

    # ----- the contest ---------------------------------------------------------------------
    def spec(self) -> dict:
        """The contest file (``create_contest``'s dict) of the plan: every phase of every round open to
        uploads now, the attack phases later (the simulation opens them when it gets there)."""
        p = self.plan
        slug = p.slug or f"sim-{p.teams}t-{p.users}u-{timezone.now():%Y%m%d%H%M%S}"
        rounds = [{"number": n, "name": f"Round {n}", "ref_days": p.days, "org_days": p.days,
                   "phases": {"anonymization": {"opens": "now-1h", "closes": "now+30d"},
                              "attack": {"opens": "now+31d", "closes": "now+40d"}}}
                  for n in range(1, p.rounds + 1)]
        teams = [{"number": t, "name": f"Team {t:02d}",
                  "members": [{"username": f"{slug}-t{t:02d}", "email": f"t{t:02d}@{slug}.invalid"}]}
                 for t in range(1, p.teams + 1)]
        return {"version": 1,
                # open to the public at once, as the contest it rehearses (its pages are read under load)
                "contest": {"slug": slug, "name": f"Simulation {p.teams} teams x {p.users} users", "draft": False,
                            "parameters": {"users_per_set": p.users, "synthesizer": p.synthesizer,
                                           "seed": p.seed, "anonymized_upload_limit": 10},
                            "organizers": [f"{slug}-judge"]},
                "users": [{"username": f"{slug}-judge"}], "rounds": rounds, "teams": teams}

    def run(self) -> Report:
        contest = create_contest(self.spec())
        self.report = Report(contest)
        self.organizer = contest.organizers.get()
        self.log(f"contest {contest.slug}: {self.plan.teams} teams, {self.plan.users} users, "
                 f"{self.plan.days}+{self.plan.days} days, {self.plan.rounds} round(s)")
        rounds = list(contest.rounds.order_by("number"))
        for rnd in rounds:
            with self.stage(rnd.number, "generation") as st:
                before = self._job_ids()
                generation.request_generation(rnd, user=self.organizer)
                self._wait(st, contest, before, "generation")
                st.count = Dataset.objects.filter(round=rnd).count()
                st.note = f"{st.count} data sets ({contest.synthesizer})"
        for rnd in rounds[:len(rounds) - self.plan.open_rounds]:
            self.play_round(rnd)
        return self.report

    # ----- stages ------------------------------------------------------------------------------
    class _StageTimer:
        def __init__(self, sim: Simulation, stage: Stage):
            self.sim, self.stage = sim, stage

        def __enter__(self):
            self.sampler = _MemorySampler(os.getpid(), self.sim.worker_pids).__enter__()
            self.t0 = time.perf_counter()
            return self.stage

        def __exit__(self, *exc):
            self.stage.seconds = time.perf_counter() - self.t0
            self.sampler.__exit__(*exc)
            self.stage.peak_mb_here = self.sampler.here
            self.stage.peak_mb_workers = self.sampler.workers if self.sim.worker_pids is not None else None
            self.sim.report.stages.append(self.stage)
            if exc[0] is None:
                self.sim.log(f"  round {self.stage.round} {self.stage.name}: {self.stage.seconds:.1f} s"
                             f"{' - ' + self.stage.note if self.stage.note else ''}")

    def stage(self, round_number: int, name: str) -> _StageTimer:
        return self._StageTimer(self, Stage(round=round_number, name=name))

    def play_round(self, rnd: Round) -> None:
        """One round played through the real services, stage by stage (the stage table's rows): the teams'
        uploads and their scoring, the close and the judge's attacks, the teams' attacks and their
        scoring, the results."""
        contest = rnd.contest
        members = {m.team.number: m.user for m in Membership.objects.filter(team__contest=contest)
                   .select_related("team", "user")}
        self._anonymization_stages(rnd, members)
        self._close_stage(rnd, members)
        schedule.open_attack_now(rnd, user=self.organizer)
        self._attack_stages(rnd, members)
        self._results_stage(rnd)

    def _anonymization_stages(self, rnd: Round, members: dict) -> None:
        """Every team anonymizes its sets (some a broken file first) and uploads them; the judge scores them;
        each team chooses its last valid set.

        The teams' uploads of a stage are stored in their own stage and reach the judge's workers as one
        batch when the judge's stage starts (jobs.Held): its time is the judge's work alone, not also this
        process storing files on the same cores."""
        contest = rnd.contest
        datasets = list(Dataset.objects.filter(round=rnd, kind=Dataset.TEAM)
                        .select_related("team", "original", "round__contest").order_by("number", "challenge"))
        with jobs.Held() as uploads_batch:
            with self.stage(rnd.number, "anonymize (teams)") as st:
                planned = self._plan_anonymized(rnd, datasets)
                st.count = sum(len(f) for _, f, _ in planned)
                st.note = f"{st.count} files, {sum(len(f) > 1 for _, f, _ in planned)} broken, uploaded"
                before = self._job_ids()
                sent = []
                for ds, files, _ in planned:
                    for fname, content in files:
                        sent.append(uploads.submit_anonymized_set(user=members[ds.number], dataset=ds,
                                                                  content=content, name=fname))

            with self.stage(rnd.number, "upload scoring") as st:
                uploads_batch.release()
                self._wait(st, contest, before, "upload scoring")
                statuses = dict(AnonymizedSet.objects.filter(pk__in=[a.pk for a in sent])
                                .values_list("pk", "status"))
                for ds, _files, _label in planned:  # each team's choice: its last valid set
                    mine = [a for a in sent if a.dataset_id == ds.pk and statuses[a.pk] == AnonymizedSet.VALID]
                    if mine:
                        uploads.select_anonymized_set(user=members[ds.number], aset=mine[-1])
                counts = {s: list(statuses.values()).count(s) for s in set(statuses.values())}
                st.count = len(sent)
                st.note = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))

    def _plan_anonymized(self, rnd: Round, datasets: list) -> list:
        """Each data set's files in upload order: ``(dataset, [(file name, content)...], label)``, made by
        the plan's anonymizers with parameters drawn from ``self.rng``."""
        grid, axis = rnd.contest.grid(), rnd.time_axis()
        planned = []
        bar = self._bar(len(datasets), f"round {rnd.number}: teams anonymize")
        for ds in datasets:
            name = self.plan.anonymizers[(ds.number + ds.challenge) % len(self.plan.anonymizers)]
            params = {k: self.rng.choice(v) for k, v in ANONYMIZER_CHOICES[name].items()}
            algorithm = get(name)
            anon = algorithm.run(grid, data.traces(ds.original, grid), seed=self.rng.randrange(2**31),
                                 **{**algorithm.axis_params(axis), **params})
            content = data.anotraces_csv(anon)
            files = [(f"anotraces_{ds.label}_{name}.csv", content)]
            if self.rng.random() < self.plan.invalid_share:
                files.insert(0, (f"anotraces_{ds.label}_broken.csv", _drop_last_event(content)))
            planned.append((ds, files, f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"))
            bar.update(1)
        bar.close()
        return planned

    def _close_stage(self, rnd: Round, members: dict) -> None:
        """The organizer closes the anonymization phase: pseudonymization and the judge's attacks, while a
        team uploads to a later round (the probe of the teams' queue)."""
        contest = rnd.contest
        with self.stage(rnd.number, "close + judge attacks") as st:
            before = self._job_ids()
            judge.close_phase_now(Phase.objects.get(round=rnd, kind=Phase.ANONYMIZATION), user=self.organizer)
            probe = self._probe_upload(rnd, members)  # a team uploads to a later round meanwhile
            self._wait(st, contest, before, "close + judge attacks")
            public = PublicSet.objects.filter(dataset__round=rnd)
            st.count = public.count()
            st.note = (f"{st.count} public sets, "
                       f"{public.aggregate(n=Count('judge_attacks'))['n']} judge attack results")
            if probe is not None:
                probe.refresh_from_db()
                latency = (probe.scored_at - probe.created_at).total_seconds() if probe.scored_at else None
                self.report.probe_latency = latency
                st.note += (f"; an upload to round {probe.dataset.round.number} meanwhile was scored in "
                            f"{latency:.1f} s" if latency is not None else "; the probe upload was not scored")

    def _attack_stages(self, rnd: Round, members: dict) -> None:
        """Every team attacks a share of the other teams' public sets with the plan's attacks, uploads the
        files (held, as the anonymized sets are) and the judge scores them."""
        contest = rnd.contest
        with jobs.Held() as attacks_batch:
            with self.stage(rnd.number, "attack (teams)") as st:
                planned_attacks, n_targets = self._plan_attacks(rnd, members)
                st.count = len(planned_attacks)
                st.note = f"{st.count} files ({', '.join(self.plan.attacks)}) on {n_targets} sets, uploaded"
                before = self._job_ids()
                teams = {t.number: t for t in contest.teams.all()}
                for team, ps, kind, content, name in planned_attacks:
                    uploads.submit_attack(user=members[team], attacker=teams[team], target=ps, kind=kind,
                                          content=content, name=f"{kind}_{ps.dataset.label}_{name}.csv.gz")

            with self.stage(rnd.number, "attack scoring") as st:
                attacks_batch.release()
                if planned_attacks:
                    self._wait(st, contest, before, "attack scoring")
                scored = Attack.objects.filter(target__dataset__round=rnd)
                st.count = scored.count()
                st.note = f"{scored.filter(status=Attack.VALID).count()} valid"

    def _plan_attacks(self, rnd: Round, members: dict) -> tuple[list, int]:
        """The attack files in upload order, ``(team, public set, file kind, gzipped content, attack)``, and
        how many sets are attacked: each team picks its targets, then each attack runs once per attacker
        with the attacker's own seed."""
        grid, axis = rnd.contest.grid(), rnd.time_axis()
        targets = list(PublicSet.objects.filter(dataset__round=rnd, dataset__kind=Dataset.TEAM)
                       .select_related("dataset__reference", "pubtraces"))
        planned_attacks = []
        chosen = {}
        for team in sorted(members):
            others = [ps for ps in targets if ps.dataset.number != team]
            chosen[team] = self.rng.sample(others, round(self.plan.attack_share * len(others)))
        n_targets = len({ps.pk for picks in chosen.values() for ps in picks})
        bar = self._bar(n_targets, f"round {rnd.number}: teams attack")
        for ps in targets:
            attackers = [t for t, picks in chosen.items() if ps in picks]
            if not attackers:
                continue
            reference, pub = data.traces(ps.dataset.reference, grid), data.pubtraces(ps.pubtraces, grid)
            for name in self.plan.attacks:
                algorithm = get(name)
                kind = AttackKind(algorithm.kind)
                for team in attackers:  # each team runs it with its own seed
                    estimate = algorithm.run(grid, reference, pub, seed=self.rng.randrange(2**31),
                                             **algorithm.axis_params(axis))
                    content = (data.etable_csv(estimate) if kind is AttackKind.REIDENTIFICATION
                               else data.etraces_csv(estimate))
                    # sent gzipped, as teams do with big files (and the plan holds hundreds of them)
                    planned_attacks.append((team, ps, kind.file_kind, gzip.compress(content, 1), name))
            bar.update(1)
        bar.close()
        return planned_attacks, n_targets

    def _results_stage(self, rnd: Round) -> None:
        """The attack phase closes (the results job), then the organizer publishes through this round."""
        contest = rnd.contest
        with self.stage(rnd.number, "results") as st:
            before = self._job_ids()
            judge.close_phase_now(Phase.objects.get(round=rnd, kind=Phase.ATTACK), user=self.organizer)
            self._wait(st, contest, before, "results (attack phase closed)")
            before = self._job_ids()
            results.request_results(contest, user=self.organizer, publish=True, through_round=rnd.number)
            self._wait(st, contest, before, "results (published)")
            snap = results.published_snapshot(contest)
            standing = results_snapshot.read(snap.data).standing
            st.count = snap.awards.count()
            st.note = (f"published through round {standing.through_round}, "
                       f"{'final' if standing.final else 'provisional'}, {st.count} awards")

    def _probe_upload(self, rnd: Round, members: dict) -> AnonymizedSet | None:
        """While the judge closes ``rnd``, team 1 uploads to the next round still open to uploads (as a
        team does during another round's judging): its scoring latency shows whether uploads wait
        behind the judge's work. None when no later round is open."""
        later = (Dataset.objects.filter(round__contest=rnd.contest, round__number__gt=rnd.number,
                                        round__generated_at__isnull=False, kind=Dataset.TEAM, number=1)
                 .select_related("original", "round__contest").order_by("round__number", "challenge").first())
        if later is None or not Phase.objects.filter(round=later.round, kind=Phase.ANONYMIZATION,
                                                     closed_at__isnull=True).exists():
            return None
        grid = rnd.contest.grid()
        algorithm = get("A3-kRR")
        anon = algorithm.run(grid, data.traces(later.original, grid), seed=self.plan.seed, eps=10.0,
                             **algorithm.axis_params(later.round.time_axis()))
        return uploads.submit_anonymized_set(user=members[1], dataset=later, content=data.anotraces_csv(anon),
                                             name=f"anotraces_{later.label}_probe.csv")

    # ----- waiting for the judge -------------------------------------------------------------
    def _job_ids(self) -> int:
        """The highest job id now: the jobs a stage creates have larger ones."""
        last = Job.objects.order_by("-pk").values_list("pk", flat=True).first()
        return last or 0

    def _wait(self, stage: Stage, contest: Contest, after_id: int, what: str) -> None:
        """:meth:`wait_for_jobs`, counted in ``stage``."""
        n = self.wait_for_jobs(contest, after_id, what)
        stage.jobs += n
        stage.side_by_side = max(stage.side_by_side, n)

    def wait_for_jobs(self, contest: Contest, after_id: int, what: str) -> int:
        """Block until every job of ``contest`` created after job ``after_id`` (and the jobs those
        create) has finished; a progress bar counts them. Returns how many there were. Raises
        :class:`SimulationError` on a failed job or after the timeout."""
        deadline = time.monotonic() + self.timeout
        bar, shown = None, 0
        while True:
            qs = Job.objects.filter(contest=contest, pk__gt=after_id)
            counts = qs.aggregate(total=Count("pk"),
                                  open=Count("pk", filter=Q(status__in=(Job.QUEUED, Job.RUNNING))),
                                  failed=Count("pk", filter=Q(status=Job.FAILED)))
            if counts["failed"]:
                job = qs.filter(status=Job.FAILED).first()
                raise SimulationError(f"{what}: job {job.pk} ({job.kind}) failed: {job.message}\n{job.error[-2000:]}")
            done = counts["total"] - counts["open"]
            if bar is None and counts["total"]:
                bar = self._bar(counts["total"], what)
            if bar is not None:
                if bar.total != counts["total"]:
                    bar.total = counts["total"]
                bar.update(done - shown)
                shown = done
            if counts["total"] and not counts["open"]:
                if bar is not None:
                    bar.close()
                return counts["total"]
            if time.monotonic() > deadline:
                raise SimulationError(f"{what}: {counts['open']} job(s) unfinished after {self.timeout:.0f} s "
                                      "(are workers running on this database and broker?)")
            time.sleep(0.25)

    def _bar(self, total: int, description: str):
        return self.progress(total, description) if self.progress is not None else _NoBar(total)


class _NoBar:
    def __init__(self, total):
        self.total = total

    def update(self, n=1):
        pass

    def close(self):
        pass


def _drop_last_event(content: bytes) -> bytes:
    """The anotraces file with its last event missing: what a team's broken script sends."""
    lines = content.rstrip(b"\n").split(b"\n")
    return b"\n".join(lines[:-1]) + b"\n"


@dataclass(frozen=True)
class Findings:
    """The paper's findings (section 4.2, Fig. 8, Appendix E) measured on a published results snapshot.

    ``cheat`` and ``none``: (s_I,min, s_T,min) of Cheat(1) and of no obfuscation on the round's sample
    set; ``correlation``: Pearson R of s_I,min and s_T,min over the teams' valid final sets (``n_sets``);
    ``fairness_sd``: per challenge, the standard deviation over teams of (s_I,min, s_T,min) of no
    obfuscation on each team's own data (how much the data alone moves a score).
    """

    round: int
    cheat: tuple[float, float] | None
    none: tuple[float, float] | None
    correlation: float
    n_sets: int
    fairness_sd: dict[int, tuple[float | None, float | None]]

    def lines(self) -> list[str]:
        out = [f"paper findings (round {self.round}):"]
        if self.cheat and self.none:
            out.append(f"  Cheat(1): s_I,min {self.cheat[0]:.3f} (no obfuscation {self.none[0]:.3f}), "
                       f"s_T,min {self.cheat[1]:.3f} (no obfuscation {self.none[1]:.3f}); paper: nearly perfect "
                       "against re-identification, no better than no obfuscation against trace inference")
        out.append(f"  correlation of s_I,min and s_T,min over {self.n_sets} valid sets: R = {self.correlation:.3f} "
                   "(paper: 0.895 over 17 teams)")
        sds = ", ".join(f"challenge {c}: {_fmt(i)} / {_fmt(t)}" for c, (i, t) in sorted(self.fairness_sd.items()))
        out.append(f"  fairness SD of no obfuscation (s_I,min / s_T,min): {sds} (paper: about 0.01)")
        return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def findings(snapshot: results_snapshot.SnapshotData, round_number: int | None = None) -> Findings:
    """:class:`Findings` of round ``round_number`` (default: the last round counted in ``snapshot``)."""
    number = round_number or max(r.number for r in snapshot.standing.rounds if r.included)
    samples = {row.label: (row.s_i_min, row.s_t_min) for row in snapshot.samples_of(number)}
    stored = snapshot.correlation.get(number)  # results.set_correlations
    rho = float("nan") if stored is None or stored.r is None else stored.r
    analysed = snapshot.analyses_of(number)
    sd = {row.challenge: (row.sd_s_i_min, row.sd_s_t_min) for row in (analysed.fairness if analysed else ())
          if row.algorithm == "A1-none"}
    return Findings(round=number, cheat=samples.get("Cheat(1)"), none=samples.get("No obfuscation"),
                    correlation=rho, n_sets=stored.n_sets if stored else 0, fairness_sd=sd)
