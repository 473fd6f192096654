"""Team dashboard: downloads, anonymized-set uploads with live status, final choice, attacks, map.

Uploads go through the core's services (``contest.services.uploads``), which
enforce phase windows and limits race-free; this module only turns their
answers into pages (or JSON for the page script) and never decides a rule.
"""
from __future__ import annotations

import numpy as np
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from contest import job_kinds, permissions, request_start, selectors
from contest.models import AnonymizedSet, Attack, Dataset, Job, Phase, PrivacyPreview, PublicSet, Round, StoredFile
from contest.services import announcements, bundles, figures, previews, storage, uploads
from contest.services.errors import ServiceError
from scoring.preview import PREDICTION_LEVEL
from scoring.vocabulary import AttackKind

from . import page_cache
from .common import (
    CHALLENGE_SHORT,
    Refusal,
    bundle_download,
    challenge_name,
    contest_state,
    csv_download,
    get_contest,
    issue_rows,
    page,
    require,
)
from .forms import AttackUploadForm, UploadForm


def _is_ajax(request) -> bool:
    return request.headers.get("x-requested-with") == "XMLHttpRequest"


def _team_or_403(request, contest):
    team = permissions.team_of(request.user, contest)
    if team is None:
        raise PermissionDenied(_("You are not a member of an approved team of this contest."))
    return team


# ---------------------------------------------------------------- files
def download(request, file_id):
    """Stream a stored file's exact bytes, if ``contest.permissions`` allows this user to read it."""
    stored = get_object_or_404(StoredFile, pk=file_id)
    require(permissions.can_read_file(request.user, stored))
    response = StreamingHttpResponse(storage.iter_bytes(stored), content_type=_content_type(stored.name))
    response["Content-Disposition"] = content_disposition_header(True, stored.name)
    response["Content-Length"] = str(stored.size)
    response["X-Content-SHA256"] = stored.sha256
    return response


def _content_type(name: str) -> str:
    lower = name.lower()
    if lower.endswith(".gz"):
        return "application/gzip"
    if lower.endswith(".zip"):
        return "application/zip"
    return "text/csv; charset=utf-8"


# ---------------------------------------------------------------- dashboard
def _upload_state(aset: AnonymizedSet, job: Job | None = None, *, looked_up: bool = False) -> dict:
    """Status of one upload and its scoring job (``looked_up``: ``job`` came from ``selectors.latest_scoring_jobs``)."""
    if not looked_up:
        job = selectors.latest_scoring_jobs(AnonymizedSet, [aset.pk]).get(aset.pk)
    failed = job is not None and job.status == Job.FAILED
    finished = aset.status != AnonymizedSet.PENDING or failed
    return {"aset": aset, "job": job, "failed": failed, "finished": finished, "issues": issue_rows(aset.errors)}


def _attack_state(attack: Attack, job: Job | None = None, *, looked_up: bool = False) -> dict:
    if not looked_up:
        job = selectors.latest_scoring_jobs(Attack, [attack.pk]).get(attack.pk)
    failed = job is not None and job.status == Job.FAILED
    return {"attack": attack, "job": job, "failed": failed, "finished": attack.status != Attack.PENDING or failed,
            "issues": issue_rows(attack.errors)}


