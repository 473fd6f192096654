"""The sample anonymizers' privacy scores on a round's sample set (paper Fig. 8, rules §13).

Each configured sample anonymizer is run on the first sample set's original
traces O; the result is pseudonymized and attacked by every judge attack of
the contest with the sample set's reference traces R, exactly as the judge
attacks a team's set; s_I,min and s_T,min are the minima over those attacks.
Everything is deterministic given the contest's seed.

Where this runs: once per round in a ``round_figures`` job
(:mod:`contest.services.round_figures`), read by the results job into the
snapshot under ``"sample_anonymizers"``; the plots page only reads it (a page
never runs an algorithm).
"""
from __future__ import annotations

from django.utils.translation import gettext_noop

from contest.services import data
from scoring.algorithms.registry import get
from scoring.pseudonymize import pseudonymize
from scoring.scores import utility
from scoring.seeds import derived_seed
from scoring.vocabulary import AttackKind

#: (label as in the paper's Fig. 8, registered anonymizer, parameters)
DEFAULT_SAMPLE_ANONYMIZERS = (
    (gettext_noop("No obfuscation"), "A1-none", {}),  # a label the pages translate
    ("MRLH(1,1,0.5)", "A2-MRLH", {"mu_x": 1, "mu_y": 1, "lambda": 0.5}),
    ("MRLH(2,2,0.5)", "A2-MRLH", {"mu_x": 2, "mu_y": 2, "lambda": 0.5}),
    ("kRR(8)", "A3-kRR", {"eps": 8.0}),
    ("kRR(10)", "A3-kRR", {"eps": 10.0}),
    ("PL(4,1)", "A4-PL", {"l": 4.0, "r": 1.0}),
    ("PL(8,1)", "A4-PL", {"l": 8.0, "r": 1.0}),
    ("Cheat(0.5)", "A5-YA", {"p": 0.5}),
    ("Cheat(1)", "A5-YA", {"p": 1.0}),
)


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
            value, _parts = data.scored_attack(contest, attack.kind, estimate, secret)
            (s_i if attack.kind == AttackKind.REIDENTIFICATION else s_t).append(value)
        out.append({"label": label, "algorithm": name, "params": params, "s_u": s_u, "valid": s_u >= contest.s_req,
                    "s_i_min": min(s_i) if s_i else 1.0, "s_t_min": min(s_t) if s_t else 1.0})
    return out
