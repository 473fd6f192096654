"""The "Utility analyses" results page (rules §13): utility beyond s_U with its baselines, and fairness.

The figures are computed by ``contest.services.analyses`` when the results
are snapshotted and read here from the snapshot, so they follow the same
embargo as the other results pages (organizers see the latest as a preview).
"""
from __future__ import annotations

import re
from dataclasses import replace

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from contest.models import IDP, TRP
from contest.services.analyses import N_PROJECTIONS

from .common import CHALLENGE_SHORT, challenge_name, page
from .views import _round_choice, _round_links, results_page

FIGURES = ("tp_tv_top50", "tm_emd", "poi_accuracy")


#: How the analyses job names the POIs' source in the snapshot (English, ``contest.services.analyses``).
_CITY_POIS = re.compile(r"city model \(seed (?P<seed>\d+), (?P<n>\d+) POIs\)")


def poi_source_text(source: str | None) -> str | None:
    """The snapshot's ``poi_source`` in the page language: the built-in city model with its seed and number
    of points of interest; a source stated another way is shown as stored."""
    found = _CITY_POIS.fullmatch(source or "")
    if found is None:
        return source
    n = int(found["n"])
    return ngettext("the built-in city model (seed %(seed)s), %(n)s point of interest",
                    "the built-in city model (seed %(seed)s), %(n)s points of interest", n) % {
        "seed": found["seed"], "n": f"{n:,}"}


def _mean(values):
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


@results_page("analyses", gettext_noop("Utility analyses"))
def utility_analyses(request, contest, rv, preview):
    choice = _round_choice(request, rv, total=False)
    stored = rv.snapshot.analyses  # None: computed before the analyses were kept
    rnd = rv.snapshot.analyses_of(choice)
    tables = []
    for ch in (IDP, TRP):
        rows = [r for r in (rnd.utility if rnd else ()) if r.challenge == ch]
        set_rows = [{"label": rv.set_label(r), "s_u": r.s_u, **{k: getattr(r, k) for k in FIGURES}} for r in rows]
        baselines = []
        if rows:
            for key, label in (("reference", _("Baseline: reference traces as the anonymized traces")),
                               ("uniform", _("Baseline: uniformly random regions"))):
                baselines.append({"label": label, "key": key,
                                  **{k: _mean(getattr(getattr(r, key), k) for r in rows) for k in FIGURES}})
        tables.append({"challenge": ch, "short": CHALLENGE_SHORT[ch], "name": challenge_name(ch),
                       "rows": set_rows, "baselines": baselines, "n": len(rows)})
    fairness = []
    for ch in (IDP, TRP):
        # labels are the paper's notation ("PL(1,1)") or words the catalog holds ("No obfuscation")
        frows = [replace(f, label=_(f.label) if f.label else f.label)
                 for f in (rnd.fairness if rnd else ()) if f.challenge == ch]
        if frows:
            fairness.append({"challenge": ch, "short": CHALLENGE_SHORT[ch], "name": challenge_name(ch), "rows": frows})
    ctx = {"rv": rv, "preview": preview, "choice": choice, "tables": tables, "fairness": fairness,
           "computed": bool(stored and stored.rounds), "error": stored.error if stored else None,
           "poi_source": poi_source_text(stored.poi_source if stored else None),
           "n_projections": (stored.n_projections if stored else None) or N_PROJECTIONS,
           "round_links": _round_links(rv)}
    return page(request, "web/analyses.html", ctx, contest=contest, sub="analyses")