def _challenge_block(contest, ds: Dataset, anon_open: bool) -> dict:
    """One challenge card of the dashboard: counter, final-set marker and upload history of ``ds``.

    The same dict renders the card on the dashboard and its live part
    (``web/_challenge_state.html``, polled through :func:`challenge_state`), so
    both always agree. ``pending`` is true while an upload of the card is still
    being validated or scored; the page polls until it is false.
    """
    sets = selectors.uploads_of(ds)
    counted = sum(1 for s in sets if uploads.counts_towards_limit(s))
    final = next((s for s in sets if s.final), None)
    selected = next((s for s in sets if s.selected), None)
    # the set that counts if the phase closed now (the one rule: uploads.final_of)
    current_final = uploads.final_of(sets)
    default_final = None if final or selected else current_final
    job_of = selectors.latest_scoring_jobs(AnonymizedSet, [s.pk for s in sets])
    states = [_upload_state(s, job_of.get(s.pk), looked_up=True) for s in sets]
    _add_places(states)
    _add_previews(states)
    # the card shows the preview of the set that counts if the phase closed now; until it has
    # one, the newest preview there is, and says which
    final_state = next((u for u in states if current_final is not None and u["aset"].pk == current_final.pk), None)
    shown = (final_state if final_state is not None and final_state["preview"] is not None
             else next((u for u in states if u["preview"] is not None), None))
    return {
        "dataset": ds, "short": CHALLENGE_SHORT[ds.challenge], "name": challenge_name(ds.challenge),
        "uploads": states, "counted": counted,
        "pending": any(not u["finished"] or u["preview_pending"] for u in states),
        "preview": _preview_block(contest, ds, shown["aset"], shown["preview"]) if shown else None,
        "preview_of_final": shown is not None and shown is final_state,
        "final_preview_pending": final_state is not None and final_state["preview_pending"],
        "limit": contest.anonymized_upload_limit, "remaining": max(contest.anonymized_upload_limit - counted, 0),
        "final": final, "selected": selected, "default_final": default_final,
        "current_final_id": current_final.pk if current_final else None,
        "anon_open": anon_open,
        "can_upload": anon_open and counted < contest.anonymized_upload_limit,
        "form": UploadForm(auto_id=f"id_ds{ds.pk}_%s"),
    }


def _add_places(states: list[dict]) -> None:
    """Put each queued upload's place in its queue and the estimated wait into its state dict (``place``;
    None for an upload not queued), so a team in a deadline's rush sees where it stands."""
    queued = [u["job"] for u in states if u["job"] is not None and u["job"].status == Job.QUEUED]
    places = selectors.queue_places(queued) if queued else {}
    for u in states:
        u["place"] = places.get(u["job"].pk) if u["job"] is not None else None


def _add_previews(states: list[dict]) -> None:
    """Put each upload's privacy preview (or None) and whether it is still to come into its state dict.

    A valid upload's preview is still to come while its preview job is queued or running, or
    while its scoring job (which queues the preview) has not finished. Two queries at most.

    The jobs are read before the previews, and the order matters: a preview is stored before its job is
    marked done, so a job read as done has its preview in the later read. Read the other way round, a
    preview finishing between the two reads was neither shown nor pending, and the card stopped polling
    without it.
    """
    valid = [u["aset"].pk for u in states if u["aset"].status == AnonymizedSet.VALID]
    preview_job_of = selectors.latest_jobs_of(job_kinds.PRIVACY_PREVIEW, "anonymized_set_id", valid)
    preview_of = selectors.previews_of(valid)
    missing = [pk for pk in valid if pk not in preview_of]
    running = (Job.QUEUED, Job.RUNNING)
    for u in states:
        pk = u["aset"].pk
        u["preview"] = preview_of.get(pk)
        job = preview_job_of.get(pk)
        u["preview_pending"] = pk in missing and (
            job.status in running if job is not None else (u["job"] is not None and u["job"].status in running))
        # a newer upload's preview replaced this one's before it ran (uploads.queue_preview)
        u["preview_superseded"] = pk in missing and job is not None and job.superseded


