"""A round's data generation (SPEC 8.2, 11): train or load the synthesizer, generate R and O.

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
parameters (PPMTF+: ``synth.generate.CONTEST_DEFAULTS``, ``K``, ``sweeps``,
and ``lead_minutes``/``tail_minutes``, the model's full day around the
contest's, defaults set by ``python -m synth calibrate``; sglt and coloc:
``synth.methods.SCHEMAS``), ``pool_days``, ``day_split`` (``chronological``:
reference = the earlier days, paper 3.3, default; or ``random``) and the
method's generation options under ``options``.

Idempotent: a round whose datasets all exist is left alone; a partial run
(worker died) completes the missing datasets from the same seed, and the
generator is deterministic per (seed, team, challenge), so the bytes are the
ones a full run would have written.
"""
from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import numpy as np
from django.db import IntegrityError, transaction
from django.utils import timezone

from contest.models import Dataset, Round, Team
from contest.services import audit, data, figures, jobs, round_figures, storage
from scoring.traces import Traces
from synth.city import CityModel
from synth.generate import generate_round
from synth.methods import METHODS, SCHEMAS, load_model, train_contest_model

CHALLENGE_FLAGS = {1: "IDP", 2: "TRP"}


def _round_seed(round_: Round) -> int:
    return int(np.random.SeedSequence([round_.contest.seed, round_.number]).generate_state(1)[0])


