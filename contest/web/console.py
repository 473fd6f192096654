"""Organizer console: create contests (form or YAML), rounds and phases, teams, generation, phase close,
jobs (status, progress, errors, retry), re-score, publish / unpublish, download everything.

Every operation is a core service (``contest.services.*``, which writes the
audit log) and every permission a ``contest.permissions`` decision; the views
only read forms and show messages.
"""
from __future__ import annotations

import zoneinfo
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from contest import job_kinds, permissions, selectors
from contest.models import (
    Contest,
    Job,
    Phase,
    Round,
    Team,
)
from contest.services import (
    announcements,
    audit,
    bundles,
    jobs,
    judge,
    results,
    schedule,
    setup,
    teams,
    training_data,
)
from contest.services.generation import expected_datasets, request_generation, synthesizer_summary
from contest.services.setup import SetupError, create_contest, create_contest_from_yaml
from scoring.results import default_round_weight

from .common import Refusal, bundle_download, contest_state, get_contest, page, require_organizer
from .forms import AnnouncementForm, ContestForm, ContestYamlForm, PhaseScheduleForm, RoundForm, TeamForm


def _organizer_contest(request, slug) -> Contest:
    contest = get_contest(slug)
    require_organizer(request.user, contest)
    return contest


def _organizer_object(request, slug, model, pk, contest_field: str = "contest") -> tuple:
    """(the contest, its object ``pk`` of ``model`` or a queryset): the organizer's only (403 for anyone else),
    404 for an object of another contest (``contest_field`` leads from the object to its contest)."""
    contest = _organizer_contest(request, slug)
    return contest, get_object_or_404(model, pk=pk, **{contest_field: contest})


# ---------------------------------------------------------------- list and create
@login_required
def console_home(request):
    if not permissions.can_create_contest(request.user):
        raise PermissionDenied(_("The organizer console is for organizers."))
    rows = [{"contest": c, "state": contest_state(c)} for c in selectors.organized_contests(request.user)]
    form = ContestForm(prefix="c")
    # The 2019 shape: a preliminary round (0.1) now, the final round (0.9) added from the contest's console.
    round_form = RoundForm(prefix="r", initial={"name": _("Preliminary"), "weight": default_round_weight(1)})
    yaml_form = ContestYamlForm(prefix="y")
    if request.method == "POST":
        if request.POST.get("mode") == "yaml":
            yaml_form = ContestYamlForm(request.POST, request.FILES, prefix="y")
            if yaml_form.is_valid():
                try:
                    contest = create_contest_from_yaml(yaml_form.yaml_source(), actor=request.user)
                except SetupError as exc:  # one form error per problem, each naming its field's path
                    for issue in exc.issues:
                        yaml_form.add_error(None, f"{issue['field']}: {issue['message']}" if issue["field"]
                                            else issue["message"])
                except ValueError as exc:
                    yaml_form.add_error(None, str(exc))
                else:
                    if not permissions.is_organizer(request.user, contest):
                        contest.organizers.add(request.user)
                    messages.success(request, _("Contest %(name)s created from YAML.") % {"name": contest.name})
                    return redirect("web:console_contest", contest.slug)
        else:
            form = ContestForm(request.POST, prefix="c")
            tz_name = request.POST.get("c-time_zone") or "Asia/Tokyo"
            try:
                tz = zoneinfo.ZoneInfo(tz_name)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):  # the contest form reports the bad zone
                tz = timezone.get_default_timezone()
            with timezone.override(tz):
                round_form = RoundForm(request.POST, prefix="r")
                ok = form.is_valid() & round_form.is_valid()
            if ok:
                try:
                    contest = _create_from_forms(request.user, form.cleaned_data, round_form.cleaned_data)
                except (SetupError, ValueError) as exc:  # the setup service's reason, as the YAML form shows it
                    form.add_error(None, _("The contest could not be created: %(reason)s") % {"reason": exc})
                else:
                    messages.success(request, _("Contest %(name)s created.") % {"name": contest.name})
                    return redirect("web:console_contest", contest.slug)
    # a failed submit is summarized at the top of the page, each problem linking to its field
    failed = [f for f in (form, round_form, yaml_form) if f.is_bound and f.errors]
    ctx = {"rows": rows, "form": form, "round_form": round_form, "yaml_form": yaml_form, "failed_forms": failed}
    return page(request, "web/console_home.html", ctx, nav="console")


