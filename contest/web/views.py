"""Public pages and accounts: home, contest overview, rules, leaderboards, attack matrix, awards, plots.

Results pages show the published snapshot only (embargo, rules §8.6); an
organizer sees the latest snapshot as a marked preview. Every permission
question goes to ``contest.permissions`` .
"""
from __future__ import annotations

import functools
from datetime import datetime

from django.contrib import messages
from django.contrib.auth import login as auth_login
from django.contrib.auth import logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from contest import permissions, selectors
from contest.models import IDP, TRP
from contest.request_start import deadline_grace
from contest.selectors import visible_snapshot
from contest.services import accounts as accounts_service
from contest.services import announcements, results, results_snapshot, teams
from contest.services.results_snapshot import SetEntry
from scoring.results import (
    DECIDED_BY_SCORE,
    DECIDED_BY_SOLE,
    LEADERBOARD_TOTAL,
    TIE_EARLIER_FINAL_SUBMISSION,
    TIE_TEAM_ID,
    leaderboard_name,
)
from scoring.vocabulary import AttackKind

from .common import (
    CHALLENGE_SHORT,
    ResultsView,
    challenge_name,
    contest_state,
    csv_download,
    get_contest,
    heat_style,
    js_strings,
    page,
    phase_rows,
    set_language_cookie,
)
from .forms import JoinTeamForm, LoginForm, SignUpForm


# ---------------------------------------------------------------- page language
def switch_language(request):
    """The header's language switcher: set the language cookie and go back to ``next``.

    Django's own ``set_language`` takes a POST, which puts a per-visitor CSRF
    token in every page's header; this view takes the switcher's GET (choosing
    a page language changes nothing worth forging), so public pages hold no
    token and can be cached whole for anonymous visitors (``contest.web.page_cache``).
    The cookie is Django's, read by ``LocaleMiddleware``.
    """
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    params = request.POST if request.method == "POST" else request.GET
    target = params.get("next") or request.headers.get("referer") or "/"
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = "/"
    response = redirect(target)
    set_language_cookie(response, params.get("language", ""))
    return response


# ---------------------------------------------------------------- home and overview
def home(request):
    now = timezone.now()
    contests = [{"contest": c, "state": contest_state(c, now)} for c in selectors.contests_newest_first()
                if permissions.can_view_contest(request.user, c)]  # a draft: its organizers only
    return page(request, "web/home.html", {"contests": contests}, nav="home")


def contest_home(request, slug):
    contest = get_contest(slug)
    now = timezone.now()
    team = permissions.team_of(request.user, contest)
    ctx = {
        "state": contest_state(contest, now),
        "phases": phase_rows(contest, now),
        "rounds": contest.rounds.all(),
        "teams": contest.teams.filter(approved=True).order_by("number"),
        "my_team": team,
        "results_visible": bool(permissions.can_view_results(request.user, contest)),
        "announcements": announcements.latest(contest, 5),
    }
    return page(request, "web/contest_home.html", ctx, contest=contest, sub="overview")


def rules(request, slug):
    contest = get_contest(slug)
    grid = contest.grid()
    ctx = {
        "grid": grid,
        "cell_km": (grid.km_lat * (grid.max_y - grid.min_y) / grid.ny, grid.km_lon * (grid.max_x - grid.min_x) / grid.nx),
        "rounds": contest.rounds.all(),
        "phases": phase_rows(contest),
        "grace_seconds": round(deadline_grace().total_seconds()),
        "hospitals": sorted(contest.hospitals),
        "slot_end": _slot_clock(contest.day_start_minute + (contest.slots_per_day - 1) * contest.slot_minutes),
        "slot_start": _slot_clock(contest.day_start_minute),
        "judge_attacks": contest.judge_attacks if contest.judge_attacks_enabled else [],
        "state": contest_state(contest),
    }
    return page(request, "web/rules.html", ctx, contest=contest, sub="rules")


def _slot_clock(minute: int) -> str:
    return f"{minute // 60:d}:{minute % 60:02d}"


