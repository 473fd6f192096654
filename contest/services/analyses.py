"""Analyses shown with the results (rules §13): utility beyond s_U, its baselines, and fairness.

Pure calls into :mod:`scoring.analyses` over the stored files, returning
JSON-able data that :func:`contest.services.results.snapshot` stores in the
results snapshot under ``"analyses"`` (so the pages read, never compute, and
the embargo applies to them like to every other result).

Shape of :func:`contest_analyses`::

    {"rounds": {"<round>": {
        "utility": [ {"challenge", "team", "set_id", "s_u", "tp_tv_top50", "tm_emd", "poi_accuracy",
                      "reference": {three figures}, "uniform": {three figures}} ... ],
        "fairness": [ {"challenge", "label", "algorithm", "params", "n_teams",
                       "sd_s_i_min", "sd_s_t_min", "teams": {"<team>": [s_i_min, s_t_min]}} ... ]}},
     "poi_source": "city model (seed ...)" | None, "n_projections": 50, "seed": 0}

Decisions where rules §13 is silent:

- Only valid final sets of the teams are analysed (the benchmark is O
  itself, so its figures are trivially perfect).
- POIs are the built-in city model's (``synth.city.CityModel`` built from the
  contest grid and ``synthesizer_params["city_seed"]``, default
  ``contest.seed % 2**31``: the same city every synthesizer draws from); they
  are rebuilt, not stored, since the city model is deterministic. A contest
  whose synthesizer is none of ``synth.methods.CONTEST_SYNTHESIZERS`` gets no POI accuracy.
- TM-EMD uses 50 projections with seed 0; the uniform baseline's seed is
  derived from the contest seed and the dataset, so it is reproducible.
- Fairness (paper Appendix E, Table 2): the paper's four anonymizers
  (No obfuscation, MRLH(1,1,0.5), RR(1), PL(1,1)) run on every team's
  original traces of each challenge, attacked by the judge attacks exactly as
  for Fig. 8 (:func:`contest.services.samples.evaluate_sample_anonymizers`); the
  population SD over teams of s_I,min and s_T,min. It depends on the round's data
  alone, so a job computes it once per round (:mod:`contest.services.round_figures`).

Where the work is done (results combine, not compute): each data set's baselines are
computed by its generation job and stored on the dataset (``Dataset.baselines``); each final valid
set's figures by its ``set_analyses`` job at the phase close, stored on the set
(``AnonymizedSet.analyses``). Both are stored with the SHA-256 of their inputs
(:func:`inputs_key`); the results job reads them and computes (and stores) only a part that is missing
or whose inputs changed, so a snapshot is the same whether it combines stored parts or recomputes
everything (``tests/contest/test_results_combine.py``).
"""
from __future__ import annotations

import hashlib
import json
import logging

from django.db import transaction

from contest import job_kinds
from contest.models import AnonymizedSet, Contest, Dataset, Round
from contest.services import data, jobs, round_figures, storage
from contest.services.job_messages import say
from scoring.analyses import reference_baseline, uniform_baseline, utility_analyses
from scoring.seeds import derived_seed
from synth.city import city_model
from synth.methods import CONTEST_SYNTHESIZERS

log = logging.getLogger(__name__)

#: TM-EMD's sliced-W1 directions and their seed (rules §13).
N_PROJECTIONS = 50
PROJECTION_SEED = 0


def poi_regions(contest: Contest):
    """(n_poi,) 0-based region of every POI of the contest's city model, or None without one."""
    if contest.synthesizer not in CONTEST_SYNTHESIZERS:   # every synthesizer draws from the city model
        return None

    regions = city_model(contest.grid(), contest.city_seed).poi_region.view()   # the process's shared city: read only
    regions.flags.writeable = False
    return regions


def _uniform_seed(contest_seed: int, dataset: Dataset) -> int:
    return derived_seed(contest_seed, "uniform-baseline", dataset.round.number, dataset.number, dataset.challenge)