def _preview_block(contest, ds: Dataset, aset: AnonymizedSet, p: PrivacyPreview) -> dict:
    """What the team card shows of one privacy preview: attack scores, the riskiest users, the leak map
    (as the population map draws it) and the command that reproduces it. Reads stored figures only."""
    s = p.summary
    mins = {AttackKind.REIDENTIFICATION: s["s_i_min"], AttackKind.TRACE_INFERENCE: s["s_t_min"]}
    attacks = [{"name": a["name"], "symbol": AttackKind(a["kind"]).symbol,
                "score": a["score"], "is_min": a["score"] == mins.get(a["kind"])} for a in s["attacks"]]
    top = [dict(zip(s["header"], row, strict=True)) for row in s["top_users"]]
    leaks = p.leak_map
    hospitals = list(contest.hospitals)
    reidentified = max(int(leaks["users"]), 1)
    exposed_total = max(sum(leaks["exposed"]), 1)
    maps = [{"id": f"leak-home-{aset.pk}", "title": _("Home regions of re-identified users"),
             "spec": {"nx": contest.grid_nx, "ny": contest.grid_ny, "hospitals": hospitals,
                      "values": [v / reidentified for v in leaks["home"]],
                      "label": _("Share of re-identified users whose home is each region"),
                      "legend": _("share of users (sqrt scale)")}},
            {"id": f"leak-exposed-{aset.pk}", "title": _("Their events left exact"),
             "spec": {"nx": contest.grid_nx, "ny": contest.grid_ny, "hospitals": hospitals,
                      "values": [v / exposed_total for v in leaks["exposed"]],
                      "label": _("Share of re-identified users' events published unchanged, per region")}}]
    command = " ".join(previews.preview_command(contest, ds, p.seed, s.get("attack_seeds")))
    # the judge's figure is one more pseudonymization draw: a prediction interval from the draws, computed
    # here so that previews stored with the former bare range show it too
    draws = s.get("draws") or []
    return {"aset": aset, "p": p, "summary": s, "attacks": attacks, "top": top, "maps": maps,
            "command": command, "draws": len(draws), "interval": previews.preview_interval(draws),
            "level": round(100 * PREDICTION_LEVEL),
            "draw_values": {key: ", ".join(f"{d[key]:.4f}" for d in draws if d[key] is not None)
                            for key in ("s_i_min", "s_t_min")},
            "judge_seeds": bool(s.get("attack_seeds"))}


def _target_block(contest, team, ps: PublicSet, attack_open: bool, attacks=None, job_of=None) -> dict:
    """One attack target of the dashboard: attempts left, best scores and the team's attacks on ``ps``.

    Rendered on the dashboard and, live, by :func:`target_state` (``web/_target_row.html``).
    The dashboard passes ``attacks`` (the team's on ``ps``, by kind and seq) and their latest
    jobs ``job_of``, looked up once for every target of the round.
    """
    is_own = ps.dataset.team_id == team.pk
    if attacks is None:
        attacks = selectors.attacks_on(team, ps)
    if job_of is None:
        job_of = selectors.latest_scoring_jobs(Attack, [a.pk for a in attacks])
    counts = {k: sum(1 for a in attacks if a.kind == k and uploads.counts_towards_limit(a))
              for k in (Attack.ETABLE, Attack.ETRACES)}
    best = {k: min((a.score for a in attacks if a.kind == k and a.score is not None), default=None)
            for k in (Attack.ETABLE, Attack.ETRACES)}
    # Newest first: the cell shows the latest attempt and folds the earlier ones (_target_row.html).
    states = [_attack_state(a, job_of.get(a.pk), looked_up=True) for a in sorted(attacks, key=lambda a: -a.pk)]
    return {
        "ps": ps, "label": _target_label(ps), "is_own": is_own,
        "attacks": states, "pending": any(not a["finished"] for a in states),
        "etable_used": counts[Attack.ETABLE], "etraces_used": counts[Attack.ETRACES],
        "etable_left": max(contest.etable_limit - counts[Attack.ETABLE], 0),
        "etraces_left": max(contest.etraces_limit - counts[Attack.ETRACES], 0),
        "best_etable": best[Attack.ETABLE], "best_etraces": best[Attack.ETRACES],
        "can_attack": (not is_own) and attack_open,
        "form": AttackUploadForm(auto_id=f"id_ps{ps.pk}_%s"),
    }