# ---------------------------------------------------------------- results pages
def _results(request, contest):
    snap, preview = visible_snapshot(request.user, contest)
    if snap is None:
        return None, preview
    return ResultsView(contest, results_snapshot.read(snap.data)), preview


def _round_choice(request, rv: ResultsView, *, total: bool = True):
    """``?round=N`` or ``total``; default: the weighted total once the results of a contest of several rounds
    are final (it decides the awards), else the last round with scored sets (the final round in 2019),
    so a round that has not been played yet does not hide the published ones. Pages showing one
    round only (``total=False``) get that default for ``total`` too, and None without rounds."""
    value = request.GET.get("round", "")
    numbers = [r.number for r in rv.round_states()]
    if value == "total" and total:
        return "total"
    try:
        n = int(value)
        if n in numbers:
            return n
    except ValueError:
        pass
    if not numbers:
        return "total" if total else None
    if total and len(numbers) > 1 and rv.standing.final:
        return "total"
    played = [n for n in numbers if rv.counts_round(n) and rv.sets(n)]
    return (played or numbers)[-1]


def _embargo(request, contest, sub, title):
    return page(request, "web/embargo.html", {"title": title}, contest=contest, sub=sub)


def results_page(sub: str, title: str):
    """A results page (leaderboard, attack matrix, awards, plots, analyses): the decorated view is called as
    ``view(request, contest, rv, preview)`` with the snapshot the user may see (``preview``: the organizers'
    unpublished one); before the results are published everyone else gets the embargo page titled ``title``
    (a ``gettext_noop`` string, translated per request) under the results tab ``sub``."""
    def decorate(view):
        @functools.wraps(view)
        def results_view(request, slug):
            contest = get_contest(slug)
            rv, preview = _results(request, contest)
            if rv is None:
                return _embargo(request, contest, sub, _(title))
            return view(request, contest, rv, preview)
        return results_view
    return decorate


def _board_uncertainty(rv: ResultsView, name: str) -> dict:
    """team -> {"ci": (lo, hi), "stat_tied": bool, "swap_above", "swap_below": float or None, "swap_max",
    "swap_title"} of a leaderboard, from the snapshot's uncertainty (``scoring.uncertainty.results_uncertainty``).

    A place's swap probability with a neighbouring place is ``2 Phi(-gap / sd)`` in [0, 1], the two-sided
    p-value of "the two teams are equal in the population" (``swap_next`` of the place above and of this
    place); a place is flagged when either is at least ``tie_probability``. The "≈" mark shows the larger
    and its title both. Empty for older snapshots."""
    rows = rv.snapshot.board_uncertainty(name)
    out = {}
    for i, r in enumerate(rows):
        above = rows[i - 1].tied_next if i > 0 else False
        out[r.team] = {"ci": r.interval, "stat_tied": bool(r.tied_next or above),
                       **_swap_mark(rows[i - 1].swap_next if i > 0 else None, r.swap_next)}
    return out


def _swap_mark(above: float | None, below: float | None) -> dict:
    """The swap probabilities of a place with the place above and below (None: no such place), the larger
    of them and the "≈" mark's title in the page language."""
    parts = [text % {"p": floatformat(p, 2)} for p, text in (
        (above, _("swap probability with the place above: %(p)s")),
        (below, _("swap probability with the place below: %(p)s"))) if p is not None]
    known = [p for p in (above, below) if p is not None]
    return {"swap_above": above, "swap_below": below, "swap_max": max(known) if known else None,
            "swap_title": "; ".join([_("statistically tied"), *parts])}


def _percent(p: float | None) -> int | None:
    return None if p is None else round(100 * p)


def _set_interval(rv: ResultsView, s: SetEntry, field: str):
    """(lo, hi) interval of ``field`` (s_u, s_i_min or s_t_min) of the snapshot set ``s``, or None."""
    intervals = rv.snapshot.set_intervals(s.set.key)
    return None if intervals is None else getattr(intervals, field)


