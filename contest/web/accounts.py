"""Accounts and teams as contest sites have them: password reset by e-mail and password change
(Django's own views, through the configured mail backend, in the page language, throttled like the
login), the account page (e-mail, language, API token and its revocation), deleting one's account and the
privacy notice, and a team's page (members, invitation code, renaming until the first upload; an organizer
removes a member). Every change is audited."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse, reverse_lazy
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from contest import permissions, selectors
from contest.lockout import throttled, throttled_response
from contest.mail_folder import mail_folder
from contest.models import Team
from contest.services import accounts, audit, teams

from .common import Refusal, frame_context, get_contest, page, require, set_language_cookie
from .forms import AccountForm, DeleteAccountForm, TeamNameForm


class FrameMixin:
    """Django's class-based auth views inside the site's page frame (header, language, script strings)."""

    nav = "account"

    def get_context_data(self, **kwargs):
        ctx = super().get_context_data(**kwargs)
        ctx.update(frame_context(self.request, nav=self.nav))
        return ctx


# ---------------------------------------------------------------- password reset (by e-mail)
class PasswordResetView(FrameMixin, auth_views.PasswordResetView):
    """Asks for the account's e-mail address and mails a one-time link (Django's token generator)."""

    nav = "login"
    template_name = "web/account/password_reset_form.html"
    email_template_name = "web/account/password_reset_email.txt"
    subject_template_name = "web/account/password_reset_subject.txt"
    success_url = reverse_lazy("web:password_reset_done")

    def post(self, request, *args, **kwargs):
        # Like the login: a few requests per address asked for and client, then a pause.
        if throttled(request, "password_reset", request.POST.get("email", "").strip()):
            return throttled_response(request)
        return super().post(request, *args, **kwargs)


class PasswordResetDoneView(FrameMixin, auth_views.PasswordResetDoneView):
    nav = "login"
    template_name = "web/account/password_reset_done.html"

    def get_context_data(self, **kwargs):
        # A site that writes its mail to a folder (the demo) says where the mail is: no mailbox receives it.
        return {**super().get_context_data(**kwargs), "mail_folder": mail_folder()}


class PasswordResetConfirmView(FrameMixin, auth_views.PasswordResetConfirmView):
    nav = "login"
    template_name = "web/account/password_reset_confirm.html"
    success_url = reverse_lazy("web:password_reset_complete")

    def form_valid(self, form):
        response = super().form_valid(form)
        audit.record("password_reset", actor=form.user, obj=form.user)
        return response


class PasswordResetCompleteView(FrameMixin, auth_views.PasswordResetCompleteView):
    nav = "login"
    template_name = "web/account/password_reset_complete.html"


# ---------------------------------------------------------------- password change
class PasswordChangeView(FrameMixin, LoginRequiredMixin, auth_views.PasswordChangeView):
    template_name = "web/account/password_change_form.html"
    success_url = reverse_lazy("web:account")

    def form_invalid(self, form):
        # A wrong old password is a guess at it: counted like a failed login.
        if "old_password" in form.errors and throttled(self.request, "password_change",
                                                       self.request.user.get_username()):
            return throttled_response(self.request)
        return super().form_invalid(form)

    def form_valid(self, form):
        response = super().form_valid(form)
        audit.record("password_change", actor=self.request.user, obj=self.request.user)
        messages.success(self.request, _("Your password was changed."))
        return response


# ---------------------------------------------------------------- account page
@login_required
def account(request):
    """E-mail and language of the signed-in user, and the API token."""
    user = request.user
    form = AccountForm(request.POST or None, initial={"email": user.email, "language": get_language()[:2]})
    if request.method == "POST" and form.is_valid():
        email = form.cleaned_data["email"].strip()
        accounts.change_email(user, email)
        messages.success(request, _("Your account was saved."))
        response = redirect("web:account")
        set_language_cookie(response, form.cleaned_data["language"])
        return response
    # No token is made here: after a revocation the page says there is none until its owner asks for one.
    token = selectors.api_token(user)
    ctx = {"form": form, "token": token, "api_root": request.build_absolute_uri("/api/")}
    return page(request, "web/account.html", ctx, nav="account")


@login_required
@require_POST
def revoke_token(request):
    """The API token stops working and none replaces it (a leaked token, a script retired)."""
    if accounts.revoke_token(request.user):
        messages.success(request, _("Your API token was revoked: scripts using it are refused."))
    return redirect(reverse("web:account") + "#token")


# ---------------------------------------------------------------- deleting one's account
@login_required
def delete_account(request):
    """What deleting the account keeps and erases, and the deletion itself, confirmed with the password
    (a wrong one is counted like a failed login)."""
    user = request.user
    form = DeleteAccountForm(request.POST or None)
    decision = permissions.can_delete_account(user)
    if request.method == "POST" and decision and form.is_valid():
        if not user.check_password(form.cleaned_data["password"]):
            if throttled(request, "delete_account", user.get_username()):
                return throttled_response(request)
            form.add_error("password", _("This is not your password."))
        else:
            with Refusal(request) as refused:
                accounts.delete_account(user)
            if refused.error:
                return redirect("web:delete_account")
            logout(request)
            messages.success(request, _("Your account was deleted."))
            return redirect("web:home")
    memberships = selectors.memberships_of(user)
    teams_left = selectors.teams_left_alone(user, memberships)
    ctx = {"form": form, "refusal": "" if decision else _(decision.reason), "memberships": memberships,
           "teams_left": teams_left, "alone": permissions.contests_left_without_organizer(user)}
    return page(request, "web/account_delete.html", ctx, nav="account")


def privacy(request):
    """The privacy notice: the operator's own text (``TRACECUP_PRIVACY_NOTICE_FILE``), else the default."""
    return page(request, "web/privacy.html", {"notice": privacy_notice()}, nav="privacy")


