"""Shared helpers of the HTML pages: page context, contest state, results reading, colours.

Reads here are thin functions over the core's models (``contest.models``);
who may see what is asked of the core's ``contest.permissions`` (the pages
only turn a denial into a 403: :func:`require`).
"""
from __future__ import annotations

import base64
import csv
import re
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.utils.translation import check_for_language, ngettext
from django.utils.translation import gettext as _

from contest import permissions
from contest.models import IDP, Contest, Job, Phase, Team
from contest.services import bundles, schedule, storage
from contest.services.errors import ServiceError
from contest.services.results_snapshot import Place, RoundState, SetEntry, SnapshotData
from contest.upload_rule import contest_upload_limit, limit_text
from scoring.errors import MESSAGES
from scoring.errors import render as render_issue
from scoring.vocabulary import Challenge

CHALLENGE_SHORT = {c: c.name for c in Challenge}


def challenge_name(challenge: int) -> str:
    return _("re-identification (IDP)") if challenge == IDP else _("trace inference (TRP)")


def js_strings() -> dict:
    """Strings the page script shows, in the page language (see static/js/tracecup.js)."""
    return {
        "no_attack": _("no attack"),
        "region_tip": _("region {r} (x {x}, y {y}): {v}"),
        "share_of_events": _("share of events (square-root scale)"),
        "sorted_by": _("Sorted by {col}, {dir}"),
        "ascending": _("ascending"),
        "descending": _("descending"),
        "days_short": _("d"),
        "deadline_zones": _("{contest} (contest time) · {viewer} (your time)"),
        "deadline_passed": _("deadline passed"),
        "chosen_file": _("Chosen: {name} ({size})"),
        "uploading": _("Uploading…"),
        "uploaded_of": _("Uploaded {done} of {total} ({pct}%)"),
        "upload_received": _("Upload complete; waiting for the server…"),
        "upload_failed": _("Upload failed (HTTP {code})."),
        "network_error": _("Network error: the upload did not reach the server."),
        "upload_refused": _("Upload refused:"),
        "file_too_large": _("{name} is {size}; an upload may be {limit}."),
        "not_played": _("Not played yet: this round has no scores."),
        "scroll_sideways": _("The matrix is wider than the screen: scroll it sideways →"),
    }


def issue_rows(issues) -> list[dict]:
    """Stored validation issues (``scoring.errors`` dicts) with ``text`` in the page language.

    The validator stores each problem's code and values next to its English
    message; the page renders the code's template in the viewer's language
    (``scoring.errors.MESSAGES`` is in this package's catalog). Issues stored
    before codes existed, or without one, keep their English message.
    ``show_value`` is false when the message already quotes the value, so a
    value is shown once.
    """
    rows = []
    for i in issues or []:
        if not isinstance(i, dict):  # a scoring.errors.Issue
            i = {"line": i.line, "column": i.column, "value": i.value, "message": i.message,
                 "code": getattr(i, "code", ""), "params": getattr(i, "params", {})}
        text = i.get("message") or ""
        code = i.get("code")
        value = localized_value(i.get("value"))
        if code in MESSAGES:
            try:
                text = render_issue(_(MESSAGES[code]), i.get("column"), value, i.get("params") or {})
            except (KeyError, IndexError, ValueError):  # a translation with a broken placeholder
                pass
        rows.append({**i, "value": value, "text": text,
                     "show_value": value not in (None, "") and str(value) not in text})
    return rows


#: The length note ``scoring.errors.show_value`` / ``show_bytes`` put after a cut value: "... (313 bytes)".
_CUT_VALUE = re.compile(r"\.\.\. \((\d+) (bytes|characters)\)$")


def localized_value(value):
    """A stored (English) file value with its length note in the page language; other values unchanged."""
    if not isinstance(value, str):
        return value
    match = _CUT_VALUE.search(value)
    if not match:
        return value
    n = int(match.group(1))
    note = (ngettext("%(n)s byte", "%(n)s bytes", n) if match.group(2) == "bytes"
            else ngettext("%(n)s character", "%(n)s characters", n)) % {"n": f"{n:,}"}
    return f"{value[:match.start()]}… ({note})"