def _board_rows(request, contest, rv: ResultsView, choice) -> list[dict]:
    """The leaderboard's rows for ``choice`` (a round number or "total"), in the snapshot's order; the page
    and its CSV show the same rows."""
    if choice == "total":
        source = {r.team: r for r in rv.snapshot.team_totals}
        round_no = None
    else:
        source = {r.team: r for r in rv.snapshot.team_rounds if r.round == choice}
        round_no = choice
    sets = {(s.set.team, s.set.challenge): s for s in rv.sets(round_no)} if round_no else {}
    rows = []
    board_name = LEADERBOARD_TOTAL if round_no is None else leaderboard_name(round_no)
    unc = _board_uncertainty(rv, board_name)
    for st in rv.leaderboard(board_name):
        t = st.team
        r = source[t]
        rows.append({**unc.get(t, {}),
            "team": t, "rank": st.position, "tied": st.tied, "label": rv.team_label(t),
            "name": rv.names.get(t, ""),
            "s_i_min": r.s_i_min, "s_t_min": r.s_t_min, "overall": r.overall,
            "attack_sum_i": r.attack_sum_i, "attack_sum_t": r.attack_sum_t,
            "final_at": st.final_submission_at, "final_local": _local(st.final_submission_at, contest),
            "idp": sets.get((t, IDP)), "trp": sets.get((t, TRP)),
            "is_own": _is_own(request, contest, t),
        })
    return rows


def _challenge_tables(request, contest, rv: ResultsView, round_no: int) -> list[dict]:
    """The round's two challenge tables (IDP, TRP) in the snapshot's order, the benchmark's sets last."""
    tables = []
    for ch in (IDP, TRP):
        by_team = {s.set.team: s for s in rv.sets(round_no) if s.set.challenge == ch}
        ranked = [(st.position, st.tied, by_team[st.team])
                  for st in rv.leaderboard(leaderboard_name(round_no, ch)) if st.team in by_team]
        unc = _board_uncertainty(rv, leaderboard_name(round_no, ch))
        bench = [(None, False, s) for s in by_team.values() if s.benchmark]
        srows = []
        for position, tied, s in ranked + bench:
            t = s.set.team
            srows.append({"team": t, "rank": position, "tied": tied, "label": rv.team_label(t),
                          "name": rv.names.get(t, ""),
                          **({} if s.benchmark else unc.get(t, {})),
                          "stat_tied": unc.get(t, {}).get("stat_tied", False) and not s.benchmark,
                          "ci_i": _set_interval(rv, s, "s_i_min"), "ci_t": _set_interval(rv, s, "s_t_min"),
                          "benchmark": s.benchmark, "s_u": s.s_u,
                          "valid": s.valid, "s_i_min": s.s_i_min, "s_t_min": s.s_t_min,
                          "n_i": s.n_attacks_i, "n_t": s.n_attacks_t,
                          "by_i": ", ".join(str(rv.team_label(a)) for a in s.s_i_min_by),
                          "by_t": ", ".join(str(rv.team_label(a)) for a in s.s_t_min_by),
                          "final_at": s.submitted_at, "final_local": _local(s.submitted_at, contest),
                          "is_own": _is_own(request, contest, t)})
        tables.append({"challenge": ch, "short": CHALLENGE_SHORT[ch], "name": challenge_name(ch),
                       "key": "s_i_min" if ch == IDP else "s_t_min", "rows": srows})
    return tables


@results_page("leaderboard", gettext_noop("Leaderboard"))
def leaderboard(request, contest, rv, preview):
    """The snapshot's own leaderboards (``Results.leaderboards``), in the order and with the
    positions the judge computed with the awards' ranking rule: the page never ranks."""
    choice = _round_choice(request, rv)
    not_played = choice != "total" and not rv.counts_round(choice)
    ctx = {"rv": rv, "preview": preview, "choice": choice,
           "rows": [] if not_played else _board_rows(request, contest, rv, choice),
           "challenge_tables": [] if not_played or choice == "total" else _challenge_tables(request, contest, rv, choice),
           "uncertainty": _computed(rv.snapshot.uncertainty),
           "round_links": _round_links(rv, include_total=True), "tie_break": _tie_break_text(contest),
           "not_played": not_played,
           "round_weight": next((r.weight for r in rv.round_states() if r.number == choice), None),
           "weighting": weighting_text(rv),
           "tz": contest.tz}
    return page(request, "web/leaderboard.html", ctx, contest=contest, sub="leaderboard")