def _figures(grid, original, anonymized, slots, pois) -> dict:

    out = utility_analyses(grid, original, anonymized, slots, pois,
                           n_projections=N_PROJECTIONS, seed=PROJECTION_SEED)
    # NaN (no event with a POI nearby) is not JSON: store it as None.
    return {k: (None if v is None or v != v else float(v)) for k, v in out.items()}


#: Bumped when the analyses' code changes what they compute: every stored figure is then recomputed.
ANALYSES_VERSION = 1


def inputs_key(contest: Contest, dataset: Dataset, anonymized_sha256: str | None = None) -> str:
    """SHA-256 of everything a stored figure of ``dataset`` depends on: its files (and the anonymized
    set's, for a set's figures), the grid, the day's slots, the POIs' city and the projections."""
    grid = contest.grid()
    pois = poi_regions(contest)
    settings = {"version": ANALYSES_VERSION, "original": dataset.original.sha256,
                "reference": dataset.reference.sha256, "anonymized": anonymized_sha256,
                "grid": [grid.nx, grid.ny, grid.min_x, grid.max_x, grid.min_y, grid.max_y],
                "slots": contest.slots_per_day, "projections": [N_PROJECTIONS, PROJECTION_SEED],
                "uniform_seed": _uniform_seed(contest.seed, dataset),
                "pois": None if pois is None else hashlib.sha256(pois.tobytes()).hexdigest()}
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def compute_dataset_baselines(contest: Contest, dataset: Dataset, pois=None, *, original=None) -> dict:
    """The three figures of the two baselines of ``dataset``: ``{"reference": {...}, "uniform": {...}}``."""

    grid = contest.grid()
    slots = contest.slots_per_day
    original = original if original is not None else data.traces(dataset.original, grid)
    reference = data.traces(dataset.reference, grid)
    return {
        "reference": _figures(grid, original, reference_baseline(grid, reference, original, slots), slots, pois),
        "uniform": _figures(grid, original, uniform_baseline(grid, original, seed=_uniform_seed(contest.seed, dataset)),
                            slots, pois),
    }


def compute_set_analyses(aset: AnonymizedSet, pois=None, *, original=None) -> dict:
    """The three figures of one anonymized set (read from its stored file) against its original traces."""
    dataset = aset.dataset
    contest = dataset.round.contest
    grid = contest.grid()
    original = original if original is not None else data.traces(dataset.original, grid)
    anon = data.anotraces(storage.read_csv_bytes(aset.file, contest.upload_size_limit), grid, original,
                          contest.upload_size_limit)
    return _figures(grid, original, anon, contest.slots_per_day, pois)


def dataset_baselines(dataset: Dataset, *, recompute: bool = False, original=None) -> dict:
    """The baselines of ``dataset`` as stored (``Dataset.baselines``), computed and stored first if missing
    or stale (or if ``recompute``)."""
    contest = dataset.round.contest
    key = inputs_key(contest, dataset)
    stored = dataset.baselines or {}
    if not recompute and stored.get("inputs") == key:
        return stored["figures"]
    figures_ = compute_dataset_baselines(contest, dataset, poi_regions(contest), original=original)
    value = {"inputs": key, "figures": figures_}
    Dataset.objects.filter(pk=dataset.pk).update(baselines=value)
    dataset.baselines = value
    return figures_


def set_analyses(aset: AnonymizedSet, *, recompute: bool = False, original=None) -> dict:
    """The figures of ``aset`` as stored (``AnonymizedSet.analyses``), computed and stored first if
    missing or stale (or if ``recompute``)."""
    contest = aset.dataset.round.contest
    key = inputs_key(contest, aset.dataset, aset.file.sha256)
    stored = aset.analyses or {}
    if not recompute and stored.get("inputs") == key:
        return stored["figures"]
    figures_ = compute_set_analyses(aset, poi_regions(contest), original=original)
    value = {"inputs": key, "figures": figures_}
    AnonymizedSet.objects.filter(pk=aset.pk).update(analyses=value)
    aset.analyses = value
    return figures_