def set_language_cookie(response, language: str) -> None:
    """Remember the page language in Django's language cookie (read by ``LocaleMiddleware``); an
    unknown language changes nothing."""
    if language and check_for_language(language):
        response.set_cookie(settings.LANGUAGE_COOKIE_NAME, language, max_age=settings.LANGUAGE_COOKIE_AGE,
                            path=settings.LANGUAGE_COOKIE_PATH, domain=settings.LANGUAGE_COOKIE_DOMAIN,
                            secure=settings.LANGUAGE_COOKIE_SECURE, httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
                            samesite=settings.LANGUAGE_COOKIE_SAMESITE)


def frame_context(request, contest: Contest | None = None, *, nav: str | None = None, sub: str | None = None) -> dict:
    """What the page frame (header, contest menu, page script's strings) needs; also for Django's own
    class-based views (the account pages: ``contest.web.accounts.FrameMixin``)."""
    user = request.user
    ctx = {"nav": nav, "sub": sub, "js_strings": js_strings()}
    if user.is_authenticated:
        # a draft's team is not linked: its pages answer 404 to a member (contest.web.drafts)
        ctx["my_teams"] = list(Team.objects.filter(memberships__user=user, contest__draft=False)
                               .select_related("contest").order_by("contest__name"))
        ctx["is_any_organizer"] = permissions.is_any_organizer(user)
    else:
        ctx["my_teams"] = []
        ctx["is_any_organizer"] = False
    ctx["is_contest_organizer"] = bool(contest) and permissions.is_organizer(user, contest)
    ctx["upload_limit"] = contest_upload_limit(contest) if contest else None
    ctx["upload_limit_text"] = limit_text(ctx["upload_limit"]) if contest else ""
    return ctx


def page(request, template: str, context: dict | None = None, *, contest: Contest | None = None,
         nav: str | None = None, sub: str | None = None, status: int = 200):
    """Render ``template`` with what the page frame (header, contest menu) needs."""
    ctx = dict(context or {})
    ctx.setdefault("contest", contest)
    ctx.update(frame_context(request, contest, nav=nav, sub=sub))
    # Times on a contest's pages are shown in the contest's own zone (rules §8.1).
    with timezone.override(contest.tz if contest else None):
        return render(request, template, ctx, status=status)


def require(decision) -> None:
    """Raise 403 with the core's reason when ``decision`` (a ``contest.permissions`` answer) denies, in
    the page language where the catalog has the reason (``gettext_noop`` in ``contest.permissions``)."""
    if not decision:
        raise PermissionDenied(_(getattr(decision, "reason", "") or "not allowed"))


class Refusal:
    """A service's refusal (any :class:`~contest.services.errors.ServiceError`) shown as the page's error
    message, so a page catches the services' errors in one way::

        with Refusal(request, _("The phase was not changed: %(reason)s.")) as refused:
            schedule.reschedule_phase(phase, ...)
        if refused.error:
            return back

    ``text`` frames the reason (``%(reason)s``); without it the reason is the whole message. The reason is
    looked up in the page language's catalog, since a service marks the refusals a person reads with
    ``gettext_noop``. Any other exception passes through.
    """

    def __init__(self, request, text: str | None = None):
        self.request, self.text = request, text
        self.error: ServiceError | None = None

    def __enter__(self) -> Refusal:
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if not isinstance(exc, ServiceError):
            return False
        self.error = exc
        reason = _(str(exc))
        messages.error(self.request, self.text % {"reason": reason} if self.text else reason)
        return True


def require_organizer(user, contest: Contest) -> None:
    require(permissions.can_manage_contest(user, contest))


def get_contest(slug: str) -> Contest:
    return get_object_or_404(Contest, slug=slug)


# ---------------------------------------------------------------- contest state
@dataclass
class ContestState:
    """What is happening now, and the next deadline, for the header of the contest pages."""

    label: str
    open_phase: Phase | None
    next_phase: Phase | None
    deadline: datetime | None
    deadline_label: str
    published: bool


def phase_label(phase: Phase) -> str:
    return f"{phase.round.name}: {schedule.phase_kind(phase)}"