def _computed(uncertainty: results_snapshot.Uncertainty | None) -> results_snapshot.Uncertainty | None:
    """The snapshot's intervals if they were computed (None: not in this snapshot, or they failed)."""
    return uncertainty if uncertainty is not None and uncertainty.error is None else None


def _local(iso: str | None, contest) -> str | None:
    """An ISO 8601 time from a results snapshot, as text in the contest's zone (None stays None)."""
    if not iso:
        return None
    try:
        return contest.local_text(datetime.fromisoformat(iso), seconds=True)
    except ValueError:
        return iso


def _is_own(request, contest, team_number) -> bool:
    team = permissions.team_of(request.user, contest)
    return team is not None and team.number == team_number


def _tie_break_text(contest) -> str:
    if contest.tie_break == TIE_TEAM_ID:
        return _("Equal values (to 12 decimals) are separated by the lower team number.")
    return _("Equal values (to 12 decimals) are separated by the earlier final submission; "
             "if that cannot separate them, the lower team number wins.")


def _round_links(rv: ResultsView, include_total=False):
    """The round tabs: every round of the contest (one not played yet says so), then the weighted total."""
    links = [{"value": str(r.number), "label": r.name, "weight": r.weight, "not_played": not r.included}
             for r in rv.round_states()]
    if include_total:
        label = _("Weighted total over the rounds played so far") if rv.provisional else _("Weighted total")
        links.append({"value": "total", "label": label, "weight": None, "not_played": False})
    return links


def heat_cells(values: list, attempts: list[int], attempts_title) -> SafeString:
    """One matrix row's cells as HTML: each value (None: no attack) with its heat colour, to 4 decimals, and
    ``attempts_title(n)`` ("3 attempts") as its title.

    Built here, not cell by cell in the template: the round's 2000 cells cost 100 ms through six template
    nodes each, on every rendering of the page (pages render again at each job's end, ``make bench-full``'s load test).
    """
    no_attack = _("no attack")
    return format_html_join("", "{}", (
        (format_html('<td class="heat heat-none" title="{}"><span class="visually-hidden">{}</span></td>',
                     no_attack, no_attack) if v is None else
         format_html('<td class="heat" style="{}" title="{}">{}</td>', heat_style(v), attempts_title(n),
                     floatformat(v, 4)),)
        for v, n in zip(values, attempts, strict=True)))


def _matrix_cells(rv: ResultsView, choice, kind: AttackKind) -> tuple[list, dict]:
    """(attackers, cells) of round ``choice``'s matrix of ``kind``: the attackers in the page's row order
    (teams by number, then the judge's sample attacks by name) and (attacker, target set key) -> the
    snapshot's cell (``best`` score, ``attempts``)."""
    cells = {(c.attacker, c.set.key): c for c in rv.snapshot.matrix if c.kind == kind and c.set.round == choice}
    attackers = sorted({a for a, _k in cells},
                       key=lambda a: (isinstance(a, str), a if isinstance(a, int) else 0, str(a)))
    return attackers, cells


def _minimum_key(kind: AttackKind) -> str:
    """The snapshot set's field (:class:`~contest.services.results_snapshot.SetEntry`) holding its minimum
    over the attacks of ``kind``."""
    return "s_i_min" if kind is AttackKind.REIDENTIFICATION else "s_t_min"