def _create_from_forms(user, c: dict, r: dict) -> Contest:
    """Build the same spec a YAML file gives and hand it to the core's setup service (which raises
    :class:`SetupError` or ``ValueError`` with the reason when the contest cannot be made)."""
    params = {k: v for k, v in c.items() if k not in ("name", "slug", "description") and v not in (None, "")}
    spec = {
        "contest": {"slug": c["slug"], "name": c["name"], "description": c.get("description", ""),
                    "parameters": params, "organizers": [user.get_username()]},
        "rounds": [{"number": 1, "name": r["name"], "weight": r["weight"], "ref_days": r["ref_days"],
                    "org_days": r["org_days"], "phases": {
                        "anonymization": {"opens": r["anonymization_opens"].isoformat(),
                                          "closes": r["anonymization_closes"].isoformat()},
                        "attack": {"opens": r["attack_opens"].isoformat(), "closes": r["attack_closes"].isoformat()}}}],
    }
    return create_contest(spec, actor=user)


# ---------------------------------------------------------------- one contest
@login_required
def console_contest(request, slug):
    contest = _organizer_contest(request, slug)
    now = timezone.now()
    rounds = []
    n_teams = contest.teams.filter(approved=True).count()
    for r in contest.rounds.prefetch_related("phases").order_by("number"):
        counts = selectors.round_counts(r)
        n_datasets, n_uploads, n_attacks = counts["n_datasets"], counts["n_uploads"], counts["n_attacks"]
        gen_job = selectors.latest_round_job(r, job_kinds.GENERATE_ROUND)
        close_job = selectors.latest_round_job(r, job_kinds.CLOSE_ANONYMIZATION)
        phases = {p.kind: p for p in r.phases.all()}
        anon = phases.get(Phase.ANONYMIZATION)
        n_expected = expected_datasets(n_teams)
        rounds.append({
            "round": r, "n_datasets": n_datasets, "gen_job": gen_job, "close_job": close_job,
            # the round's sets are generated by a job each: the page counts them until the last is stored
            "n_expected": n_expected, "generating": r.generated_at is None and gen_job is not None
            and gen_job.status != Job.FAILED and n_datasets < n_expected,
            "phases": [{"phase": p, "open": p.is_open(now), "opens": p.opens_at,
                        "closes": p.closes_at, "form": _schedule_form(contest, p),
                        "can_close_now": schedule.can_close_now(p, now),
                        # past its deadline, not closed yet: uploads begun in time still arrive until the close
                        "closing_at": schedule.close_time(p) if p.closed_at is None and p.closes_at <= now else None,
                        # Moving the dates of a running phase that has uploads: teams see it at once.
                        "uploads_in_phase": (n_uploads if p.kind == Phase.ANONYMIZATION else n_attacks)
                        if p.is_open(now) else 0,
                        "can_open_now": schedule.can_open_now(p, anon, now)} for p in r.phases.order_by("opens_at")],
            "anon_closed": bool(anon and anon.closed_at),
            "n_uploads": n_uploads,
            "n_public": counts["n_public"],
            "n_attacks": n_attacks,
            "synth": synthesizer_summary(r.manifest or {}),
            "training": training_data.training_summary(r),
        })
    teams = contest.teams.annotate(n_members=Count("memberships")).order_by("number")
    snapshots = contest.snapshots.order_by("-created_at", "-id")[:5]
    with timezone.override(contest.tz):
        number = contest.rounds.count() + 1
        round_form = RoundForm(prefix="r", initial={"name": _("Final") if number == 2 else _("Round %(n)s") % {"n": number},
                                                    "weight": default_round_weight(number)})
    ctx = {"rounds": rounds, "teams": teams, "snapshots": snapshots, "state": contest_state(contest, now),
           **_job_counts(contest), "round_form": round_form, "team_form": TeamForm(),
           "published": contest.results_published_at is not None,
           **_publish_choices(contest, [rb["round"] for rb in rounds if rb["n_public"]]),
           "announcement_form": AnnouncementForm(prefix="a"), "announcements": announcements.latest(contest, 10),
           "recent_audit": selectors.recent_audit(contest, 12)}
    return page(request, "web/console_contest.html", ctx, contest=contest, nav="console", sub="console")


def _publish_choices(contest, played: list) -> dict:
    """The played rounds the results may be published through now (``results.publishable_rounds``: their
    attack phases closed) and, when there is none, why: the form offers only these and is disabled with the
    reason otherwise, so its confirmation never comes before a refusal."""
    numbers, reason = results.publishable_rounds(contest, [rnd.number for rnd in played])
    return {"played_rounds": played, "publishable_rounds": [rnd for rnd in played if rnd.number in numbers],
            "publish_refusal": reason}


