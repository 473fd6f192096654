"""A round's data generation (rules §8.2, 11): train or load the synthesizer, generate R and O.

Synthesizers (``Contest.synthesizer``, :mod:`synth.methods`):

- ``ppmtf`` (default): PPMTF+ trained on traces of the built-in city model
  (``synth.city``), then ``synth.generate.generate_round`` for every team,
  the benchmark and two sample sets. The trained model is stored with the
  round and reused on a re-run.
- ``sglt`` (semantic fake traces, seed 002) and ``coloc`` (co-location-aware
  traces with differential privacy, seed 003): trained the same way on the
  city's people over the contest's day, stored and reused the same way; the
  round's manifest holds each set's report (privacy tests, planted
  co-locations) and, for ``coloc``, the privacy budget (``model.privacy``).
- ``city``: each set's people are simulated directly by the built-in city
  model (no training; fastest, for rehearsals and tests).

``Contest.synthesizer_params`` (all optional, checked by
:func:`synth.methods.check_synthesizer_params` against the method's schema):
``city_seed``, ``train_users``, ``train_days``, the method's training
parameters (PPMTF+: ``synth.ppmtf_plus.CONTEST_DEFAULTS``, ``K``, ``sweeps``,
and ``lead_minutes``/``tail_minutes``, the model's full day around the
contest's, defaults set by ``python -m synth calibrate``; sglt and coloc:
``synth.methods.SCHEMAS``), ``pool_days``, ``day_split`` (``chronological``:
reference = the earlier days, paper 3.3, default; or ``random``) and the
method's generation options under ``options``.

Jobs (DESIGN "one task per object"): a ``generate_round`` job trains the
round's model once (:func:`train_round_model`, the one place where a round's
model comes from), stores it with the round's ``info_region.csv``,
``info_time.csv`` and manifest, and queues one ``generate_dataset`` job per
data set (team x challenge, benchmark, samples) on the generation queue; the
round is ready (``Round.generated_at``) when the last set is stored, and that
set's job queues the round's figures. Each set's bytes depend only on the
round's seed and the set's name (``default_rng([seed, team, challenge])``, the
calendar days from ``[seed, 0, 0]``), whichever worker builds it and in
whatever order (``tests/contest/test_generation_jobs.py``).

Idempotent: a round whose datasets all exist is left alone; a partial run
(worker died) completes the missing datasets from the same seed and the stored
model, so the bytes are the ones a full run would have written.
"""
from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from contest import job_kinds
from contest.models import Dataset, Round, Team
from contest.services import analyses, audit, data, figures, jobs, round_figures, storage, training_data
from contest.services.job_messages import say
from scoring.seeds import sequence_seed
from scoring.traces import Traces
from scoring.vocabulary import Challenge
from synth.city import CityModel, city_model
from synth.generate import (
    default_pool_days,
    generate_set,
    round_manifest,
    round_sets,
    round_time_axis,
    set_name,
)
from synth.methods import METHODS, SCHEMAS, load_model, make_synthesizer, train_contest_model

ROLE_KINDS = {"team": Dataset.TEAM, "benchmark": Dataset.BENCHMARK, "sample": Dataset.SAMPLE}


def _round_seed(round_: Round) -> int:
    """The seed of a round's generated data (scoring.seeds.sequence_seed: the data's bytes depend on it)."""
    return sequence_seed(round_.contest.seed, round_.number)


def expected_datasets(n_teams: int) -> int:
    """How many data sets a round of ``n_teams`` teams has: each team's, the benchmark's and the two sample
    sets', of both challenges."""
    return len(round_sets(n_teams))


def _approved_teams(round_: Round) -> dict[int, Team]:
    """The contest's approved teams by number (a team that joined late has a number past every set's:
    ``contest.services.teams.next_team_number``)."""
    teams = {t.number: t for t in Team.objects.filter(contest=round_.contest, approved=True)}
    if not teams:
        raise ValueError("the contest has no approved teams to generate data for")
    return teams