def _matrices(rv: ResultsView, choice, targets: list[dict]) -> list[dict]:
    """The attack matrix of round ``choice`` for each attack kind: attacker rows (their cells' HTML,
    :func:`heat_cells`), one column per valid target set of ``targets``, the targets' minima last, and its
    heatmap's data."""
    target_keys = [s.set.key for s in targets]
    attempts_title = functools.cache(lambda n: ngettext("%(n)s attempt", "%(n)s attempts", n) % {"n": n})
    built = []
    for kind in AttackKind:
        metric = kind.symbol
        attackers, cells = _matrix_cells(rv, choice, kind)
        rows = []
        values = []
        for a in attackers:
            row_vals = [None if cells.get((a, key)) is None else cells[(a, key)].best for key in target_keys]
            row_attempts = [cells[(a, key)].attempts if (a, key) in cells else 0 for key in target_keys]
            rows.append({"label": rv.team_label(a), "judge": isinstance(a, str),
                         "cells": heat_cells(row_vals, row_attempts, attempts_title)})
            values.append(row_vals)
        minima = [getattr(s, _minimum_key(kind)) for s in targets]
        built.append({
            "kind": kind, "metric": metric, "rows": rows,
            "minima": [{"value": v, "style": heat_style(v)} for v in minima],
            "chart": {"rows": [r["label"] for r in rows], "cols": [rv.set_label(s.set) for s in targets],
                      "values": values,
                      "min": 0, "max": 1, "rowTitle": _("attacker"), "colTitle": _("target set"),
                      # the caption promises each target's minimum over all attacks: drawn as the last row
                      "footer": {"label": _("Minimum"), "values": minima},
                      "legend": _("%(metric)s (higher: the target resisted better)") % {"metric": metric},
                      "label": _("Heatmap of %(metric)s, attacker by target") % {"metric": metric}},
            "chart_id": f"chart-matrix-{kind}",
        })
    return built


@results_page("matrix", gettext_noop("Attack matrix"))
def attack_matrix(request, contest, rv, preview):
    choice = _round_choice(request, rv, total=False)
    targets = [s for s in rv.sets(choice) if s.valid]
    ctx = {"rv": rv, "preview": preview, "choice": choice, "targets": [{"label": rv.set_label(s.set)} for s in targets],
           "matrices": _matrices(rv, choice, targets), "round_links": _round_links(rv),
           "not_played": choice is not None and not rv.counts_round(choice)}
    return page(request, "web/matrix.html", ctx, contest=contest, sub="matrix")


def board_csv_columns(choice) -> list[tuple[str, object]]:
    """The leaderboard table's columns as (CSV header, value of a :func:`_board_rows` row): the page
    and its CSV show the same rows (:func:`_board_rows`) with the same columns, so the CSV carries
    what the page marks -- the "tie" badge (equal values, ordered by the tie-break), the "≈"
    statistically tied badge with its swap probabilities (with the place above and below, in [0, 1]),
    and the interval in brackets -- and the round tabs' s_U columns."""
    def ci(i):
        return lambda r: r["ci"][i] if r.get("ci") else None

    def s_u(key):
        return lambda r: r[key].s_u if r.get(key) else None

    def valid(key):
        return lambda r: int(bool(r[key].valid)) if r.get(key) else None

    columns = [*_rank_columns(), ("team", lambda r: r["team"]), ("team_name", lambda r: r["name"]),
               ("overall", lambda r: r["overall"]), ("overall_ci_low", ci(0)), ("overall_ci_high", ci(1))]
    if choice != "total":
        columns += [("s_u_idp", s_u("idp")), ("idp_valid", valid("idp")),
                    ("s_u_trp", s_u("trp")), ("trp_valid", valid("trp"))]
    columns += [("s_i_min_idp", lambda r: r["s_i_min"]), ("s_t_min_trp", lambda r: r["s_t_min"]),
                ("attacker_sum_s_i", lambda r: r["attack_sum_i"]), ("attacker_sum_s_t", lambda r: r["attack_sum_t"]),
                ("final_submission_at", lambda r: r["final_at"])]
    return columns