def _job_counts(contest) -> dict:
    """The console header's job counts: running or queued, and failed."""
    return {"active_jobs": contest.jobs.filter(status__in=(Job.QUEUED, Job.RUNNING)).count(),
            "failed_jobs": contest.jobs.filter(status=Job.FAILED).count()}


@login_required
def console_jobs_count(request, slug):
    """The header's job counts, re-rendered for the page's poller (never "finished": jobs come and go)."""
    contest = _organizer_contest(request, slug)
    html = render_to_string("web/_job_counts.html", {"contest": contest, **_job_counts(contest)}, request=request)
    return JsonResponse({"finished": False, "html": html})


def _schedule_form(contest, phase) -> PhaseScheduleForm:
    """The phase's window form, filled with its times in the contest's time zone."""
    fmt = "%Y-%m-%dT%H:%M"
    return PhaseScheduleForm(prefix=f"p{phase.pk}", auto_id=f"id_p{phase.pk}_%s", initial={
        "opens_at": phase.opens_at.astimezone(contest.tz).strftime(fmt),
        "closes_at": phase.closes_at.astimezone(contest.tz).strftime(fmt)})


def _back(slug, anchor=""):
    return redirect(reverse("web:console_contest", args=[slug]) + anchor)


@login_required
@require_POST
def add_round(request, slug):
    contest = _organizer_contest(request, slug)
    with timezone.override(contest.tz):
        form = RoundForm(request.POST, prefix="r")
        valid = form.is_valid()
    if not valid:
        for field, errs in form.errors.items():
            for e in errs:
                messages.error(request, f"{form.fields[field].label if field in form.fields else ''} {e}".strip())
        return _back(slug, "#rounds")
    d = form.cleaned_data
    with Refusal(request) as refused:
        rnd = setup.add_round(contest, name=d["name"], weight=d["weight"], ref_days=d["ref_days"],
                              org_days=d["org_days"], actor=request.user,
                              phases={Phase.ANONYMIZATION: (d["anonymization_opens"], d["anonymization_closes"]),
                                      Phase.ATTACK: (d["attack_opens"], d["attack_closes"])})
    if refused.error:
        return _back(slug, "#rounds")
    messages.success(request, _("Round %(name)s added.") % {"name": rnd.name})
    return _back(slug, "#rounds")


@login_required
@require_POST
def add_team(request, slug):
    contest = _organizer_contest(request, slug)
    form = TeamForm(request.POST)
    if form.is_valid():
        name = form.cleaned_data["name"].strip()
        if contest.teams.filter(name=name).exists():
            messages.error(request, _("A team named %(name)s exists already.") % {"name": name})
            return _back(slug, "#teams")
        with Refusal(request) as refused:
            team = teams.add_team(contest, name, actor=request.user)
        if refused.error:
            return _back(slug, "#teams")
        messages.success(request, _("Team %(name)s added; its invitation code is %(code)s.")
                         % {"name": team.name, "code": team.invitation_code})
    return _back(slug, "#teams")


@login_required
@require_POST
def approve_team(request, slug, team_id):
    _contest, team = _organizer_object(request, slug, Team, team_id)
    approve = request.POST.get("approved", "1") == "1"
    teams.approve_team(team, approve, actor=request.user)
    messages.success(request, (_("Team %(name)s approved.") if approve else _("Approval of team %(name)s withdrawn."))
                     % {"name": team.name})
    return _back(slug, "#teams")


@login_required
@require_POST
def open_contest(request, slug):
    """'Open to the public': the draft's pages, rules and results show to everyone from now on."""
    contest = _organizer_contest(request, slug)
    if setup.open_to_public(contest, actor=request.user):
        messages.success(request, _("%(name)s is open to the public: everyone sees its pages now.")
                         % {"name": contest.name})
    return _back(slug, "")


@login_required
@require_POST
def generate(request, slug, round_id):
    _contest, rnd = _organizer_object(request, slug, Round, round_id)
    with transaction.atomic():
        job = request_generation(rnd, user=request.user)
    messages.success(request, _("Data generation for %(round)s started (job %(job)s).") % {"round": rnd.name, "job": job.pk})
    return redirect("web:console_job", slug, job.pk)


@login_required
@require_POST
def give_training(request, slug, round_id):
    """The organizer's own training traces or offline model for a round (before generation)."""
    _contest, rnd = _organizer_object(request, slug, Round, round_id)
    f = request.FILES.get("file")
    if f is None:
        messages.error(request, _("Choose a file of training traces or a model."))
        return _back(slug, "#rounds")
    with Refusal(request) as refused:
        training_data.give_training_data(rnd, user=request.user, content=f.read(), name=f.name,
                                         kind=request.POST.get("kind", ""))
    if refused.error:
        return _back(slug, "#rounds")
    messages.success(request, _("%(round)s will be trained on %(name)s.") % {"round": rnd.name, "name": f.name})
    return _back(slug, "#rounds")