def _round_sets(round_: Round) -> list[tuple[int, str, int, str]]:
    """``(number, role, challenge, flag)`` of every data set of ``round_``: the generators' order
    (:func:`synth.generate.round_sets`) with the numbers the sets are stored under (:func:`set_numbers`:
    each approved team its own, the benchmark and samples those of the contest's earlier rounds)."""
    teams = sorted(_approved_teams(round_))
    numbers = set_numbers(round_.contest, teams)
    return [(numbers[t], role, d, flag) for t, role, d, flag in round_sets(len(teams))]


def train_round_model(round_: Round, job=None):
    """The round's synthesizer model: trained once on the built-in city's people and stored with the round
    (``Round.model_file``), or the stored one. None for the ``city`` synthesizer (no model).

    The one function where a round's model comes from: every set's job loads what this stored.
    """
    contest = round_.contest
    method = contest.synthesizer
    if method not in METHODS:
        return None
    if round_.model_file_id:
        return load_model(storage.read_bytes(round_.model_file))
    p = contest.synthesizer_params or {}

    def prog(done, total, message):
        jobs.progress(job, 0.9 * done / max(total, 1), say("training %(method)s: %(step)s", method=method, step=message))

    training = set(SCHEMAS[method]["training"]) | {"train_users", "train_days"}
    # The organizer's own training traces when given (contest.services.training_data), else the built-in city.
    model = training_data.train_round_model(round_, method, contest.grid(), round_.time_axis(),
                                            seed=_round_seed(round_), params=p, progress=prog) \
        or train_contest_model(method, contest.grid(), round_.time_axis(), seed=_round_seed(round_),
                               city_seed=contest.city_seed, progress=prog,
                               **{k: p[k] for k in training if k in p})
    buf = io.BytesIO()
    model.save(buf)
    with transaction.atomic():
        locked = Round.objects.select_for_update().get(pk=round_.pk)
        if locked.model_file_id is None:
            stored = storage.store_bytes(buf.getvalue(), f"{method}_model_round{round_.number}.npz",
                                         content_type="application/octet-stream")
            Round.objects.filter(pk=round_.pk).update(model_file=stored)
            round_.model_file = stored
        else:  # a concurrent run stored one first; use it so every set comes from one model
            round_.model_file = locked.model_file
            return load_model(storage.read_bytes(locked.model_file))
    return model


def _city(contest) -> CityModel:
    return city_model(contest.grid(), contest.city_seed)


def _plan(round_: Round, model, n_teams: int) -> tuple[dict, object]:
    """(the round's manifest before its sets are generated, its time axis with the calendar days)."""
    sets = [dict(team=number, role=role, data=d, flag=flag) for number, role, d, flag in _round_sets(round_)]
    contest = round_.contest
    p = contest.synthesizer_params or {}
    axis = round_.time_axis()
    seed = _round_seed(round_)
    if model is None:  # the city model's people: the contest's plain clock, no calendar days
        return dict(generator="city", generator_version="tracecup-city-1", seed=seed, sets=sets), axis
    ref, org = round_.ref_days, round_.org_days
    pool_days = p.get("pool_days") or default_pool_days(ref, org)
    day_split = p.get("day_split", "chronological")
    axis = round_time_axis(ref, org, seed=seed, pool_days=pool_days, slots=axis.slots_per_day,
                           slot_start_minute=axis.start_minute, slot_minutes=axis.slot_minutes, day_split=day_split)
    manifest = round_manifest(model, _synthesizer(round_, model), contest.grid(), axis, n_teams,
                              users=contest.users_per_set, seed=seed, pool_days=pool_days, day_split=day_split)
    manifest["sets"] = sets  # under their stored numbers
    return manifest, axis


#: The last synthesizer built in this process, keyed by its model file and options: a worker generating
#: several sets of a round builds it once (its tables take seconds at the 2019 size).
_SYNTHESIZER: dict = {}


def _synthesizer(round_: Round, model):
    contest = round_.contest
    axis = round_.time_axis()
    options = (contest.synthesizer_params or {}).get("options") or {}
    key = (round_.model_file.sha256 if round_.model_file_id else id(model), axis.slots_per_day, axis.start_minute,
           axis.slot_minutes, json.dumps(options, sort_keys=True))
    if key not in _SYNTHESIZER:
        _SYNTHESIZER.clear()
        _SYNTHESIZER[key] = make_synthesizer(model, slots=axis.slots_per_day, slot_start_minute=axis.start_minute,
                                             slot_step_minutes=axis.slot_minutes, **options)
    return _SYNTHESIZER[key]