def _round_block(request, contest, team, round_: Round, now) -> dict:
    phases = {p.kind: p for p in round_.phases.all()}
    anon_phase, attack_phase = phases.get(Phase.ANONYMIZATION), phases.get(Phase.ATTACK)
    closed = permissions.anonymization_closed(round_)
    anon_open = bool(anon_phase and anon_phase.is_open(now))
    attack_open = bool(attack_phase and attack_phase.is_open(now))
    # a phase past its deadline is closed for a team even before the sweep records it
    attack_closed = bool(attack_phase and (attack_phase.closed_at or attack_phase.closes_at <= now))
    own = selectors.own_datasets(team, round_)
    challenges = [_challenge_block(contest, ds, anon_open) for ds in own]
    samples = selectors.sample_datasets(round_)
    targets = []
    if closed:
        mine = selectors.round_attacks(team, round_)
        job_of = selectors.latest_scoring_jobs(Attack, [a.pk for a in mine])
        targets = [_target_block(contest, team, ps, attack_open, [a for a in mine if a.target_id == ps.pk], job_of)
                   for ps in selectors.round_public_sets(round_)]
    return {"round": round_, "anon_phase": anon_phase, "attack_phase": attack_phase, "closed": closed,
            "anon_open": anon_open, "attack_open": attack_open, "attack_closed": attack_closed,
            "own": own, "challenges": challenges, "samples": samples, "targets": targets}


def _target_label(ps: PublicSet) -> str:
    ds = ps.dataset
    if ds.kind == Dataset.BENCHMARK:
        who = _("Benchmark")
    else:
        who = f"{ds.number:03d} {ds.team.name}" if ds.team else f"{ds.number:03d}"
    return f"{who} · {CHALLENGE_SHORT[ds.challenge]}"


def _dashboard_round(request, contest, rounds: list[Round], state) -> Round | None:
    """``?round=N``, else the round whose phase is open or comes next, else the last round."""
    by_number = {r.number: r for r in rounds}
    try:
        chosen = by_number.get(int(request.GET.get("round", "")))
    except ValueError:
        chosen = None
    if chosen is None:
        phase = state.open_phase or state.next_phase
        chosen = by_number.get(phase.round.number) if phase else None
    return chosen or (rounds[-1] if rounds else None)


@login_required
def history_csv(request, slug):
    """The team's own submission history and scores, every round: each anonymized set and each attack
    upload with its time, status and score (read from the stored rows; nothing is parsed)."""
    contest = get_contest(slug)
    team = _team_or_403(request, contest)
    tz = contest.tz
    asets, attacks = selectors.team_history(team)
    rows = [[a.dataset.round.number, "anonymized set", CHALLENGE_SHORT[a.dataset.challenge], "", a.seq,
             a.created_at.astimezone(tz).isoformat(), a.status, int(a.final), int(a.selected), a.s_u, "",
             a.file.name, a.file.sha256] for a in asets]
    rows += [[t.target.dataset.round.number, t.kind, CHALLENGE_SHORT[t.target.dataset.challenge],
              t.target.dataset.number, t.seq, t.created_at.astimezone(tz).isoformat(), t.status, "", "", "",
              t.score, t.file.name, t.file.sha256] for t in attacks]
    return csv_download(f"{contest.slug}_team{team.number:03d}_history.csv",
                        ["round", "upload", "challenge", "target_team", "number", "uploaded_at", "status", "final",
                         "selected", "s_u", "attack_score", "file_name", "sha256"], rows)


def _dashboard_team(request, slug) -> int | None:
    """The id of the team whose dashboard ``request``'s user is shown (``page_cache.per_session``'s ``team_of``)."""
    team = permissions.team_of(request.user, get_contest(slug))
    return team.pk if team is not None else None


