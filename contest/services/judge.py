"""Phase close, pseudonymization and the judge's sample attacks (rules §6, 7, 8.4).

Every step is idempotent: closing twice freezes the same sets, a dataset is
pseudonymized once (a ``PublicSet`` row is unique per dataset), and a judge
attack runs once per (public set, algorithm) unless a re-score retires the
current result.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from contest import job_kinds
from contest.models import AnonymizedSet, Dataset, Job, JudgeAttackResult, Phase, PublicSet, Round, Score
from contest.services import analyses, audit, bundles, data, jobs, results, site_state, storage
from contest.services.job_messages import say
from contest.services.uploads import final_of, lock_phase, score_anonymized_set
from scoring.algorithms.registry import get
from scoring.preview import judge_mode_params as preview_mode_params
from scoring.preview import run_attack
from scoring.pseudonymize import pseudonymize
from scoring.seeds import derived_seed
from scoring.traces import AnonymizedTraces
from scoring.vocabulary import ATTACK_KINDS, AttackKind, ScoreKind


def final_choice(dataset: Dataset) -> AnonymizedSet | None:
    """The team's final set of ``dataset``: ``final_of`` its uploads (contest.services.uploads)."""
    return final_of(AnonymizedSet.objects.filter(dataset=dataset))


def public_datasets(round_: Round):
    """The round's data sets that get a public set at the close: the benchmark, and every team set whose
    frozen final upload is valid (an unsubmitted or invalid set scores 0 and is not attacked)."""
    return (Dataset.objects.filter(round=round_)
            .filter(Q(kind=Dataset.BENCHMARK) | Q(kind=Dataset.TEAM, anonymized_sets__final=True,
                                                  anonymized_sets__status=AnonymizedSet.VALID))
            .distinct().select_related("round__contest", "original", "team").order_by("number", "challenge"))


def freeze_round(round_: Round, *, user=None) -> list[Dataset]:
    """Close the round's anonymization phase and freeze each team's final set; return the data sets to
    pseudonymize (:func:`public_datasets`)."""
    contest = round_.contest
    # Close first, under the phase row's lock: uploads in flight (they share-lock it) finish before,
    # and no upload is stored after (they find the phase closed). Then every upload is known.
    with transaction.atomic():
        phase = lock_phase(Phase.objects.get(round=round_, kind=Phase.ANONYMIZATION).pk, shared=False)
        if phase.closed_at is None:
            phase.closed_at = timezone.now()
            Phase.objects.filter(pk=phase.pk).update(closed_at=phase.closed_at)
            audit.record("close_phase", contest=contest, actor=user, obj=phase, round=round_.number,
                         kind=phase.kind)
    # Uploads received before the close but not yet scored are scored now.
    for aset in AnonymizedSet.objects.filter(dataset__round=round_, status=AnonymizedSet.PENDING):
        score_anonymized_set(aset)
    with transaction.atomic():
        for ds in Dataset.objects.filter(round=round_, kind=Dataset.TEAM):
            if AnonymizedSet.objects.filter(dataset=ds, final=True).exists():
                continue
            chosen = final_choice(ds)
            if chosen is not None:
                AnonymizedSet.objects.filter(pk=chosen.pk).update(final=True)
    return list(public_datasets(round_))


