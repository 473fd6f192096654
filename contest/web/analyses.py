"""The "Utility analyses" results page (rules §13): utility beyond s_U with its baselines, and fairness.

The figures are computed by ``contest.services.analyses`` when the results
are snapshotted and read here from the snapshot, so they follow the same
embargo as the other results pages (organizers see the latest as a preview).
"""
from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from contest.models import IDP, TRP

from .common import CHALLENGE_SHORT, challenge_name, page
from .views import _round_choice, _round_links, results_page

FIGURES = ("tp_tv_top50", "tm_emd", "poi_accuracy")


def _mean(values):
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


@results_page("analyses", gettext_noop("Utility analyses"))
def utility_analyses(request, contest, rv, preview):
    choice = _round_choice(request, rv, total=False)
    stored = rv.data.get("analyses") or {}
    rnd = (stored.get("rounds") or {}).get(str(choice)) or {}
    tables = []
    for ch in (IDP, TRP):
        rows = [r for r in rnd.get("utility", []) if r["challenge"] == ch]
        set_rows = [{"label": rv.set_label({"set": {"team": r["team"], "challenge": ch}}), "s_u": r["s_u"],
                     **{k: r.get(k) for k in FIGURES}} for r in rows]
        baselines = []
        if rows:
            for key, label in (("reference", _("Baseline: reference traces as the anonymized traces")),
                               ("uniform", _("Baseline: uniformly random regions"))):
                baselines.append({"label": label, "key": key,
                                  **{k: _mean(r[key].get(k) for r in rows) for k in FIGURES}})
        tables.append({"challenge": ch, "short": CHALLENGE_SHORT[ch], "name": challenge_name(ch),
                       "rows": set_rows, "baselines": baselines, "n": len(rows)})
    fairness = []
    for ch in (IDP, TRP):
        # labels are the paper's notation ("PL(1,1)") or words the catalog holds ("No obfuscation")
        frows = [dict(f, label=_(f["label"]) if f.get("label") else f.get("label"))
                 for f in rnd.get("fairness", []) if f["challenge"] == ch]
        if frows:
            fairness.append({"challenge": ch, "short": CHALLENGE_SHORT[ch], "name": challenge_name(ch), "rows": frows})
    ctx = {"rv": rv, "preview": preview, "choice": choice, "tables": tables, "fairness": fairness,
           "computed": bool(stored.get("rounds")), "error": stored.get("error"),
           "poi_source": stored.get("poi_source"), "n_projections": stored.get("n_projections", 50),
           "round_links": _round_links(rv)}
    return page(request, "web/analyses.html", ctx, contest=contest, sub="analyses")