@login_required
@page_cache.per_session(team_of=_dashboard_team)
def dashboard(request, slug):
    """The team's page for one round at a time (round tabs, as on the public results pages).

    A signed-in user who is not in an approved team of this contest gets a
    page that says why and links to joining a team (status 403).
    """
    contest = get_contest(slug)
    team = permissions.team_of(request.user, contest)
    if team is None:
        pending = selectors.pending_team(contest, request.user)
        return page(request, "web/no_team.html", {"pending_team": pending,
                                                  "is_organizer": permissions.is_organizer(request.user, contest)},
                    contest=contest, nav="team", status=403)
    now = timezone.now()
    state = contest_state(contest, now)
    rounds = list(contest.rounds.order_by("number"))
    current = _dashboard_round(request, contest, rounds, state)
    round_links = [{"value": str(r.number), "label": r.name, "weight": None} for r in rounds]
    ctx = {"team": team, "rb": _round_block(request, contest, team, current, now) if current else None,
           "round_links": round_links if len(rounds) > 1 else [],
           "choice": current.number if current else None, "state": state,
           "members": team.memberships.select_related("user").order_by("user__username"),
           "announcements": announcements.latest(contest, 3)}
    return page(request, "web/team.html", ctx, contest=contest, nav="team")


@login_required
def challenge_state(request, slug, dataset_id):
    """The live part of one challenge card (counter, final set, upload history) as ``{finished, html}``.

    Polled by the page script after an upload until no upload of the card is
    pending, so the card always shows the server's state without a reload.
    """
    contest = get_contest(slug)
    team = _team_or_403(request, contest)
    dataset = get_object_or_404(selectors.datasets(), pk=dataset_id,
                                round__contest=contest, team=team)
    ch = _challenge_block(contest, dataset, _phase_open(dataset.round, Phase.ANONYMIZATION))
    html = render_to_string("web/_challenge_state.html", {"contest": contest, "ch": ch}, request=request)
    return JsonResponse({"finished": not ch["pending"], "html": html})


def _attack_target(request, slug, public_set_id) -> tuple:
    """(contest, the user's team, the target public set) of an attack-target URL; 403 without a team."""
    contest = get_contest(slug)
    team = _team_or_403(request, contest)
    target = get_object_or_404(selectors.public_sets(),
                               pk=public_set_id, dataset__round__contest=contest)
    return contest, team, target


def _phase_open(round_: Round, kind: str) -> bool:
    phase = round_.phases.filter(kind=kind).first()
    return bool(phase and phase.is_open(timezone.now()))


@login_required
def target_state(request, slug, public_set_id):
    """The live row of one attack target (attempts left, best scores, the team's attacks) as ``{finished, html}``."""
    contest, team, target = _attack_target(request, slug, public_set_id)
    require(permissions.can_read_public_set(request.user, target, "pubtraces"))
    tg = _target_block(contest, team, target, _phase_open(target.dataset.round, Phase.ATTACK))
    html = render_to_string("web/_target_row.html", {"contest": contest, "tg": tg}, request=request)
    return JsonResponse({"finished": not tg["pending"], "html": html})


# ---------------------------------------------------------------- anonymized uploads
def _read_upload(form):
    """(the uploaded file, its name): a file object, spooled to disk past 8 MB, never read whole here."""
    f = form.cleaned_data["file"]
    f.seek(0)  # the form's checks may have read it
    return f.file, f.name


def _rule_error(request, exc, back_url):
    """Answer a refused upload: JSON for the page script, a message and redirect otherwise."""
    text = str(exc)
    if _is_ajax(request):
        html = render_to_string("web/_refused.html", {"message": text, "issues": issue_rows(getattr(exc, "issues", []))},
                                request=request)
        return JsonResponse({"ok": False, "message": text, "html": html}, status=getattr(exc, "status", 409))
    messages.error(request, text)
    return redirect(back_url)