#: The last model loaded in this process, keyed by the SHA-256 of its stored file.
_MODEL: dict = {}


def _stored_model(round_: Round):
    """The round's stored model (loaded once per process and model file)."""
    sha = round_.model_file.sha256
    if sha not in _MODEL:
        _MODEL.clear()
        _MODEL[sha] = load_model(storage.read_bytes(round_.model_file))
    return _MODEL[sha]


def write_set_files(round_: Round, team: int, challenge: int, out: Path) -> dict:
    """Write the R and O files of set (``team``, ``challenge``) of ``round_`` into ``out``; return their
    names (``reftraces``, ``orgtraces``) and the synthesizer's report of the set, if any.

    The bytes depend only on the round's seed and the set's name: the random stream is
    ``[seed, team, challenge]`` whatever else is generated, here or on another worker, and the model is
    always the stored one (never the trained object, in case saving it rounds anything).
    """
    contest = round_.contest
    seed = _round_seed(round_)
    flag = Challenge(challenge).name  # the 2019 file names' IDP / TRP
    if contest.synthesizer in METHODS:
        model = _stored_model(round_)
        return generate_set(model, _synthesizer(round_, model), out, team, challenge, flag,
                            users=contest.users_per_set, ref_days=round_.ref_days, org_days=round_.org_days,
                            seed=seed)
    if contest.synthesizer != "city":
        raise ValueError(f"unknown synthesizer {contest.synthesizer!r}; expected one of {', '.join(METHODS)} or city")
    axis = round_.time_axis()
    m = contest.users_per_set
    tr = _city(contest).simulate(m, axis.ref_days + axis.org_days, time_axis=axis,
                                 seed=sequence_seed(seed, team, challenge))
    S = axis.slots_per_day
    names = {}
    for kind, tids, arr in (("ref", axis.ref_time_ids(), tr.regions[:, :S * axis.ref_days]),
                            ("org", axis.org_time_ids(), tr.regions[:, S * axis.ref_days:])):
        names[f"{kind}traces"] = set_name(kind, team, challenge, flag)  # 2019 file names
        (out / names[f"{kind}traces"]).write_bytes(data.traces_csv(Traces(np.arange(1, m + 1), tids, arr)))
    return names


def prepare_round(round_: Round, *, job=None) -> list[tuple[int, int]]:
    """Train (or load) the round's model and store it with the round's info files and manifest (once);
    return the (team, challenge) of every data set still to generate."""
    n_teams = len(_approved_teams(round_))
    done = set(Dataset.objects.filter(round=round_).values_list("number", "challenge"))
    missing = [(team, d) for team, _role, d, _flag in _round_sets(round_) if (team, d) not in done]
    if not missing and round_.info_region_id:
        return []
    # The manifest's synthesizer options come from the stored model, as every set will.
    model = _stored_model(round_) if train_round_model(round_, job) is not None else None
    manifest, axis = _plan(round_, model, n_teams)
    with transaction.atomic():
        locked = Round.objects.select_for_update().get(pk=round_.pk)
        if locked.info_region_id is None:
            with tempfile.TemporaryDirectory(prefix="tracecup-gen-") as tmp:
                out = Path(tmp)
                round_.contest.grid().write_info_region(out / "info_region.csv")
                axis.write_info_time(out / "info_time.csv")
                info_region = storage.store_bytes((out / "info_region.csv").read_bytes(), "info_region.csv")
                info_time = storage.store_bytes((out / "info_time.csv").read_bytes(), "info_time.csv")
            manifest["files"] = {f.name: dict(sha256=f.sha256, size=f.size) for f in (info_region, info_time)}
            Round.objects.filter(pk=round_.pk).update(info_region=info_region, info_time=info_time,
                                                      manifest=json.loads(json.dumps(manifest, default=str)))
    return missing