def contest_state(contest: Contest, now: datetime | None = None) -> ContestState:
    now = now or timezone.now()
    phases = list(Phase.objects.filter(round__contest=contest).select_related("round", "round__contest").order_by("opens_at"))
    open_phase = next((p for p in phases if p.is_open(now)), None)
    upcoming = [p for p in phases if p.opens_at > now and p.closed_at is None]
    next_phase = upcoming[0] if upcoming else None
    published = contest.snapshots.filter(published=True).exists()
    if open_phase and open_phase.kind == Phase.ANONYMIZATION and open_phase.round.generated_at is None:
        # open on the calendar, but there is nothing to anonymize until the round's data is generated
        label = _("%(phase)s: waiting for the data") % {"phase": phase_label(open_phase)}
        deadline, deadline_label = open_phase.closes_at, _("%(phase)s closes in") % {"phase": phase_label(open_phase)}
    elif open_phase:
        label = _("%(phase)s is open") % {"phase": phase_label(open_phase)}
        deadline, deadline_label = open_phase.closes_at, _("%(phase)s closes in") % {"phase": phase_label(open_phase)}
    elif next_phase:
        label = _("Waiting for %(phase)s") % {"phase": phase_label(next_phase)}
        deadline, deadline_label = next_phase.opens_at, _("%(phase)s opens in") % {"phase": phase_label(next_phase)}
    elif not phases:
        label, deadline, deadline_label = _("Being set up"), None, ""
    elif published:
        label, deadline, deadline_label = _published_label(contest), None, ""
    else:
        label, deadline, deadline_label = _("All phases closed: results to be published"), None, ""
    return ContestState(label, open_phase, next_phase, deadline, deadline_label, published)


def _published_label(contest: Contest) -> str:
    """The state once every phase closed and some results are published: finished only when every round's are
    (publishing through an earlier round leaves the later rounds' results to be published)."""
    waiting = list(contest.rounds.filter(results_published_at__isnull=True).order_by("number")
                   .values_list("name", flat=True))
    # no round's own date: published before rounds recorded theirs, when a publish covered every round
    if not waiting or not contest.rounds.filter(results_published_at__isnull=False).exists():
        return _("Finished: results published")
    return _("All phases closed: results of %(rounds)s to be published") % {"rounds": ", ".join(waiting)}


def phase_rows(contest: Contest, now: datetime | None = None) -> list[dict]:
    """Every phase with its times (aware; pages show them with the ``contest_time`` filter) and whether it
    is past, open or to come."""
    now = now or timezone.now()
    rows = []
    for p in Phase.objects.filter(round__contest=contest).select_related("round").order_by("opens_at"):
        state = "open" if p.is_open(now) else ("past" if (p.closed_at or p.closes_at <= now) else "future")
        rows.append({"phase": p, "label": phase_label(p), "opens": p.opens_at,
                     "closes": p.closes_at, "state": state})
    return rows


# ---------------------------------------------------------------- results
def team_names(contest: Contest) -> dict[int, str]:
    return {t.number: t.name for t in Team.objects.filter(contest=contest)}


class ResultsView:
    """Read helpers over a results snapshot as its schema reads it
    (``contest.services.results_snapshot.SnapshotData``: ``snapshot``), with the contest's team names."""

    def __init__(self, contest: Contest, snapshot: SnapshotData):
        self.contest = contest
        self.snapshot = snapshot
        self.names = team_names(contest)
        self.benchmark = snapshot.benchmark_team
        self.rounds = [(r.round, r.weight) for r in snapshot.round_weights]
        round_names = {r.number: r.name for r in contest.rounds.all()}
        self.round_names = {n: round_names.get(n, _("Round %(n)s") % {"n": n}) for n, _w in self.rounds}
        # Which rounds the snapshot counts and whether it is final (``results.standing``).
        self.standing = snapshot.standing
        self.counted_names = [r.name for r in self.standing.rounds if r.included]
        self.unplayed_names = [r.name for r in self.standing.rounds if not r.included]
        self.provisional = not self.standing.final

    def round_states(self) -> tuple[RoundState, ...]:
        """Every round of the contest (number, name, weight, played, included) in the snapshot's standing."""
        return self.standing.rounds

    def counts_round(self, number) -> bool:
        """Whether round ``number`` is played and counted in this snapshot."""
        return self.snapshot.counts_round(number)

    def team_label(self, team) -> str:
        if isinstance(team, str):
            return team  # a judge sample attack, e.g. "I2-VisitProb"
        if self.benchmark is not None and team == self.benchmark:
            return _("Benchmark")
        name = self.names.get(team)
        return f"{team:03d} {name}" if name else f"{team:03d}"

    def set_label(self, ref) -> str:
        """A set's label, e.g. "007 Name · IDP": ``ref`` has a ``team`` and a ``challenge`` (a SetRef, an analysis row)."""
        return f"{self.team_label(ref.team)} · {CHALLENGE_SHORT.get(ref.challenge, ref.challenge)}"

    def sets(self, round_no: int | None = None) -> list[SetEntry]:
        return self.snapshot.sets_of(round_no)

    def leaderboard(self, name: str) -> tuple[Place, ...]:
        """A leaderboard of the snapshot (``scoring.results.Results.leaderboards``), best first."""
        return self.snapshot.leaderboard(name)


