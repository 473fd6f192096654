"""The sample anonymizers' privacy scores on a round's sample set (paper Fig. 8, SPEC 13).

Each configured sample anonymizer is run on the first sample set's original
traces O; the result is pseudonymized and attacked by every judge attack of
the contest with the sample set's reference traces R, exactly as the judge
attacks a team's set; s_I,min and s_T,min are the minima over those attacks.
Everything is deterministic given the contest's seed.

Where this runs (decision, until the core has a job for it): the plots page
computes it on first view and caches it (Django's cache, keyed by the
sample file's SHA-256, the configuration and the seed), and only for sets up
to ``MAX_EVENTS`` events so that a page view stays within seconds; larger
contests show the figure once a job stores ``sample_anonymizers`` in the
results snapshot (the page reads that first).
"""
from __future__ import annotations

import hashlib
import json

from django.core.cache import cache

from contest.services import data
from scoring.algorithms.registry import get
from scoring.pseudonymize import pseudonymize
from scoring.scores import utility
from scoring.seeds import derived_seed
from scoring.vocabulary import AttackKind

#: (label as in the paper's Fig. 8, registered anonymizer, parameters)
DEFAULT_SAMPLE_ANONYMIZERS = (
    ("No obfuscation", "A1-none", {}),
    ("MRLH(1,1,0.5)", "A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.5}),
    ("MRLH(2,2,0.5)", "A2-MRLH", {"mu_x": 2, "mu_y": 2, "lambda": 0.5}),
    ("kRR(8)", "A3-kRR", {"eps": 8.0}),
    ("kRR(10)", "A3-kRR", {"eps": 10.0}),
    ("PL(4,1)", "A4-PL", {"l": 4.0, "r": 1.0}),
    ("PL(8,1)", "A4-PL", {"l": 8.0, "r": 1.0}),
    ("Cheat(0.5)", "A5-YA", {"p": 0.5}),
    ("Cheat(1)", "A5-YA", {"p": 1.0}),
)

#: Largest sample set (users x original slots) evaluated while a page is served.
MAX_EVENTS = 60_000


def _seed(contest_seed: int, label: str, what: str) -> int:
    return derived_seed(contest_seed, "fig8", label, what)


def evaluate_sample_anonymizers(contest, dataset, configs=DEFAULT_SAMPLE_ANONYMIZERS) -> list[dict]:
    """Run each sample anonymizer on ``dataset`` (a sample set) and every judge attack on the result.

    Returns one dict per configuration: ``label``, ``algorithm``, ``params``,
    ``s_u``, ``valid``, ``s_i_min``, ``s_t_min`` (floats in [0, 1]; an invalid
    set keeps its attack minima for the figure, the paper plots them all).
    """
    grid = contest.grid()
    reference = data.traces(dataset.reference, grid)
    original = data.traces(dataset.original, grid)
    attacks = [get(name) for name in contest.judge_attacks]
    axis = dataset.round.time_axis()  # the slot-of-day attacks follow the contest's clock
    out = []
    for label, name, params in configs:
        anonymizer = get(name)
        anon = anonymizer.run(grid, original, seed=_seed(contest.seed, label, "anonymize"),
                              **{**anonymizer.axis_params(axis), **params})
        s_u = float(utility(grid, original, anon, convention=contest.utility_convention, lambda_u=contest.lambda_u))
        pse = pseudonymize(anon, seed=_seed(contest.seed, label, "pseudonymize"))
        secret = {"true_users": pse.user_ids, "truth": original}
        s_i, s_t = [], []
        for attack in attacks:
            estimate = attack.run(grid, reference, pse.pubtraces, seed=_seed(contest.seed, label, attack.name),
                                  **attack.axis_params(axis))
            value = data.attack_value(contest, attack.kind, estimate, secret)
            (s_i if attack.kind == AttackKind.REIDENTIFICATION else s_t).append(value)
        out.append({"label": label, "algorithm": name, "params": params, "s_u": s_u, "valid": s_u >= contest.s_req,
                    "s_i_min": min(s_i) if s_i else 1.0, "s_t_min": min(s_t) if s_t else 1.0})
    return out


def sample_anonymizers_for(contest, round_number: int | None) -> list[dict] | None:
    """Fig. 8 data for the round's first sample set: cached, or computed when small enough; else None."""
    from contest.models import Dataset

    qs = Dataset.objects.filter(round__contest=contest, kind=Dataset.SAMPLE).select_related("reference", "original",
                                                                                             "round")
    if round_number is not None:
        qs = qs.filter(round__number=round_number)
    dataset = qs.order_by("round__number", "number", "challenge").first()
    if dataset is None:
        return None
    config = json.dumps([DEFAULT_SAMPLE_ANONYMIZERS, contest.judge_attacks, contest.seed, contest.utility_convention,
                         contest.lambda_u, contest.lambda_t, contest.hospital_weight], sort_keys=True)
    key = "tracecup-fig8-" + hashlib.sha256(
        f"{dataset.original.sha256}:{dataset.reference.sha256}:{config}".encode()).hexdigest()
    found = cache.get(key)
    if found is not None:
        return found
    axis = dataset.round.time_axis()
    if contest.users_per_set * axis.slots_per_day * axis.org_days > MAX_EVENTS:
        return None
    result = evaluate_sample_anonymizers(contest, dataset)
    cache.set(key, result, timeout=None)
    return result