@login_required
@require_POST
def close_phase(request, slug, phase_id):
    _contest, phase = _organizer_object(request, slug, selectors.phases(), phase_id, "round__contest")
    job = judge.close_phase_now(phase, user=request.user)
    if phase.kind == Phase.ANONYMIZATION:
        messages.success(request, _("Closing the anonymization phase of %(round)s: freezing, pseudonymizing and "
                                    "running the judge attacks (job %(job)s).") % {"round": phase.round.name, "job": job.pk})
        return redirect("web:console_job", slug, job.pk)
    messages.success(request, _("The attack phase of %(round)s is closed; results are being computed (job %(job)s).")
                     % {"round": phase.round.name, "job": job.pk})
    return _back(slug, "#rounds")


@login_required
@require_POST
def reschedule_phase(request, slug, phase_id):
    """Move a phase's window (the form's times are in the contest's time zone)."""
    contest, phase = _organizer_object(request, slug, selectors.phases(), phase_id, "round__contest")
    with timezone.override(contest.tz):
        form = PhaseScheduleForm(request.POST, prefix=f"p{phase.pk}")
        valid = form.is_valid()
    if not valid:
        for field, errors in form.errors.items():
            messages.error(request, f"{form.fields[field].label if field in form.fields else ''}: {' '.join(errors)}")
        return _back(slug, "#rounds")
    # The form shows minutes: a time left as shown keeps its exact stored value (seconds included).
    times = {k: None if form.cleaned_data[k] == getattr(phase, k).replace(second=0, microsecond=0)
             else form.cleaned_data[k] for k in ("opens_at", "closes_at")}
    if not any(times.values()):
        messages.info(request, _("Nothing changed."))
        return _back(slug, "#rounds")
    with Refusal(request, _("The phase was not changed: %(reason)s.")) as refused:
        phase = schedule.reschedule_phase(phase, user=request.user, **times)
    if refused.error:
        return _back(slug, "#rounds")
    messages.success(request, _("The %(phase)s of %(round)s now runs from %(opens)s to %(closes)s.") % {
        "phase": schedule.phase_kind(phase), "round": phase.round.name,
        "opens": schedule.local_time(phase, phase.opens_at), "closes": schedule.local_time(phase, phase.closes_at)})
    return _back(slug, "#rounds")


@login_required
@require_POST
def announce(request, slug):
    contest = _organizer_contest(request, slug)
    form = AnnouncementForm(request.POST, prefix="a")
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{form.fields[field].label}: {' '.join(errors)}")
        return _back(slug, "#announcements")
    d = form.cleaned_data
    with Refusal(request) as refused:
        announcements.announce(contest, title=d["title"], body=d["body"], user=request.user, email=d["email"])
    if not refused.error:
        messages.success(request, _("Announced: %(title)s") % {"title": d["title"]})
    return _back(slug, "#announcements")


@login_required
@require_POST
def open_attack(request, slug, round_id):
    _contest, rnd = _organizer_object(request, slug, Round, round_id)
    with Refusal(request, _("The attack phase was not opened: %(reason)s.")) as refused:
        schedule.open_attack_now(rnd, user=request.user)
    if not refused.error:
        messages.success(request, _("The attack phase of %(round)s is open.") % {"round": rnd.name})
    return _back(slug, "#rounds")


@login_required
@require_POST
def results_action(request, slug, action):
    contest = _organizer_contest(request, slug)
    if action == "snapshot":
        job = results.request_results(contest, user=request.user)
        messages.success(request, _("Computing a results preview (job %(job)s).") % {"job": job.pk})
    elif action == "publish":
        through = request.POST.get("round") or None
        with Refusal(request, _("The results were not published: %(reason)s.")) as refused:
            job = results.request_results(contest, user=request.user, publish=True,
                                          through_round=int(through) if through and through.isdigit() else None)
        if not refused.error:
            messages.success(request, _("Publishing the results (job %(job)s).") % {"job": job.pk})
    elif action == "unpublish":
        results.unpublish_results(contest, user=request.user)
        messages.success(request, _("Results are embargoed again."))
    elif action == "rescore":
        job = results.request_rescore(contest, user=request.user)
        messages.success(request, _("Re-scoring every upload and judge attack (job %(job)s).") % {"job": job.pk})
    else:
        messages.error(request, _("Unknown action."))
    return _back(slug, "#results")