def pseudonymize_dataset(ds: Dataset, *, user=None) -> PublicSet | None:
    """Pseudonymize ``ds``'s frozen final set (the benchmark: its O) once; its public set, or None for a set
    that gets none."""
    existing = PublicSet.objects.filter(dataset=ds).first()
    if existing is not None:
        return existing
    round_ = ds.round
    grid = round_.contest.grid()
    truth = data.traces(ds.original, grid)
    if ds.kind == Dataset.BENCHMARK:
        aset, anon = None, AnonymizedTraces.from_traces(truth, grid.M)
    else:
        aset = AnonymizedSet.objects.filter(dataset=ds, final=True).select_related("file").first()
        if ds.kind != Dataset.TEAM or aset is None or aset.status != AnonymizedSet.VALID:
            return None  # unsubmitted or invalid: scores 0, not attacked
        anon = data.anotraces(storage.read_csv_bytes(aset.file), grid, truth)
    pseud = pseudonymize(anon)  # cryptographically secure permutation (rules §6)
    stem = f"{ds.label}_{round_.number:03d}"
    try:
        with transaction.atomic():
            pub = storage.store_bytes(data.pubtraces_csv(pseud.pubtraces), f"pubtraces_{stem}.csv")
            # The stored ID table is exactly the bytes committed to (after the nonce line).
            ptab = storage.store_bytes(pseud.ptable_bytes(), f"ptable_{stem}.csv")
            ps = PublicSet.objects.create(dataset=ds, anonymized_set=aset, pubtraces=pub, ptable=ptab,
                                          commitment=pseud.commitment, commitment_nonce=pseud.nonce)
            audit.record("pseudonymize", contest=round_.contest, actor=user, obj=ps, dataset=ds.label,
                         commitment=pseud.commitment)
    except IntegrityError:  # another worker pseudonymized it first; its result stands
        return PublicSet.objects.get(dataset=ds)
    return ps


def close_anonymization(round_: Round, *, user=None, job=None) -> list[PublicSet]:
    """Freeze each team's final set, pseudonymize the valid ones and the benchmark, in this process.

    Returns the round's public sets. The platform's job does the same fanned out
    (:func:`close_anonymization_job`); tests and the demo call this.
    """
    datasets = freeze_round(round_, user=user)
    for i, ds in enumerate(datasets):
        jobs.progress(job, i / max(len(datasets), 1), say("pseudonymizing %(set)s", set=ds.label))
        pseudonymize_dataset(ds, user=user)
    return list(PublicSet.objects.filter(dataset__round=round_))


def request_attack_material(round_: Round, *, user=None):
    """Queue the round's attack material zip once every set to publish is pseudonymized (called by each set's
    job; the last one queues it, :func:`bundles.request_build` queues it once)."""
    wanted = public_datasets(round_).count()
    public = PublicSet.objects.filter(dataset__round=round_).count()
    if public and public >= wanted:
        return bundles.request_build(bundles.attack_material_plan(round_), user=user)
    return None


@jobs.handles(job_kinds.CLOSE_ANONYMIZATION)
def close_anonymization_job(job, round_id: int) -> str:
    """Close the phase and freeze the final sets, then fan out: one ``close_set`` job per set to publish
    (pseudonymize, then the judge's attacks) and one ``set_analyses`` job per final valid set."""
    round_ = Round.objects.select_related("contest").get(pk=round_id)
    contest = round_.contest
    datasets = freeze_round(round_, user=job.created_by)
    queued = 0
    with transaction.atomic():
        for ds in datasets:
            ps = PublicSet.objects.filter(dataset=ds).first()
            if ps is None or (contest.judge_attacks_enabled and pending_judge_attacks(ps)):
                jobs.create_job(job_kinds.CLOSE_SET, contest=contest, user=job.created_by, dataset_id=ds.pk)
                queued += 1
    # The final sets' utility figures (rules §13), one job per set, so the results job only reads them.
    analysed = len(analyses.request_set_analyses(round_, user=job.created_by))
    if not queued:  # a re-run with nothing left to do: the material, if it is missing
        request_attack_material(round_, user=job.created_by)
    return say("%(sets)s sets to publish: %(queued)s set jobs queued; analyses queued on %(analysed)s",
               sets=len(datasets), queued=queued, analysed=analysed)


@jobs.handles(job_kinds.CLOSE_SET)
def close_set_job(job, dataset_id: int) -> str:
    """One set at the phase close: pseudonymize it, queue the attack material if it was the last, then run
    the judge's attacks on it."""
    ds = Dataset.objects.select_related("round__contest", "original", "team").get(pk=dataset_id)
    ps = pseudonymize_dataset(ds, user=job.created_by)
    if ps is None:
        return say("%(set)s: no public set (no valid final upload)", set=ds.label)
    request_attack_material(ds.round, user=job.created_by)
    done = run_judge_attacks(ps, job=job) if ds.round.contest.judge_attacks_enabled else []
    return say("%(set)s pseudonymized; %(n)s judge attacks run", set=ds.label, n=len(done))