def privacy_notice() -> str:
    """The operator's privacy notice, read at each request (an edit shows without a restart); "" when no
    file is set, and the page shows its default text."""
    path = settings.TRACECUP_PRIVACY_NOTICE_FILE
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


# ---------------------------------------------------------------- a team's page
def _team(request, slug, team_id) -> Team:
    contest = get_contest(slug)
    team = get_object_or_404(selectors.teams(), pk=team_id, contest=contest)
    require(permissions.can_view_team_page(request.user, team))
    return team


def _back(team):
    return redirect(reverse("web:team_members", args=[team.contest.slug, team.pk]))


@login_required
def team_members(request, slug, team_id):
    """Members, invitation code and name of a team, for its members and the organizers."""
    team = _team(request, slug, team_id)
    members = selectors.team_members(team)
    ctx = {"team": team, "members": members, "uploaded": teams.has_uploaded(team),
           "name_form": TeamNameForm(initial={"name": team.name}),
           "can_remove": bool(permissions.can_remove_member(request.user, team))}
    return page(request, "web/team_members.html", ctx, contest=team.contest, nav="team")


@login_required
@require_POST
def rename_team(request, slug, team_id):
    team = _team(request, slug, team_id)
    require(permissions.can_edit_team(request.user, team))
    form = TeamNameForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e[0]) for e in form.errors.values()))
        return _back(team)
    name = form.cleaned_data["name"].strip()
    if selectors.team_name_taken(team, name):
        messages.error(request, _("A team named %(name)s exists already.") % {"name": name})
        return _back(team)
    with Refusal(request, _("The team was not renamed: %(reason)s.")) as refused:
        team = teams.rename_team(team, name, actor=request.user)
    if not refused.error:
        messages.success(request, _("The team is now called %(name)s.") % {"name": team.name})
    return _back(team)


@login_required
@require_POST
def new_invitation_code(request, slug, team_id):
    team = _team(request, slug, team_id)
    require(permissions.can_edit_team(request.user, team))
    teams.new_invitation_code(team, actor=request.user)
    messages.success(request, _("The team has a new invitation code; the old one no longer works."))
    return _back(team)


@login_required
@require_POST
def remove_member(request, slug, team_id, user_id):
    team = _team(request, slug, team_id)
    require(permissions.can_remove_member(request.user, team))
    member = get_object_or_404(get_user_model(), pk=user_id)
    with Refusal(request) as refused:
        teams.remove_member(team, member, actor=request.user)
    if not refused.error:
        messages.success(request, _("%(user)s is no longer a member of team %(team)s.")
                         % {"user": member.get_username(), "team": team.name})
    return _back(team)