def _rank_columns() -> list[tuple[str, object]]:
    """The rank cell's columns of both kinds of leaderboard table: the place, the "tie" badge, the "≈"
    badge and the swap probabilities with the place above and below (empty for the first and last place
    and for the benchmark's sets)."""
    return [("rank", lambda r: r["rank"]), ("tied", lambda r: int(bool(r["tied"]))),
            ("statistically_tied", lambda r: int(bool(r.get("stat_tied")))),
            ("swap_probability_above", lambda r: r.get("swap_above")),
            ("swap_probability_below", lambda r: r.get("swap_below"))]


def challenge_csv_columns() -> list[tuple[str, object]]:
    """A challenge table's columns as (CSV header, value of a :func:`_challenge_tables` row): rank and its
    marks, the set's team, whether it is the benchmark's, s_U, validity, each minimum with the number of
    attacks counted and its interval (as the page, only for a valid set), who reached each minimum (the
    page's labels, in the page language) and the final submission."""
    def ci(key, i):
        return lambda r: r[key][i] if r.get(key) and r["valid"] else None

    return [*_rank_columns(), ("team", lambda r: r["team"]), ("team_name", lambda r: r["name"]),
            ("benchmark", lambda r: int(bool(r["benchmark"]))), ("s_u", lambda r: r["s_u"]),
            ("valid", lambda r: int(bool(r["valid"]))),
            ("s_i_min", lambda r: r["s_i_min"]), ("s_i_min_attacks", lambda r: r["n_i"]),
            ("s_i_min_ci_low", ci("ci_i", 0)), ("s_i_min_ci_high", ci("ci_i", 1)),
            ("s_t_min", lambda r: r["s_t_min"]), ("s_t_min_attacks", lambda r: r["n_t"]),
            ("s_t_min_ci_low", ci("ci_t", 0)), ("s_t_min_ci_high", ci("ci_t", 1)),
            ("s_i_min_by", lambda r: r["by_i"]), ("s_t_min_by", lambda r: r["by_t"]),
            ("final_submission_at", lambda r: r["final_at"])]


def csv_tables(tables: list[tuple[str, list, list[dict]]]) -> tuple[list[str], list[list]]:
    """(header, rows) of one CSV holding several tables: each of ``tables`` is (name, columns as
    (header, value of a row), rows); the CSV's first column ``table`` names a row's table and its
    header is every table's columns in order of first appearance (a cell of another table's column
    is empty)."""
    header = ["table"]
    for _name, columns, _rows in tables:
        header += [h for h, _value in columns if h not in header]
    out = []
    for name, columns, rows in tables:
        for r in rows:
            cells = {h: value(r) for h, value in columns}
            out.append([name, *(cells.get(h) for h in header[1:])])
    return header, out


def leaderboard_csv(request, slug):
    """Every table of the leaderboard page of ``?round=N`` or the weighted total, as the page shows it, as
    one CSV: the teams' table (``table`` = "teams") and, on a round's tab, its challenge tables ("IDP",
    "TRP")."""
    contest = get_contest(slug)
    rv, _preview = _results(request, contest)
    if rv is None:
        raise Http404("results are not published yet")
    choice = _round_choice(request, rv)
    played = choice == "total" or rv.counts_round(choice)
    tables = [("teams", board_csv_columns(choice), _board_rows(request, contest, rv, choice) if played else [])]
    if played and choice != "total":
        tables += [(t["short"], challenge_csv_columns(), t["rows"])
                   for t in _challenge_tables(request, contest, rv, choice)]
    which = "total" if choice == "total" else f"round{choice}"
    status = "provisional" if rv.provisional else "final"
    header, rows = csv_tables(tables)
    return csv_download(f"{contest.slug}_leaderboard_{which}_{status}.csv", header, rows)