def pending_judge_attacks(ps: PublicSet) -> list[str]:
    done = set(JudgeAttackResult.objects.filter(public_set=ps, current=True).values_list("algorithm", flat=True))
    return [name for name in ps.dataset.round.contest.judge_attacks if name not in done]


def attack_seed(contest_seed: int, ps: PublicSet, algorithm: str) -> int:
    """A deterministic seed per (contest, round, set, algorithm), so a re-run reproduces the result."""
    return dataset_attack_seed(contest_seed, ps.dataset, algorithm)


def dataset_attack_seed(contest_seed: int, ds: Dataset, algorithm: str) -> int:
    """The seed the judge's attack ``algorithm`` runs with on the public set of dataset ``ds``; the
    privacy preview of every upload to ``ds`` runs with the same (:func:`judge_attack_seeds`)."""
    return derived_seed(contest_seed, ds.round.number, ds.label, algorithm)


def judge_attack_seeds(contest, ds: Dataset) -> dict[str, int]:
    """Judge attack name -> the seed it will run with on ``ds``'s public set (the preview's seeds)."""
    return {name: dataset_attack_seed(contest.seed, ds, name) for name in contest.judge_attacks}


def judge_mode_params(contest, algorithm) -> dict:
    """The contest's judge mode as the attack's parameters: ``sample_2019`` where the attack has it."""
    return preview_mode_params([algorithm.name], contest.judge_attack_mode == "sample_2019").get(algorithm.name, {})


def preview_settings(contest, round_: Round) -> dict:
    """The keyword arguments of ``scoring.preview.preview`` that make it attack as this contest's judge does:
    its attacks, clock, judge mode and scoring parameters (the seeds are the caller's)."""
    return {"attacks": list(contest.judge_attacks), "axis": round_.time_axis(),
            "convention": contest.utility_convention, "lambda_u": contest.lambda_u, "s_req": contest.s_req,
            "lambda_t": contest.lambda_t, "hospital_weight": contest.hospital_weight,
            "params": {name: judge_mode_params(contest, get(name)) for name in contest.judge_attacks}}


def run_judge_attacks(ps: PublicSet, *, job=None) -> list[JudgeAttackResult]:
    """Run every enabled judge attack not yet run on ``ps`` and store its output and score."""
    ps = PublicSet.objects.select_related("dataset__round__contest", "dataset__reference", "dataset__original",
                                          "pubtraces", "ptable").get(pk=ps.pk)
    ds = ps.dataset
    contest = ds.round.contest
    grid = contest.grid()
    names = pending_judge_attacks(ps)
    if not names:
        return []
    reference = data.traces(ds.reference, grid)
    pub = data.pubtraces(ps.pubtraces, grid)
    truth = data.traces(ds.original, grid)
    true_users = data.ptable(ps.ptable)[1]
    axis = ds.round.time_axis()
    done = []
    for i, name in enumerate(names):
        jobs.progress(job, i / len(names), say("%(attack)s on %(set)s", attack=name, set=ds.label))
        algorithm = get(name)
        if algorithm.kind not in ATTACK_KINDS:
            raise ValueError(f"judge attack {name} is a {algorithm.kind}, not an attack")
        # The one attack path the privacy preview also takes (scoring.preview.run_attack); the
        # slot-of-day attacks (I3/T3's 8:00-8:59) follow this contest's clock, not 2019's.
        outcome = run_attack(algorithm, grid, reference, pub, seed=attack_seed(contest.seed, ps, name),
                             original=truth, true_users=true_users, axis=axis, lambda_t=contest.lambda_t,
                             hospital_weight=contest.hospital_weight, params=judge_mode_params(contest, algorithm))
        kind = AttackKind(algorithm.kind)
        parts = outcome.parts  # the score's per-user parts, from the same pass as the score
        content = (data.etable_csv(outcome.output) if kind is AttackKind.REIDENTIFICATION
                   else data.etraces_csv(outcome.output))
        metric, fname = ScoreKind(kind), f"{kind.file_kind}_{name}-{ds.label}_{ds.round.number:03d}.csv"
        try:
            with transaction.atomic():
                stored = storage.store_bytes(content, fname)
                result = JudgeAttackResult.objects.create(public_set=ps, algorithm=name, kind=algorithm.kind,
                                                          params=outcome.params, seed=outcome.seed, output=stored,
                                                          score=outcome.score)
                Score.objects.create(dataset=ds, metric=metric, value=outcome.score, judge_attack=result,
                                     per_user=data.per_user_json(parts))
            done.append(result)
        except IntegrityError:
            pass  # a concurrent duplicate run stored it first
    return done