def _train_model(round_: Round, job=None):

    if round_.model_file_id:
        return load_model(storage.read_bytes(round_.model_file))
    contest = round_.contest
    method = contest.synthesizer
    p = contest.synthesizer_params or {}

    def prog(done, total, message):
        jobs.progress(job, 0.5 * done / max(total, 1), f"training {method}: {message}")

    training = set(SCHEMAS[method]["training"]) | {"train_users", "train_days"}
    model = train_contest_model(method, contest.grid(), round_.time_axis(), seed=_round_seed(round_),
                                city_seed=int(p.get("city_seed", contest.seed % (2**31))), progress=prog,
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


def _generate_files(round_: Round, out: Path, n_teams: int, job=None) -> dict:
    """Write the round's files into ``out`` and return the manifest."""
    contest = round_.contest
    p = contest.synthesizer_params or {}
    grid = contest.grid()
    axis = round_.time_axis()
    seed = _round_seed(round_)
    if contest.synthesizer in METHODS:
        model = _train_model(round_, job)

        def prog(done, total, message):
            jobs.progress(job, 0.5 + 0.45 * done / max(total, 1), f"generating: {message}")

        return generate_round(model, out, n_teams, users=contest.users_per_set, ref_days=round_.ref_days,
                              org_days=round_.org_days, seed=seed, pool_days=p.get("pool_days"), grid=grid,
                              slots=axis.slots_per_day, slot_start_minute=axis.start_minute,
                              slot_minutes=axis.slot_minutes, day_split=p.get("day_split", "chronological"),
                              progress=prog, **(p.get("options") or {}))
    if contest.synthesizer == "city":
        return _generate_city(round_, out, n_teams, seed, job)
    raise ValueError(f"unknown synthesizer {contest.synthesizer!r}; expected one of {', '.join(METHODS)} or city")


def _generate_city(round_: Round, out: Path, n_teams: int, seed: int, job=None) -> dict:

    contest = round_.contest
    p = contest.synthesizer_params or {}
    grid = contest.grid()
    axis = round_.time_axis()
    city = CityModel(grid, seed=int(p.get("city_seed", contest.seed % (2**31))))
    grid.write_info_region(out / "info_region.csv")
    axis.write_info_time(out / "info_time.csv")
    roles = [(t, "team") for t in range(1, n_teams + 1)] + [
        (n_teams + 1, "benchmark"), (n_teams + 2, "sample"), (n_teams + 3, "sample")]
    sets = []
    m = contest.users_per_set
    total = len(roles) * 2
    for n, (team, role) in enumerate((t, r) for t, r in roles for _ in (0, 1)):
        d = 1 + n % 2
        flag = CHALLENGE_FLAGS[d]
        tr = city.simulate(m, axis.ref_days + axis.org_days, time_axis=axis,
                           seed=int(np.random.SeedSequence([seed, team, d]).generate_state(1)[0]))
        S = axis.slots_per_day
        ref, org = tr.regions[:, :S * axis.ref_days], tr.regions[:, S * axis.ref_days:]
        names = {}
        for kind, tids, arr in (("ref", axis.ref_time_ids(), ref), ("org", axis.org_time_ids(), org)):
            names[kind] = f"{kind}traces_team{team:03d}_data{d:02d}_{flag}.csv"  # 2019 file names
            (out / names[kind]).write_bytes(data.traces_csv(Traces(np.arange(1, m + 1), tids, arr)))
        sets.append(dict(team=team, role=role, data=d, flag=flag, reftraces=names["ref"], orgtraces=names["org"]))
        jobs.progress(job, 0.95 * (n + 1) / total, f"team {team:03d} data{d:02d} {flag} ({role})")
    return dict(generator="city", generator_version="tracecup-city-1", seed=seed, sets=sets)


def set_numbers(contest, team_numbers: list[int]) -> dict[int, int]:
    """generated number -> stored number of a round's sets, for the approved teams ``team_numbers`` (sorted).

    The generators number a round's sets 1..tau (teams), tau+1 (benchmark), tau+2 and tau+3 (samples)
    (SPEC 4). Each round must give the benchmark and the samples the numbers of the contest's earlier
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


def renumber_sets(manifest: dict, out: Path, numbers: dict[int, int]) -> None:
    """Give the generated sets in ``manifest`` (files in ``out``) their stored numbers ``numbers``
    (:func:`set_numbers`): the manifest's ``team`` and the 2019 file names (``..._teamNNN_...``)."""
    moves = [(s, int(s["team"]), numbers[int(s["team"])]) for s in manifest["sets"]]
    moves = [(s, old, new) for s, old, new in moves if old != new]
    staged = []
    for s, old, new in moves:  # two steps: a new name may be another set's old name
        for key in ("reftraces", "orgtraces"):
            tmp = f"renumber-{s[key]}"
            (out / s[key]).rename(out / tmp)
            staged.append((s, key, tmp, s[key].replace(f"team{old:03d}", f"team{new:03d}")))
        s["team"] = new
    for s, key, tmp, name in staged:
        (out / tmp).rename(out / name)
        s[key] = name


def generate_round_data(round_: Round, *, user=None, job=None) -> list[Dataset]:
    """Generate and store every dataset of ``round_`` (idempotent)."""
    contest = round_.contest
    teams = {t.number: t for t in Team.objects.filter(contest=contest, approved=True)}
    n_teams = len(teams)
    if n_teams == 0:
        raise ValueError("the contest has no approved teams to generate data for")
    expected = (n_teams + 3) * 2
    if Dataset.objects.filter(round=round_).count() >= expected:
        return list(Dataset.objects.filter(round=round_))
    with tempfile.TemporaryDirectory(prefix="tracecup-gen-") as tmp:
        out = Path(tmp)
        manifest = _generate_files(round_, out, n_teams, job)
        renumber_sets(manifest, out, set_numbers(contest, sorted(teams)))
        generator = f"{manifest.get('generator', contest.synthesizer)} {manifest.get('generator_version', '')}".strip()
        with transaction.atomic():
            locked = Round.objects.select_for_update().get(pk=round_.pk)
            if locked.info_region_id is None:
                Round.objects.filter(pk=round_.pk).update(
                    info_region=storage.store_bytes((out / "info_region.csv").read_bytes(), "info_region.csv"),
                    info_time=storage.store_bytes((out / "info_time.csv").read_bytes(), "info_time.csv"),
                    manifest=json.loads(json.dumps(manifest, default=str)), generated_at=timezone.now())
        for s in manifest["sets"]:
            number, d = int(s["team"]), int(s["data"])
            if Dataset.objects.filter(round=round_, number=number, challenge=d).exists():
                continue
            kind = {"team": Dataset.TEAM, "benchmark": Dataset.BENCHMARK, "sample": Dataset.SAMPLE}[s["role"]]
            try:
                with transaction.atomic():
                    ref = storage.store_bytes((out / s["reftraces"]).read_bytes(), s["reftraces"])
                    org = storage.store_bytes((out / s["orgtraces"]).read_bytes(), s["orgtraces"])
                    ds = Dataset.objects.create(round=round_, kind=kind, number=number, challenge=d,
                                                team=teams.get(number) if kind == Dataset.TEAM else None,
                                                reference=ref, original=org, seed=int(manifest.get("seed", 0)),
                                                generator=generator)
                    if kind == Dataset.TEAM:  # the team's map page shows O's population from the start
                        figures.store_dataset_population(ds)
            except IntegrityError:
                pass  # created concurrently by a duplicate delivery
    datasets = list(Dataset.objects.filter(round=round_))
    audit.record("generate_round", contest=contest, actor=user, obj=round_, round=round_.number,
                 datasets=len(datasets), generator=generator,
                 sha256={d.label: [d.reference.sha256, d.original.sha256] for d in datasets})
    return datasets


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
            "per_user": (privacy or {}).get("per_user"),
            "failing": sum(int(r.get("failing", 0)) for r in reports),
            "tested": any("failing" in r for r in reports),
            "planted": sum(int(r.get("colocations_planted", 0)) for r in reports)
            if any("colocations_planted" in r for r in reports) else None}


@jobs.handles("generate_round")
def generate_round_job(job, round_id: int) -> str:
    round_ = Round.objects.select_related("contest").get(pk=round_id)
    datasets = generate_round_data(round_, user=job.created_by, job=job)
    # The round's data-only figures (fairness, sample anonymizers) are computed now, once, while the
    # teams anonymize; the results snapshots read them (contest.services.round_figures).
    round_figures.request(round_, user=job.created_by)
    return f"{len(datasets)} datasets for {round_.name}"


def request_generation(round_: Round, *, user=None):
    return jobs.create_job("generate_round", contest=round_.contest, user=user, round_id=round_.pk)