def attack_matrix_csv(request, slug):
    """A round's attack matrix as the page shows it: for each attack kind, every (attacker, target set) cell
    with an attack (the best score and the attempts) in the page's row and column order, then the
    "Minimum" row (each target's minimum over all attacks); attackers and targets are also named as the
    page names them (``attacker_label``, ``target_label``, in the page language)."""
    contest = get_contest(slug)
    rv, _preview = _results(request, contest)
    if rv is None:
        raise Http404("results are not published yet")
    choice = _round_choice(request, rv, total=False)
    targets = [s for s in rv.sets(choice) if s.valid]
    rows = []
    for kind in AttackKind:
        attackers, cells = _matrix_cells(rv, choice, kind)
        grid = [(a, rv.team_label(a), s, cells.get((a, s.set.key))) for a in attackers for s in targets]
        rows += [(kind.value, a, label, s, c.best, c.attempts) for a, label, s, c in grid if c is not None]
        rows += [(kind.value, None, _("Minimum"), s, getattr(s, _minimum_key(kind)), None) for s in targets]
    return csv_download(f"{contest.slug}_attack_matrix_round{choice}.csv",
                        ["round", "kind", "attacker", "attacker_label", "target_team", "target_challenge",
                         "target_label", "best", "attempts"],
                        ([choice, kind, a, label, s.set.team,
                          CHALLENGE_SHORT.get(s.set.challenge, s.set.challenge), rv.set_label(s.set),
                          best, attempts] for kind, a, label, s, best, attempts in rows))


def _label(text: str) -> str:
    """A chart label in the page language when the catalog has it (never gettext's "" header)."""
    return _(text) if text else text


def award_title(name: str) -> tuple[str, str]:
    """(title, rule) of an award in the page language (both live in contest.services.results)."""
    title, rule = results.award_title(name)
    return _(title), _label(rule)


@results_page("awards", gettext_noop("Awards"))
def awards(request, contest, rv, preview):
    decided = {DECIDED_BY_SCORE: _("by score"), DECIDED_BY_SOLE: _("sole eligible team"),
               TIE_EARLIER_FINAL_SUBMISSION: _("tie broken by the earlier final submission"),
               TIE_TEAM_ID: _("tie broken by the lower team number")}
    items = []
    for a in rv.snapshot.awards:
        title, rule = award_title(a.award)
        if a.award == "overall":
            title = _("Overall, place %(n)s") % {"n": a.place}
        items.append({"title": title, "rule": rule, "team": rv.team_label(a.team), "value": a.value,
                      "decided": decided.get(a.decided_by, a.decided_by),
                      "tied_with": [rv.team_label(t) for t in a.tied_with],
                      "excluded": [rv.team_label(t) for t in a.excluded],
                      "stability": _percent(rv.snapshot.award_stability(a.award, a.place)),
                      "is_own": _is_own(request, contest, a.team)})
    standings = []
    for name, rows in rv.snapshot.standings.items():
        title, rule = award_title(name)
        standings.append({"title": title, "rule": rule, "rows": [
            {"position": r.position, "team": rv.team_label(r.team), "value": r.value,
             "final_local": _local(r.final_submission_at, contest)} for r in rows]})
    ctx = {"rv": rv, "preview": preview, "items": items, "standings": standings,
           "variant": rv.snapshot.variant, "tie_break": _tie_break_text(contest),
           "weighting": weighting_text(rv)}
    return page(request, "web/awards.html", ctx, contest=contest, sub="awards")


def weighting_text(rv: ResultsView) -> str:
    """How an award's value combines the counted rounds, e.g. "Preliminary × 0.1 + Final × 0.9": the
    awards page shows weighted values, a round tab of the leaderboard the round's own."""
    return " + ".join(f"{r.name} × {r.weight:g}" for r in rv.round_states() if r.included)