@jobs.handles(job_kinds.JUDGE_ATTACKS)
def judge_attacks_job(job, public_set_id: int) -> str:
    ps = PublicSet.objects.get(pk=public_set_id)
    done = run_judge_attacks(ps, job=job)
    return say("%(n)s judge attacks run on %(set)s", n=len(done), set=ps.dataset.label)


def anonymization_closing(round_: Round, now=None) -> bool:
    """Whether ``round_``'s anonymization phase is past its deadline, closed, or has a close queued."""
    now = now or timezone.now()
    if Phase.objects.filter(round=round_, kind=Phase.ANONYMIZATION).exclude(
            closed_at__isnull=True, closes_at__gt=now).exists():
        return True
    return close_queued(round_.pk)


def final_set_ids(round_: Round) -> list[int]:
    """The ids of the sets that count as final in ``round_`` now (:func:`final_of`, one per team data set)."""
    by_dataset: dict[int, list[AnonymizedSet]] = {}
    for aset in AnonymizedSet.objects.filter(dataset__round=round_).only("pk", "dataset_id", "seq", "status",
                                                                           "final", "selected"):
        by_dataset.setdefault(aset.dataset_id, []).append(aset)
    return [final.pk for final in map(final_of, by_dataset.values()) if final is not None]


def close_queued(round_id: int) -> bool:
    """Whether a close of the round's anonymization phase is queued or running."""
    return Job.objects.filter(kind=job_kinds.CLOSE_ANONYMIZATION, args__round_id=round_id,
                              status__in=(Job.QUEUED, Job.RUNNING)).exists()


def request_close(round_: Round, *, user=None):
    """Queue the close of the round's anonymization phase (organizer command or deadline).

    The close pre-empts the round's queued privacy previews (team views) of sets that are not final:
    they are marked done as skipped, work nobody reads once the phase closed. The final sets' previews
    stay queued (the final set always gets its preview): they rank last in the judge's queue
    (``contest.job_kinds``), so they run after the close's own work.
    """
    Job.objects.filter(kind=job_kinds.PRIVACY_PREVIEW, args__round_id=round_.pk, status=Job.QUEUED).exclude(
        args__anonymized_set_id__in=final_set_ids(round_)).update(
        status=Job.SUCCEEDED, finished_at=timezone.now(), message=say("skipped: the anonymization phase closed"))
    site_state.changed()
    return jobs.create_job(job_kinds.CLOSE_ANONYMIZATION, contest=round_.contest, user=user, round_id=round_.pk)


def close_phase_now(phase: Phase, *, user=None):
    """The organizer closes ``phase`` early; returns the job doing the follow-up work.

    The deadline moves to now, so no upload begun after the command is accepted. An
    anonymization phase is then closed by the judge (freeze, pseudonymize,
    judge attacks: :func:`close_anonymization_job`); an attack phase is closed
    at once and the results are recomputed (still embargoed until published).
    """
    now = timezone.now()
    contest = phase.round.contest
    with transaction.atomic():
        Phase.objects.select_for_update().get(pk=phase.pk)
        if phase.kind == Phase.ANONYMIZATION:
            Phase.objects.filter(pk=phase.pk, closes_at__gt=now).update(closes_at=now)
            return request_close(phase.round, user=user)
        lock_phase(phase.pk, shared=False)  # the attacks in flight are stored first, later ones refused
        Phase.objects.filter(pk=phase.pk).update(closes_at=min(phase.closes_at, now), closed_at=now)
        audit.record("close_phase", contest=contest, actor=user, obj=phase, round=phase.round.number,
                     kind=phase.kind)
        return results.request_results(contest, user=user)