def _submit_upload(request, form, back_url, submit) -> tuple:
    """A team's upload from its page (anonymized set or attack): the form checked, its file handed to
    ``submit(content, name)`` (a ``contest.services.uploads`` call). (the upload, None), or (None, the
    refusal's answer from :func:`_rule_error`) when the form or the contest's rules refuse it."""
    if not form.is_valid():
        return None, _rule_error(request, uploads.RuleViolation(form.problem(), status=400), back_url)
    content, name = _read_upload(form)
    try:
        return submit(content, name), None
    except ServiceError as exc:
        return None, _rule_error(request, exc, back_url)


def _received(request, message: str, redirect_url: str, live):
    """Answer an accepted upload: for the page script JSON (201) with ``live()``'s keys (its live card),
    built only then; otherwise ``message`` and a redirect."""
    if _is_ajax(request):
        return JsonResponse({"ok": True, "message": message, **live()}, status=201)
    messages.success(request, message)
    return redirect(redirect_url)


def _live_card(request, contest, element_id: str, template: str, **context) -> dict:
    """The JSON keys that make the page script re-render ``element_id`` now and poll it until it is settled."""
    html = render_to_string(template, {"contest": contest, **context}, request=request)
    return {"replace": {element_id: html}, "poll": [element_id]}


@login_required
@require_POST
def upload_anonymized(request, slug, dataset_id):
    started = request_start.started_at(request)  # the deadline counts when the request began (rules §15)
    contest = get_contest(slug)
    dataset = get_object_or_404(selectors.datasets(), pk=dataset_id,
                                round__contest=contest)
    back = reverse("web:team", args=[slug]) + f"#ds-{dataset.pk}"
    aset, refused = _submit_upload(request, UploadForm(request.POST, request.FILES), back, lambda content, name:
                                   uploads.submit_anonymized_set(user=request.user, dataset=dataset,
                                                                 content=content, name=name, started_at=started))
    if refused is not None:
        return refused
    detail = reverse("web:upload_detail", args=[slug, aset.pk])

    def live() -> dict:
        html = render_to_string("web/_upload_live.html", {"contest": contest, "state": _upload_state(aset),
                                                          "detail_url": detail}, request=request)
        return {"upload_id": aset.pk, "detail_url": detail, "html": html,
                **_live_card(request, contest, f"state-ds-{dataset.pk}", "web/_challenge_state.html",
                             ch=_challenge_block(contest, dataset, True))}
    return _received(request, _("Upload #%(n)s received; validating and scoring…") % {"n": aset.seq}, detail, live)


def _own_upload(request, slug, upload_id) -> tuple:
    contest = get_contest(slug)
    aset = get_object_or_404(selectors.anonymized_sets(),
                             pk=upload_id, dataset__round__contest=contest)
    require(permissions.can_read_anonymized_set(request.user, aset))
    return contest, aset


@login_required
def upload_detail(request, slug, upload_id):
    contest, aset = _own_upload(request, slug, upload_id)
    state = _upload_state(aset)
    _add_previews([state])
    ds = aset.dataset
    # this upload's own preview, per-user risk and leak map (the card shows the final set's)
    pv = _preview_block(contest, ds, aset, state["preview"]) if state["preview"] is not None else None
    current = uploads.final_of(selectors.uploads_of(ds))
    anon_phase = ds.round.phases.filter(kind=Phase.ANONYMIZATION).first()
    # the dashboard's rule: a valid upload that is not the final set may be chosen while the phase is open
    can_choose = (bool(anon_phase and anon_phase.is_open(timezone.now())) and aset.status == AnonymizedSet.VALID
                  and (current is None or current.pk != aset.pk))
    ctx = {"state": state, "aset": aset, "dataset": ds, "short": CHALLENGE_SHORT[ds.challenge],
           "is_current_final": current is not None and current.pk == aset.pk, "can_choose": can_choose,
           "ch": {"dataset": ds}, "pv": pv, "preview_pending": state["preview_pending"],
           "auto_refresh": None if state["finished"] and not state["preview_pending"] else 2}
    return page(request, "web/upload_detail.html", ctx, contest=contest, nav="team")