@results_page("plots", gettext_noop("Plots"))
def plots(request, contest, rv, preview):
    choice = _round_choice(request, rv, total=False)
    points, table = [], []
    for s in rv.sets(choice):
        if not s.valid:
            continue
        group = (_("benchmark (pseudonymized only)") if s.benchmark
                 else _("%(ch)s sets") % {"ch": CHALLENGE_SHORT[s.set.challenge]})
        p = {"x": s.s_i_min, "y": s.s_t_min, "label": rv.set_label(s.set), "group": group}
        points.append(p)
        table.append(p)
    # R as the results job computed it (results.set_correlations); None: fewer than two sets, or constant
    stored = rv.snapshot.correlation.get(choice) or results_snapshot.Correlation(r=None, n_sets=0)
    r = stored.r
    fig9 = {"points": points, "r": r, "xlabel": "s_I,min", "ylabel": "s_T,min",
            "label": _("Scatter of s_I,min against s_T,min of the valid sets")}
    # Paper Fig. 8: the sample anonymizers as the results job evaluated them (a snapshot computed
    # before the job stored them per round has none: the figure is then empty).
    # labels are the paper's notation ("PL(4,1)") or words the catalog holds ("No obfuscation")
    fig8_points = [{"x": s.s_i_min, "y": s.s_t_min, "label": _label(s.label or s.algorithm),
                    "group": s.algorithm, "s_u": s.s_u, "valid": s.valid}
                   for s in rv.snapshot.samples_of(choice)]
    fig8 = {"points": fig8_points, "showR": False, "xlabel": "s_I,min", "ylabel": "s_T,min",
            "label": _("Privacy scores of the sample anonymizers")}
    ctx = {"rv": rv, "preview": preview, "choice": choice, "fig9": fig9, "fig8": fig8, "r": r, "n_team_sets": stored.n_sets,
           "table": table, "fig8_table": fig8_points, "round_links": _round_links(rv)}
    return page(request, "web/plots.html", ctx, contest=contest, sub="plots")


# ---------------------------------------------------------------- accounts
class LoginView(auth_views.LoginView):
    template_name = "web/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def get_default_redirect_url(self):
        """Where a login without ``?next=`` lands: the user's own work, not the contest list.

        An organizer (or staff, who may create contests) lands on the console;
        a team member on the team page of their most recent contest; anyone
        else on the page for joining a team.
        """
        user = self.request.user
        if permissions.is_any_organizer(user) or permissions.can_create_contest(user):
            return reverse("web:console")
        # not a draft's team page: it answers 404 to a member until the organizers open the contest
        membership = (user.memberships.filter(team__contest__draft=False).select_related("team__contest")
                      .order_by("-team__contest__created_at").first())
        if membership is not None:
            return reverse("web:team", args=[membership.team.contest.slug])
        return reverse("web:join")

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx.update({"nav": "login", "js_strings": js_strings(), "my_teams": [], "is_any_organizer": False})
        return ctx


def logout_view(request):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    logout(request)
    messages.success(request, _("You are logged out."))
    return redirect("web:home")


def signup(request):
    if request.user.is_authenticated:
        return redirect("web:join")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        auth_login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, _("Welcome! Join your team with its invitation code."))
        return redirect("web:join")
    return page(request, "web/signup.html", {"form": form}, nav="signup")


@login_required
def join_team(request):
    form = JoinTeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team, _created = teams.join_team(request.user, form.cleaned_data["invitation_code"])
        except teams.TeamError:
            form.add_error("invitation_code", _("You are already in another team of this contest."))
        else:
            if not team.approved:
                messages.warning(request, _("You joined team %(team)s. The organizers have not approved the team yet.")
                                 % {"team": team.name})
            else:
                messages.success(request, _("You are a member of team %(team)s.") % {"team": team.name})
            return redirect("web:team", team.contest.slug)
    return page(request, "web/join.html", {"form": form}, nav="join")


@login_required
def api_token(request):
    if request.method == "POST":
        accounts_service.new_token(request.user)
        messages.success(request, _("A new token was created; the old one no longer works."))
        back = request.POST.get("next", "")  # the account page's form comes back to it
        return redirect(back if back.startswith(reverse("web:account")) else "web:token")
    token = accounts_service.token_of(request.user)
    ctx = {"token": token, "api_root": request.build_absolute_uri("/api/")}
    return page(request, "web/token.html", ctx, nav="token")