# ---------------------------------------------------------------- jobs
#: Jobs per page of the console's job list.
JOBS_PER_PAGE = 50


def _job_filters(request, contest) -> dict:
    """The job list's filters from the query string: status, kind and team (invalid values are ignored)."""
    status = request.GET.get("status") or ""
    kind = request.GET.get("kind") or ""
    team = request.GET.get("team") or ""
    return {"status": status if status in dict(Job.STATUSES) else "",
            "kind": kind if kind in job_kinds.KINDS else "",
            "team": team if team.isdigit() and contest.teams.filter(number=int(team)).exists() else ""}


def _job_page(request, contest):
    """(the page of jobs, the filters, whether a job of the page is still queued or running): newest first,
    filtered, ``JOBS_PER_PAGE`` a page, each with its team."""
    filters = _job_filters(request, contest)
    qs = contest.jobs.order_by("-created_at", "-id")
    if filters["status"]:
        qs = qs.filter(status=filters["status"])
    if filters["kind"]:
        qs = qs.filter(kind=filters["kind"])
    if filters["team"]:
        qs = selectors.jobs_about_team(qs, contest, int(filters["team"]))
    page_obj = Paginator(qs, JOBS_PER_PAGE).get_page(request.GET.get("page"))
    selectors.attach_job_teams(page_obj.object_list)
    active = any(j.status in (Job.QUEUED, Job.RUNNING) for j in page_obj.object_list)
    return page_obj, filters, active


@login_required
def console_jobs(request, slug):
    contest = _organizer_contest(request, slug)
    page_obj, filters, active = _job_page(request, contest)
    query = urlencode({k: v for k, v in filters.items() if v})
    ctx = {"jobs": page_obj.object_list, "page_obj": page_obj, "filters": filters, "query": query,
           "statuses": [s for s, _l in Job.STATUSES], "kinds": job_kinds.CHOICES,
           "teams": contest.teams.order_by("number"), "active": active,
           "auto_refresh": 3 if active else None}
    return page(request, "web/console_jobs.html", ctx, contest=contest, nav="console", sub="console")


@login_required
def console_jobs_table(request, slug):
    contest = _organizer_contest(request, slug)
    page_obj, _filters, active = _job_page(request, contest)
    html = render_to_string("web/_jobs_table.html", {"contest": contest, "jobs": page_obj.object_list},
                            request=request)
    return JsonResponse({"finished": not active, "html": html})


@login_required
def console_job(request, slug, job_id):
    contest, job = _organizer_object(request, slug, Job, job_id)
    finished = job.status in (Job.SUCCEEDED, Job.FAILED)
    ctx = {"job": job, "finished": finished, "auto_refresh": None if finished else 2}
    return page(request, "web/console_job.html", ctx, contest=contest, nav="console", sub="console")


@login_required
def console_job_status(request, slug, job_id):
    contest, job = _organizer_object(request, slug, Job, job_id)
    finished = job.status in (Job.SUCCEEDED, Job.FAILED)
    # ?details=1: the job page's live block also carries attempts, start and finish times and Retry
    html = render_to_string("web/_job_status.html", {"contest": contest, "job": job,
                                                     "details": request.GET.get("details") == "1"}, request=request)
    return JsonResponse({"finished": finished, "status": job.status, "progress": job.progress, "html": html})


@login_required
@require_POST
def retry_job(request, slug, job_id):
    _contest, job = _organizer_object(request, slug, Job, job_id)
    if job.status != Job.FAILED:
        messages.error(request, _("Only a failed job can be retried."))
        return redirect("web:console_job", slug, job.pk)
    new = jobs.retry(job, user=request.user)
    messages.success(request, _("Job %(old)s re-run as job %(new)s.") % {"old": job.pk, "new": new.pk})
    return redirect("web:console_job", slug, new.pk)


# ---------------------------------------------------------------- download everything
@login_required
def export_all(request, slug):
    """Every stored file of the contest (data, uploads, public sets, ID tables, judge outputs) in one zip,
    with ``MANIFEST.json`` (what each file is, SHA-256, size) and the latest results snapshot."""
    contest = _organizer_contest(request, slug)
    plan = bundles.export_plan(contest)
    if request.GET.get("status") != "1":
        audit.record("export_files", contest=contest, actor=request.user, obj=contest, files=len(plan.members),
                     inputs=plan.inputs)
    return bundle_download(request, plan, title=_("Export of everything"),
                           back_url=reverse("web:console_contest", args=[contest.slug]),
                           back_label=_("Organizer console"), nav="console", sub="console")