# ---------------------------------------------------------------- colours
# The same sequential scale as static/js/tracecup.js (viridis stops), so the
# server-rendered table and the SVG heatmap agree.
VIRIDIS = [(68, 1, 84), (72, 40, 120), (62, 74, 137), (49, 104, 142), (38, 130, 142),
           (31, 158, 137), (53, 183, 121), (109, 205, 89), (180, 222, 44), (253, 231, 37)]


def heat_style(value: float | None, lo: float = 0.0, hi: float = 1.0) -> str:
    """Inline CSS (background and a readable text colour) for a heatmap cell."""
    if value is None:
        return ""
    u = 0.0 if hi == lo else min(1.0, max(0.0, (value - lo) / (hi - lo)))
    pos = u * (len(VIRIDIS) - 1)
    i = min(int(pos), len(VIRIDIS) - 2)
    f = pos - i
    rgb = [round(a + (b - a) * f) for a, b in zip(VIRIDIS[i], VIRIDIS[i + 1])]
    light = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140
    return f"background:rgb({rgb[0]},{rgb[1]},{rgb[2]});color:{'#000' if light else '#fff'}"


# ---------------------------------------------------------------- downloads
def csv_download(filename: str, header: list[str], rows) -> HttpResponse:
    """A CSV file (UTF-8, comma, header line) to download; cells that a spreadsheet would run as a
    formula (=, +, -, @ first) are quoted with a leading apostrophe, except numbers."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_safe_cell(v) for v in row])
    return response


def _safe_cell(value):
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@") and not _is_number(value):
        return "'" + value
    return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def bundle_download(request, plan: bundles.Plan, *, title: str, back_url: str, back_label: str,
                    nav: str, sub: str | None = None):
    """Serve the built zip of ``plan`` (streamed from its stored chunks, its SHA-256 in ``X-Checksum-SHA256``,
    ``Digest`` and ``ETag``), or queue its build and answer 202 with a page that follows the job.

    ``?status=1`` answers the page's poll: ``{finished, html}``, the html offering the download
    once the zip is ready.
    """
    built = bundles.current(plan)
    if built is not None and request.GET.get("status") != "1":
        response = StreamingHttpResponse(storage.iter_bytes(built.file), content_type="application/zip")
        response["Content-Disposition"] = content_disposition_header(True, built.file_name)
        response["Content-Length"] = str(built.size)
        response["X-Checksum-SHA256"] = built.sha256
        response["Digest"] = "sha-256=" + base64.b64encode(bytes.fromhex(built.sha256)).decode()
        response["ETag"] = f'"{built.sha256}"'
        return response
    job = None if built is not None else bundles.request_build(plan, user=request.user)
    if built is None and job is None:  # another worker finished it between the two looks
        built = bundles.current(plan)
    ctx = {"contest": plan.contest, "built": built, "job": job, "title": title,
           "download_url": request.path, "status_url": f"{request.path}?status=1"}
    if request.GET.get("status") == "1":
        html = render_to_string("web/_bundle_status.html", ctx, request=request)
        return JsonResponse({"finished": built is not None or job.status == Job.FAILED, "html": html})
    ctx.update(back_url=back_url, back_label=back_label, auto_refresh=3)
    return page(request, "web/bundle_pending.html", ctx, contest=plan.contest, nav=nav, sub=sub, status=202)