def generate_dataset(round_: Round, team: int, challenge: int) -> Dataset:
    """Generate and store data set (``team``, ``challenge``) of a prepared round (idempotent); record its
    files' SHA-256 and the synthesizer's report in the round's manifest."""
    existing = Dataset.objects.filter(round=round_, number=team, challenge=challenge).first()
    if existing is not None:
        return existing
    teams = _approved_teams(round_)
    role = next(r for t, r, d, _f in _round_sets(round_) if (t, d) == (team, challenge))
    kind = ROLE_KINDS[role]
    contest = round_.contest
    with tempfile.TemporaryDirectory(prefix="tracecup-gen-") as tmp:
        out = Path(tmp)
        names = write_set_files(round_, team, challenge, out)
        generator = f"{round_.manifest.get('generator', contest.synthesizer)} " \
                    f"{round_.manifest.get('generator_version', '')}".strip()
        try:
            with transaction.atomic():
                ref = storage.store_bytes((out / names["reftraces"]).read_bytes(), names["reftraces"])
                org = storage.store_bytes((out / names["orgtraces"]).read_bytes(), names["orgtraces"])
                ds = Dataset.objects.create(round=round_, kind=kind, number=team, challenge=challenge,
                                            team=teams.get(team) if kind == Dataset.TEAM else None,
                                            reference=ref, original=org, seed=_round_seed(round_),
                                            generator=generator)
                locked = Round.objects.select_for_update().get(pk=round_.pk)
                manifest = locked.manifest
                for entry in manifest.get("sets", []):
                    if (int(entry["team"]), int(entry["data"])) == (team, challenge):
                        entry.update(json.loads(json.dumps(names, default=str)))
                files = manifest.setdefault("files", {})
                for stored in (ref, org):
                    files[stored.name] = dict(sha256=stored.sha256, size=stored.size)
                Round.objects.filter(pk=round_.pk).update(manifest=manifest)
                round_.manifest = manifest
        except IntegrityError:  # created concurrently by a duplicate delivery
            return Dataset.objects.get(round=round_, number=team, challenge=challenge)
    if kind == Dataset.TEAM:
        original = data.traces(ds.original, contest.grid())
        figures.store_dataset_population(ds, original)  # the team's map page shows O's population from the start
        analyses.dataset_baselines(ds, original=original)  # rules §13's baselines, read by the results job
    return ds


def finish_round(round_: Round, *, user=None) -> bool:
    """Mark the round ready once its last data set is stored (exactly once, under the round's lock), record
    the SHA-256 of every file and queue the round's figures. Returns whether this call made it ready."""
    expected = len(_round_sets(round_))
    with transaction.atomic():
        locked = Round.objects.select_for_update().get(pk=round_.pk)
        datasets = list(Dataset.objects.filter(round=round_).select_related("reference", "original"))
        if locked.generated_at is not None or len(datasets) < expected:
            return False
        now = timezone.now()
        Round.objects.filter(pk=round_.pk).update(generated_at=now)
        round_.generated_at = now
        generator = datasets[0].generator if datasets else ""
        audit.record("generate_round", contest=round_.contest, actor=user, obj=round_, round=round_.number,
                     datasets=len(datasets), generator=generator,
                     sha256={d.label: [d.reference.sha256, d.original.sha256] for d in datasets})
        # The round's data-only figures (fairness, sample anonymizers) are computed now, once, while the
        # teams anonymize; the results snapshots read them (contest.services.round_figures).
        round_figures.request(round_, user=user)
    return True


def set_numbers(contest, team_numbers: list[int]) -> dict[int, int]:
    """generated number -> stored number of a round's sets, for the approved teams ``team_numbers`` (sorted).

    The generators number a round's sets 1..tau (teams), tau+1 (benchmark), tau+2 and tau+3 (samples)
    (rules §4). Each round must give the benchmark and the samples the numbers of the contest's earlier
    rounds (the results know one benchmark team), and a team that joined after an earlier round
    (``contest.services.teams.next_team_number``: past every number in use) keeps its own number: the
    i-th generated team set goes to the i-th approved team. The identity when numbers are 1..tau
    and no earlier round disagrees (every contest whose teams did not change).
    """
    n = len(team_numbers)
    earlier = Dataset.objects.filter(round__contest=contest)
    bench = sorted(set(earlier.filter(kind=Dataset.BENCHMARK).values_list("number", flat=True)))
    samples = sorted(set(earlier.filter(kind=Dataset.SAMPLE).values_list("number", flat=True)))
    if len(bench) != 1 or len(samples) != 2 or set(bench + samples) & set(team_numbers):
        start = max([n, *team_numbers])
        bench, samples = [start + 1], [start + 2, start + 3]
    return {**{i + 1: t for i, t in enumerate(team_numbers)}, n + 1: bench[0], n + 2: samples[0], n + 3: samples[1]}