@login_required
def upload_status(request, slug, upload_id):
    contest, aset = _own_upload(request, slug, upload_id)
    state = _upload_state(aset)
    html = render_to_string("web/_upload_status.html", {"contest": contest, "state": state}, request=request)
    return JsonResponse({"finished": state["finished"], "status": aset.status, "s_u": aset.s_u, "valid": aset.valid,
                         "error_total": aset.error_total, "html": html})


@login_required
@require_POST
def select_upload(request, slug, upload_id):
    contest, aset = _own_upload(request, slug, upload_id)
    with Refusal(request) as refused:
        uploads.select_anonymized_set(user=request.user, aset=aset)
    if not refused.error:
        messages.success(request, _("Upload #%(n)s is now your final %(ch)s set.")
                         % {"n": aset.seq, "ch": CHALLENGE_SHORT[aset.dataset.challenge]})
    return redirect(reverse("web:team", args=[slug]) + f"#ds-{aset.dataset_id}")


# ---------------------------------------------------------------- attacks
@login_required
@require_POST
def upload_attack(request, slug, public_set_id):
    started = request_start.started_at(request)  # the deadline counts when the request began (rules §15)
    contest, team, target = _attack_target(request, slug, public_set_id)
    back = reverse("web:team", args=[slug]) + f"#ps-{target.pk}"
    form = AttackUploadForm(request.POST, request.FILES)
    attack, refused = _submit_upload(request, form, back, lambda content, name:
                                     uploads.submit_attack(user=request.user, attacker=team, target=target,
                                                           kind=form.cleaned_data["kind"], content=content, name=name,
                                                           started_at=started))
    if refused is not None:
        return refused

    def live() -> dict:
        html = render_to_string("web/_attack_live.html", {"contest": contest, "state": _attack_state(attack)},
                                request=request)
        return {"html": html, **_live_card(request, contest, f"target-{target.pk}", "web/_target_row.html",
                                           tg=_target_block(contest, team, target, True))}
    return _received(request, _("%(kind)s #%(n)s received; scoring…") % {"kind": attack.kind, "n": attack.seq}, back, live)


@login_required
def attack_status(request, slug, attack_id):
    contest = get_contest(slug)
    attack = get_object_or_404(selectors.attacks(), pk=attack_id,
                               attacker__contest=contest)
    require(permissions.can_read_attack(request.user, attack))
    state = _attack_state(attack)
    html = render_to_string("web/_attack_status.html", {"contest": contest, "state": state}, request=request)
    return JsonResponse({"finished": state["finished"], "status": attack.status, "score": attack.score, "html": html})


# ---------------------------------------------------------------- attack material
@login_required
def attack_material(request, slug, round_number):
    """All valid pubtraces and the matching reference traces of a round, as one zip with a manifest.

    The zip holds the files under their 2019 names, ``MANIFEST.json`` (name,
    size, SHA-256, what each file is) and ``SHA256SUMS`` (``sha256sum -c``
    format), so a team can check what it received. It is built once, by a job
    queued when the phase closes (``contest.services.bundles``), and streamed
    from disk; until it is ready the page says so and follows the job.
    """
    contest = get_contest(slug)
    round_ = get_object_or_404(Round, contest=contest, number=round_number)
    public_sets = selectors.round_public_sets(round_)
    require(permissions.can_read_attack_material(request.user, round_, public_sets))
    if not public_sets:
        raise Http404(_("No attack material is published for this round yet."))
    return bundle_download(request, bundles.attack_material_plan(round_),
                           title=_("Attack material of %(round)s") % {"round": round_.name},
                           back_url=reverse("web:team", args=[contest.slug]), back_label=_("Team dashboard"),
                           nav="team")