def _analysed_sets(round_: Round):
    """The round's valid final team sets, the ones the results analyse."""
    return (AnonymizedSet.objects.filter(dataset__round=round_, final=True, valid=True, dataset__kind=Dataset.TEAM)
            .select_related("dataset__round__contest", "dataset__original", "dataset__reference", "file", "team")
            .order_by("dataset__challenge", "dataset__number"))


def utility_rows(contest: Contest, round_: Round, *, recompute: bool = False) -> list[dict]:
    """One row per valid final team set of the round, with its dataset's baselines: read from what the
    sets' jobs stored (computed here only where missing or stale, or everything with ``recompute``)."""
    rows = []
    for aset in _analysed_sets(round_):
        ds = aset.dataset
        row = {"challenge": ds.challenge, "team": ds.number, "set_id": aset.pk, "s_u": aset.s_u}
        row.update(set_analyses(aset, recompute=recompute))
        row.update(dataset_baselines(ds, recompute=recompute))
        rows.append(row)
    return rows


def request_set_analyses(round_: Round, *, user=None) -> list:
    """Queue a ``set_analyses`` job per valid final team set of ``round_`` (at the phase close)."""
    with transaction.atomic():
        return [jobs.create_job(job_kinds.SET_ANALYSES, contest=round_.contest, user=user, anonymized_set_id=pk)
                for pk in _analysed_sets(round_).values_list("pk", flat=True)]


@jobs.handles(job_kinds.SET_ANALYSES)
def set_analyses_job(job, anonymized_set_id: int) -> str:
    """One final set's figures and its dataset's baselines (if the generation job did not store them)."""
    aset = (AnonymizedSet.objects.select_related("dataset__round__contest", "dataset__original",
                                                 "dataset__reference", "file").get(pk=anonymized_set_id))
    dataset = aset.dataset
    original = data.traces(dataset.original, dataset.round.contest.grid())
    figures_ = set_analyses(aset, original=original)
    dataset_baselines(dataset, original=original)
    return say("%(set)s: TP-TV-Top50 %(tp)s, TM-EMD %(tm)s", set=dataset.label, tp=f"{figures_['tp_tv_top50']:.4f}",
               tm=f"{figures_['tm_emd']:.4f}")


def contest_analyses(contest: Contest, *, recompute: bool = False) -> dict:
    """Every round's utility analyses and fairness figures (see the module docstring for the shape);
    ``recompute`` computes every set's figures again instead of reading the stored ones."""
    pois = poi_regions(contest)
    rounds = {}
    for rnd in Round.objects.filter(contest=contest).order_by("number"):
        if not Dataset.objects.filter(round=rnd).exists():
            continue
        rounds[str(rnd.number)] = {"utility": utility_rows(contest, rnd, recompute=recompute),
                                   "fairness": round_figures.fairness_for(rnd, recompute=recompute)}  # stored per set
    seed = contest.city_seed
    return {"rounds": rounds, "n_projections": N_PROJECTIONS, "seed": PROJECTION_SEED,
            "poi_source": None if pois is None else f"city model (seed {seed}, {len(pois)} POIs)"}


def for_snapshot(contest: Contest, *, recompute: bool = False) -> dict:
    """:func:`contest_analyses` for a results snapshot; a failure is recorded, not raised,
    so that the results themselves (minimums, awards) are never held back by an analysis."""
    try:
        return contest_analyses(contest, recompute=recompute)
    except Exception as exc:  # noqa: BLE001 - the snapshot must still be stored
        log.exception("analyses of contest %s failed", contest.slug)
        return {"rounds": {}, "error": f"{type(exc).__name__}: {exc}"}