def generate_round_data(round_: Round, *, user=None, job=None) -> list[Dataset]:
    """Generate and store every dataset of ``round_`` in this process (idempotent): the demo, the commands
    and tests; the platform's jobs do the same work fanned out (:func:`generate_round_job`)."""
    missing = prepare_round(round_, job=job)
    round_.refresh_from_db()
    for n, (team, challenge) in enumerate(missing):
        generate_dataset(round_, team, challenge)
        jobs.progress(job, (n + 1) / len(missing), say("data set %(n)s of %(total)s", n=n + 1, total=len(missing)))
    finish_round(round_, user=user)
    return list(Dataset.objects.filter(round=round_))


def synthesizer_summary(manifest: dict) -> dict | None:
    """What an organizer needs from a round's generation manifest (console and API): the generator, the
    privacy budget of a DP synthesizer (epsilon per data set and per user), the fakes failing the
    privacy test (sglt) and the co-locations planted (coloc); None before generation. No seed."""
    if not manifest.get("generator"):
        return None
    privacy = (manifest.get("model") or {}).get("privacy")
    reports = [s.get("report") or {} for s in manifest.get("sets", [])]
    return {"generator": manifest["generator"],
            "budget": [[data, eps] for data, eps in sorted((privacy or {}).get("totals", {}).items())],
            # Per mechanism: epsilon and the sensitivity its noise is calibrated on (what synth.audit checks).
            "parts": [[m["mechanism"], m["epsilon"], m["sensitivity"]] for m in (privacy or {}).get("mechanisms", [])],
            "per_user": (privacy or {}).get("per_user"),
            "failing": sum(int(r.get("failing", 0)) for r in reports),
            "tested": any("failing" in r for r in reports),
            # sglt writes only fakes that pass: how many were drawn, and dropped for failing the test
            "drawn": sum(int(r.get("draws", 0)) for r in reports),
            "dropped": sum(int(r.get("dropped", 0)) for r in reports),
            "planted": sum(int(r.get("colocations_planted", 0)) for r in reports)
            if any("colocations_planted" in r for r in reports) else None}


@jobs.handles(job_kinds.GENERATE_ROUND)
def generate_round_job(job, round_id: int) -> str:
    """Train the round's model, then queue one ``generate_dataset`` job per missing data set."""
    round_ = Round.objects.select_related("contest", "model_file").get(pk=round_id)
    missing = prepare_round(round_, job=job)
    with transaction.atomic():
        for team, challenge in missing:
            jobs.create_job(job_kinds.GENERATE_DATASET, contest=round_.contest, user=job.created_by, round_id=round_.pk,
                            team=team, challenge=challenge)
    if not missing:
        finish_round(round_, user=job.created_by)
    expected = len(_round_sets(round_))
    return say("%(round)s: model ready, %(queued)s of %(expected)s data sets queued", round=round_.name,
               queued=len(missing), expected=expected)


@jobs.handles(job_kinds.GENERATE_DATASET)
def generate_dataset_job(job, round_id: int, team: int, challenge: int) -> str:
    """One data set of a round; the job that stores the round's last set marks the round ready."""
    round_ = Round.objects.select_related("contest", "model_file").get(pk=round_id)
    ds = generate_dataset(round_, team, challenge)
    ready = finish_round(round_, user=job.created_by)
    done = Dataset.objects.filter(round=round_).count()
    expected = len(_round_sets(round_))
    template = ("%(set)s of %(round)s (%(done)s of %(expected)s data sets); the round is ready" if ready
                else "%(set)s of %(round)s (%(done)s of %(expected)s data sets)")
    return say(template, set=ds.label, round=round_.name, done=done, expected=expected)


def request_generation(round_: Round, *, user=None):
    return jobs.create_job(job_kinds.GENERATE_ROUND, contest=round_.contest, user=user, round_id=round_.pk)