# ---------------------------------------------------------------- map of one's own data
def _shares(counts: np.ndarray, slot: int | None) -> np.ndarray:
    """(M,) population shares of a stored ``population_counts`` figure (S, M): one slot of the day
    or (None) the whole day, normalised to sum 1 (all zero without mass)."""
    row = counts.sum(axis=0) if slot is None else counts[slot]
    total = row.sum()
    return row / total if total > 0 else row


@login_required
def data_map(request, slug, dataset_id):
    """Population heatmaps of the team's original traces and of one of its anonymized uploads.

    Reads the figures the generation and scoring jobs stored (``contest.services.figures``):
    this request parses no trace file, whatever the upload's size.
    """
    contest = get_contest(slug)
    dataset = get_object_or_404(selectors.datasets(),
                                pk=dataset_id, round__contest=contest)
    require(permissions.can_view_data_map(request.user, dataset))
    grid = contest.grid()
    candidates = selectors.scored_uploads_of(dataset)
    chosen = None
    if request.GET.get("upload"):
        chosen = next((a for a in candidates if str(a.pk) == request.GET["upload"]), None)
    if chosen is None:
        chosen = next((a for a in candidates if a.selected), None) or (candidates[0] if candidates else None)
    axis = dataset.round.time_axis()
    slots = axis.slots_per_day
    slot = request.GET.get("slot", "all")
    slot_index = None
    if slot != "all":
        try:
            slot_index = int(slot)
        except ValueError:
            slot = "all"
        else:
            if not 0 <= slot_index < slots:
                slot, slot_index = "all", None
    if dataset.population is None:  # generated before the figure was stored; the next scoring stores it
        orig = np.zeros(grid.M)
    else:
        orig = _shares(figures.read_population(dataset.population), slot_index)
    anon = None
    if chosen is not None and chosen.population is not None:
        anon = _shares(figures.read_population(chosen.population), slot_index)
    vmax = float(max(orig.max(), anon.max() if anon is not None else 0.0)) or 1.0
    hospitals = list(grid.hospitals)
    maps = [{"id": "map-original", "title": _("Original traces O"),
             "spec": {"nx": grid.nx, "ny": grid.ny, "values": orig.round(8).tolist(), "max": vmax,
                      "hospitals": hospitals, "label": _("Population of the original traces")}}]
    if anon is not None:
        maps.append({"id": "map-anonymized", "title": _("Anonymized upload #%(n)s") % {"n": chosen.seq},
                     "spec": {"nx": grid.nx, "ny": grid.ny, "values": anon.round(8).tolist(), "max": vmax,
                              "hospitals": hospitals, "label": _("Population of the anonymized traces")}})
    tv = float(np.abs(orig - anon).sum()) if anon is not None else None
    top = np.argsort(-orig)[:10]
    # x, y 0-based, so that region = y * nx + x + 1 as the rules write it
    top_rows = [{"region": int(r) + 1, "x": int(r) % grid.nx, "y": int(r) // grid.nx,
                 "orig": float(orig[r]), "anon": float(anon[r]) if anon is not None else None,
                 "orig_pct": f"{100 * orig[r]:.2f}%", "anon_pct": f"{100 * anon[r]:.2f}%" if anon is not None else None}
                for r in top]
    slot_choices = [("all", _("all day"))]
    for s in range(slots):
        hour, minute = axis.clock(s)
        slot_choices.append((str(s), f"{int(hour):d}:{int(minute):02d}"))
    ctx = {"dataset": dataset, "short": CHALLENGE_SHORT[dataset.challenge], "maps": maps, "chosen": chosen, "nx": grid.nx,
           "candidates": candidates, "l1": tv, "top_rows": top_rows, "slot": slot, "slot_choices": slot_choices}
    return page(request, "web/data_map.html", ctx, contest=contest, nav="team")
