"""THE one place deciding who may read or write what (rules §1).

Views, the API and the admin-facing services all ask these functions; nothing
else encodes a visibility rule. Roles:

- organizer: a superuser, or a user listed in ``Contest.organizers`` -- sees
  and does everything in that contest;
- team member: a user with a :class:`~contest.models.Membership` in a team of
  the contest;
- public: anyone, including anonymous users.

Organizing one contest gives no rights in another: an organizer of contest X
reads contest Y's secrets only if also listed in Y's organizers (or a
superuser). A deactivated account, or a member of a team that is not (or no
longer) approved, reads nothing a team member could.

Reading files (team member):

- its own team's reference and original traces, always;
- the sample sets' reference and original traces (published to everybody in
  the anonymization phase);
- once the round's anonymization phase is closed (the judge froze and
  pseudonymized the sets): every public set's pubtraces and every team and
  benchmark dataset's *reference* traces;
- its own team's uploads (anonymized sets, attacks);
- never another team's (or the benchmark's) original traces, any ID table
  (ptable), another team's uploads, the judge's attack outputs, a round's model or
  the organizer's training data.

Also organizer-only: a failed job's traceback and failure text (a team sees
"failed"), and, for contests of fewer than 35 users per set, the public
sets' commitments (an unsalted hash of the ID table; see
:func:`can_see_commitment`).

Scores: a team sees its own uploads' scores (s_U of its anonymized sets, the
score of its attacks); results (minimums, matrix, awards) only when
published, organizers always.

Writing (checked here: *who*; the rules of *when* and *how many* are in
``contest.services.uploads``): a member of the dataset's team uploads and
selects anonymized sets; a member of a team uploads attacks against public
sets of other teams and the benchmark.
"""
from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, F, Q, Value
from django.utils.translation import gettext_noop

from contest.models import (
    AnonymizedSet,
    Attack,
    Contest,
    Dataset,
    JudgeAttackResult,
    Membership,
    Phase,
    PrivacyPreview,
    PublicSet,
    Round,
    Team,
)


@dataclass(frozen=True)
class Decision:
    """Allowed or not, and why not (shown to the user)."""

    allowed: bool
    reason: str = ""

    def __bool__(self):
        return self.allowed


ALLOW = Decision(True)


def deny(reason: str) -> Decision:
    return Decision(False, reason)


# ----- roles ------------------------------------------------------------------
# Within one decision that weighs several objects (:func:`can_read_file`: every object referring to a
# file), each role is looked up once: the answers are remembered for that call only, never across
# calls, so a change of membership or phase is seen by the next decision.
_remembered: ContextVar[dict | None] = ContextVar("permissions_remembered", default=None)


@contextmanager
def _one_decision():
    token = _remembered.set({})
    try:
        yield
    finally:
        _remembered.reset(token)


def _recall(key: tuple, look_up: Callable):
    memo = _remembered.get()
    if memo is None:
        return look_up()
    if key not in memo:
        memo[key] = look_up()
    return memo[key]


def _authenticated(user) -> bool:
    return user is not None and getattr(user, "is_authenticated", False) and user.is_active


def is_organizer(user, contest: Contest) -> bool:
    if not _authenticated(user):
        return False
    if user.is_superuser:
        return True
    return _recall(("organizer", user.pk, contest.pk), lambda: contest.organizers.filter(pk=user.pk).exists())


def is_any_organizer(user) -> bool:
    """A superuser, or an organizer of some contest (the console link, creating contests)."""
    if not _authenticated(user):
        return False
    return user.is_superuser or Contest.objects.filter(organizers=user).exists()


def team_of(user, contest: Contest) -> Team | None:
    """The user's (approved) team in ``contest``, or None."""
    if not _authenticated(user):
        return None

    def look_up():
        m = (Membership.objects.select_related("team")
             .filter(user=user, team__contest=contest, team__approved=True).first())
        return m.team if m else None
    return _recall(("team", user.pk, contest.pk), look_up)


def is_member(user, team: Team | None) -> bool:
    return (team is not None and _authenticated(user) and team.approved
            and _recall(("member", user.pk, team.pk),
                        lambda: Membership.objects.filter(user=user, team=team).exists()))


def anonymization_closed(round_) -> bool:
    """True once the judge processed the close of the round's anonymization phase."""
    return _recall(("closed", round_.pk), lambda: Phase.objects.filter(
        round=round_, kind=Phase.ANONYMIZATION, closed_at__isnull=False).exists())


# ----- reading files ---------------------------------------------------------------
def can_read_dataset_file(user, dataset: Dataset, which: str) -> Decision:
    """``which`` is ``"reference"`` or ``"original"``."""
    if which not in ("reference", "original"):
        raise ValueError(f"unknown dataset file {which!r}")
    contest = dataset.round.contest
    if is_organizer(user, contest):
        return ALLOW
    team = team_of(user, contest)
    if team is None:
        return deny(gettext_noop("only the contest's teams can download data"))
    if dataset.kind == Dataset.SAMPLE:
        return ALLOW
    if dataset.team_id == team.pk:
        return ALLOW
    if which == "original":
        return deny(gettext_noop("original traces are secret to their team and the organizers"))
    if anonymization_closed(dataset.round):
        return ALLOW
    return deny(gettext_noop("other teams' reference traces are published when the anonymization phase closes"))


def can_read_public_set(user, public_set: PublicSet, which: str) -> Decision:
    """``which`` is ``"pubtraces"`` or ``"ptable"`` (the secret ID table)."""
    if which not in ("pubtraces", "ptable"):
        raise ValueError(f"unknown public-set file {which!r}")
    contest = public_set.dataset.round.contest
    if is_organizer(user, contest):
        return ALLOW
    if which == "ptable":
        return deny(gettext_noop("ID tables are secret to the organizers"))
    if team_of(user, contest) is None:
        return deny(gettext_noop("only the contest's teams can download attack material"))
    if anonymization_closed(public_set.dataset.round):
        return ALLOW
    return deny(gettext_noop("pubtraces are published when the anonymization phase closes"))


def can_see_commitment(user, public_set: PublicSet) -> Decision:
    """The commitment (SHA-256 of a secret nonce line and the ptable bytes) shown with a public set.

    Organizers always; participants with the pubtraces. The nonce keeps the
    commitment from being an offline oracle for the ID table, whatever m.
    """
    if is_organizer(user, public_set.dataset.round.contest):
        return ALLOW
    if can_read_public_set(user, public_set, "pubtraces"):
        return ALLOW
    return deny(gettext_noop("the commitment is published with the pubtraces"))


def can_see_commitment_nonce(user, public_set: PublicSet) -> Decision:
    """The commitment's nonce: organizers always; everyone once the contest's results are published."""
    contest = public_set.dataset.round.contest
    if is_organizer(user, contest) or contest.results_published_at is not None:
        return ALLOW
    return deny(gettext_noop("the commitment's nonce is revealed with the results"))


def _team_upload(user, contest: Contest, team: Team, reason: str) -> Decision:
    """A team's upload (anonymized set or attack) is visible to that team and the contest's organizers only."""
    if is_organizer(user, contest) or is_member(user, team):
        return ALLOW
    return deny(reason)


def _team_uploads(user, contest: Contest, queryset, team_field: str):
    """:func:`_team_upload` as a filter of ``queryset`` (uploads of ``contest`` whose team is ``team_field``)."""
    if is_organizer(user, contest):
        return queryset
    team = team_of(user, contest)
    return queryset.filter(**{team_field: team}) if team else queryset.none()


def can_read_anonymized_set(user, aset: AnonymizedSet) -> Decision:
    return _team_upload(user, aset.dataset.round.contest, aset.team,
                       gettext_noop("an anonymized upload is visible to its team and the organizers only"))


def readable_anonymized_sets(user, contest: Contest, queryset):
    """:func:`can_read_anonymized_set` as a filter of ``queryset`` (anonymized sets of ``contest``)."""
    return _team_uploads(user, contest, queryset, "team")


def can_read_preview(user, aset: AnonymizedSet) -> Decision:
    """The privacy preview of an upload (summary, per-user risk CSV, leak map): its team and the organizers."""
    if can_read_anonymized_set(user, aset):
        return ALLOW
    return deny(gettext_noop("a privacy preview is visible to its team and the organizers only"))


def can_read_attack(user, attack: Attack) -> Decision:
    return _team_upload(user, attack.attacker.contest, attack.attacker,
                       gettext_noop("an attack upload is visible to its team and the organizers only"))


def readable_attacks(user, contest: Contest, queryset):
    """:func:`can_read_attack` as a filter of ``queryset`` (attack uploads of ``contest``)."""
    return _team_uploads(user, contest, queryset, "attacker")


def can_read_judge_attack(user, result: JudgeAttackResult) -> Decision:
    if is_organizer(user, result.public_set.dataset.round.contest):
        return ALLOW
    return deny(gettext_noop("the judge's attack outputs are visible to the organizers only"))


def can_read_attack_material(user, round_: Round, public_sets) -> Decision:
    """A round's attack material (every public set's pubtraces with its data set's reference traces,
    one zip): the organizers, and the contest's teams when they may read every file in it."""
    contest = round_.contest
    if is_organizer(user, contest):
        return ALLOW
    if team_of(user, contest) is None:
        return deny(gettext_noop("You are not a member of an approved team of this contest."))
    for ps in public_sets:
        for decision in (can_read_public_set(user, ps, "pubtraces"),
                         can_read_dataset_file(user, ps.dataset, "reference")):
            if not decision:
                return decision
    return ALLOW


def can_view_data_map(user, dataset: Dataset) -> Decision:
    """The population map of a team's original traces and its uploads: that team and the organizers
    (not the sample sets, which every team may read: the map is of one's own data)."""
    decision = can_read_dataset_file(user, dataset, "original")
    if not decision:
        return decision
    if dataset.kind == Dataset.TEAM and (is_organizer(user, dataset.round.contest)
                                         or is_member(user, dataset.team)):
        return ALLOW
    return deny(gettext_noop("The map shows a team's own data only."))


def can_read_round_file(user, round_: Round, which: str) -> Decision:
    """A round's ``info_region`` / ``info_time`` (the grid and the clock): its contest's teams and organizers.

    The synthesizer's fitted model (``model``) and the organizer's own training data (``training``: traces or
    a model trained offline, contest.services.training_data) are the organizers' alone.
    """
    if which not in ("info_region", "info_time", "model", "training"):
        raise ValueError(f"unknown round file {which!r}")
    contest = round_.contest
    if is_organizer(user, contest):
        return ALLOW
    if which == "model":
        return deny(gettext_noop("the synthesizer's model is the organizers' alone"))
    if which == "training":
        return deny(gettext_noop("a round's training data is the organizers' alone"))
    if team_of(user, contest) is not None:
        return ALLOW
    return deny(gettext_noop("only the contest's teams can download data"))


# What may refer to a stored file: (name: "<kind>-<which file>", model, its foreign key to the file).
_FILE_REFERENCES = (
    ("round-info_region", Round, "info_region_id"),
    ("round-info_time", Round, "info_time_id"),
    ("round-model", Round, "model_file_id"),
    ("round-training", Round, "training_data_id"),
    ("dataset-reference", Dataset, "reference_id"),
    ("dataset-original", Dataset, "original_id"),
    ("publicset-pubtraces", PublicSet, "pubtraces_id"),
    ("publicset-ptable", PublicSet, "ptable_id"),
    ("anonymizedset", AnonymizedSet, "file_id"),
    ("preview", PrivacyPreview, "per_user_id"),
    ("attack", Attack, "file_id"),
    ("judgeattack", JudgeAttackResult, "output_id"),
)
# the related rows each rule reads, fetched with the referring object
_RELATED = {Round: ("contest",), Dataset: ("round__contest", "team"), PublicSet: ("dataset__round__contest",),
            AnonymizedSet: ("dataset__round__contest", "team"),
            PrivacyPreview: ("anonymized_set__dataset__round__contest", "anonymized_set__team"),
            Attack: ("attacker__contest",), JudgeAttackResult: ("public_set__dataset__round__contest",)}


def _file_decision(user, name: str, obj) -> Decision:
    kind, _, which = name.partition("-")
    if kind == "round":
        return can_read_round_file(user, obj, which)
    if kind == "dataset":
        return can_read_dataset_file(user, obj, which)
    if kind == "publicset":
        return can_read_public_set(user, obj, which)
    if kind == "anonymizedset":
        return can_read_anonymized_set(user, obj)
    if kind == "preview":
        return can_read_preview(user, obj.anonymized_set)
    if kind == "attack":
        return can_read_attack(user, obj)
    return can_read_judge_attack(user, obj)


def can_read_file(user, stored_file) -> Decision:
    """Any stored file, by what refers to it (the most permissive reference wins).

    A bounded number of queries, whatever the file: one finds every reference (a UNION over the
    referring tables), one per kind of referring object fetches them with what their rules read,
    and each role (organizer, team, membership, phase closed) is looked up once for the call.
    """
    if _authenticated(user) and user.is_superuser:
        return ALLOW
    fid = stored_file.pk
    found = [model.objects.filter(**{field: fid}).annotate(ref=Value(name), ref_pk=F("pk"))
             .order_by().values_list("ref", "ref_pk") for name, model, field in _FILE_REFERENCES]
    refs = list(found[0].union(*found[1:], all=True))
    models = {name: model for name, model, _ in _FILE_REFERENCES}
    with _one_decision():
        for model in dict.fromkeys(models[name] for name, _ in refs):
            objs = model.objects.select_related(*_RELATED[model]).in_bulk(
                [pk for name, pk in refs if models[name] is model])
            for name, pk in refs:
                if models[name] is model and _file_decision(user, name, objs[pk]):
                    return ALLOW
    return deny(gettext_noop("you may not read this file"))


# ----- scores and results ------------------------------------------------------------
def can_view_team_scores(user, team: Team) -> Decision:
    if is_organizer(user, team.contest) or is_member(user, team):
        return ALLOW
    return deny(gettext_noop("a team's scores are visible to the team and the organizers until results are published"))


def can_view_results(user, contest: Contest) -> Decision:
    if contest.results_published_at is not None or is_organizer(user, contest):
        return ALLOW
    return deny(gettext_noop("results are embargoed until the organizers publish them"))


# ----- writing -----------------------------------------------------------------------
def can_upload_anonymized(user, dataset: Dataset) -> Decision:
    if dataset.kind != Dataset.TEAM:
        return deny(gettext_noop("anonymized sets are uploaded for a team's own datasets only"))
    if is_member(user, dataset.team):
        return ALLOW
    return deny(gettext_noop("only members of the dataset's team can upload its anonymized sets"))


def can_upload_attack(user, attacker: Team, target: PublicSet) -> Decision:
    if not is_member(user, attacker):
        return deny(gettext_noop("only members of the attacking team can upload its attacks"))
    if target.dataset.round.contest_id != attacker.contest_id:
        return deny(gettext_noop("the target belongs to another contest"))
    if target.dataset.team_id == attacker.pk:
        return deny(gettext_noop("a team cannot attack its own sets"))
    return ALLOW


def can_create_contest(user) -> Decision:
    """Staff, superusers and anyone who already organizes a contest may create one."""
    if not _authenticated(user):
        return deny(gettext_noop("log in first"))
    if user.is_staff or is_any_organizer(user):
        return ALLOW
    return deny(gettext_noop("only staff and contest organizers may create contests"))


def can_set_password_in_setup(actor, account) -> Decision:
    """May a contest set-up (YAML, console) run by ``actor`` set ``account``'s password?

    New accounts: yes. An existing account: only from the command line (no
    actor: the server's operator), by a superuser, or the actor's own;
    otherwise an organizer could reset a superuser's or another contest's
    organizer's password and log in as them.
    """
    if account.pk is None or actor is None:
        return ALLOW
    if _authenticated(actor) and (actor.is_superuser or actor.pk == account.pk):
        return ALLOW
    return deny(f"the account {account.username!r} already exists; only its owner or a superuser can "
                "change its password")


def can_retry_job(user, job) -> Decision:
    """The contest's organizers re-run its failed jobs; a job of no contest is for superusers."""
    if job.contest_id is not None:
        return can_manage_contest(user, job.contest)
    if _authenticated(user) and user.is_superuser:
        return ALLOW
    return deny(gettext_noop("organizers only"))


def can_see_job(user, job) -> Decision:
    """A job's kind, status and progress: whoever started it, the contest's organizers (a job of no
    contest: superusers), and the members of the team of the member who started it."""
    if not _authenticated(user):
        return deny(gettext_noop("log in first"))
    if job.created_by_id == user.pk:
        return ALLOW
    if job.contest_id is None:
        return ALLOW if user.is_superuser else deny(gettext_noop("this job belongs to the site's operators"))
    if is_organizer(user, job.contest):
        return ALLOW
    team = team_of(user, job.contest)
    if team and job.created_by_id and team.memberships.filter(user_id=job.created_by_id).exists():
        return ALLOW
    return deny(gettext_noop("this job belongs to another team"))


def can_view_job_internals(user, job) -> Decision:
    """A job's traceback and failure text (server paths, file names, ids) are for the organizers.

    A team member who may see the job at all (:func:`can_see_job`) sees
    its kind, status and progress, and a failure only as "failed".
    """
    if job.contest_id is not None:
        return can_manage_contest(user, job.contest)
    if _authenticated(user) and user.is_superuser:
        return ALLOW
    return deny(gettext_noop("a job's failure details are visible to the organizers only"))


def can_view_system(user) -> Decision:
    """The System page (workers, queue depths, job times): superusers and the organizers of any contest. An
    organizer sees the workers and queues every contest shares (whether its jobs will run), and of the
    jobs only those of the contests it organizes (:func:`system_jobs`)."""
    if not _authenticated(user):
        return deny(gettext_noop("log in first"))
    if is_any_organizer(user):
        return ALLOW
    return deny(gettext_noop("the system page is for organizers"))


def can_view_site_totals(user) -> Decision:
    """The database's and the stored files' sizes, and jobs of no contest: the site's, for superusers."""
    if _authenticated(user) and user.is_superuser:
        return ALLOW
    return deny(gettext_noop("the site's totals are for its operators"))


def system_jobs(user, queryset):
    """The jobs of ``queryset`` whose kind, times and failures ``user`` sees on the System page: every job
    for a superuser, the jobs of the contests it organizes for an organizer, none for anyone else."""
    if not _authenticated(user):
        return queryset.none()
    if user.is_superuser:
        return queryset
    return queryset.filter(contest__organizers=user)


def can_view_team_page(user, team: Team) -> Decision:
    """A team's page (members, invitation code): its members, approved or not yet, and the organizers."""
    if is_organizer(user, team.contest):
        return ALLOW
    if _authenticated(user) and Membership.objects.filter(user=user, team=team).exists():
        return ALLOW
    return deny(gettext_noop("only the team's members and the contest's organizers see this team's page"))


def can_edit_team(user, team: Team) -> Decision:
    """Rename the team or replace its invitation code: the same people who see its page."""
    return can_view_team_page(user, team)


def can_remove_member(user, team: Team) -> Decision:
    """Taking a member out of a team is the organizers' decision."""
    if is_organizer(user, team.contest):
        return ALLOW
    return deny(gettext_noop("only the contest's organizers remove a member from a team"))


def can_view_contest(user, contest: Contest) -> Decision:
    """A contest open to the public is seen by everyone; a draft by its organizers only (to everyone else it
    does not exist: 404, and no list names it)."""
    if not contest.draft or is_organizer(user, contest):
        return ALLOW
    return deny(gettext_noop("this contest is a draft: only its organizers see it until they open it"))


def can_manage_contest(user, contest: Contest) -> Decision:
    if is_organizer(user, contest):
        return ALLOW
    return deny(gettext_noop("organizers only"))


# ----- answers a cache may keep --------------------------------------------------------
def answer_is_public(user, method: str) -> bool:
    """Whether an answer to ``method`` for ``user`` may be kept by a browser's or a shared cache; every other
    answer is sent with ``Cache-Control: no-store`` (``contest.no_store``).

    Public (module docstring) is what anyone reads, anonymous visitors included. Every secret decided
    here (original traces, ID tables, a team's uploads and scores before publication, the judge's outputs,
    a team's invitation code, the account's API token) is shown only to a signed-in user, by session or
    API token, or in the answer to a write (the token endpoint answers a POST with the token). So an answer
    is public exactly when it is a read by someone not signed in; the others are treated as carrying a
    secret, which also covers a page added later that nobody thought to list.
    """
    return method in ("GET", "HEAD") and not getattr(user, "is_authenticated", False)


# ----- accounts -------------------------------------------------------------------------
def contests_left_without_organizer(user):
    """The contests that are not over (a phase the judge has not closed, or no published results) and
    that ``user`` alone organizes: deleting the account would leave each to the superusers alone."""
    unfinished = (Q(rounds__phases__closed_at__isnull=True) | ~Q(snapshots__published=True))
    alone = Contest.objects.annotate(n_organizers=Count("organizers", distinct=True)).filter(n_organizers=1)
    return (Contest.objects.filter(organizers=user, pk__in=alone.values("pk"))
            .filter(pk__in=Contest.objects.filter(unfinished).values("pk")).order_by("name"))


def can_delete_account(user) -> Decision:
    """An account's owner deletes it (``contest.services.accounts.delete_account``), unless someone else
    would be left without what only this account does: the last active superuser, who alone administers
    the site, or the only organizer of a contest that is not over, whose teams wait on it. A team's last
    member may leave: the team and its results stay under the team's name."""
    if not _authenticated(user):
        return deny(gettext_noop("log in first"))
    if user.is_superuser and not (get_user_model().objects.filter(is_superuser=True, is_active=True)
                                  .exclude(pk=user.pk).exists()):
        return deny(gettext_noop("the site's last superuser cannot delete the account: make another superuser first"))
    if contests_left_without_organizer(user).exists():
        return deny(gettext_noop("you are the only organizer of a contest that is not over: "
                                 "add another organizer to it first"))
    return ALLOW


def needs_second_factor(user) -> bool:
    """Whether ``user`` must give a code of a second factor (``contest.second_factor``) before the organizer
    console, the System page and the admin: per ``TRACECUP_REQUIRE_2FA_FOR``, ``"superusers"`` (superusers
    and staff, who reach the admin) or ``"organizers"`` (those and every contest's organizers); empty: nobody."""
    required = settings.TRACECUP_REQUIRE_2FA_FOR
    if not required or not _authenticated(user):
        return False
    if user.is_superuser or user.is_staff:
        return True
    return required == "organizers" and is_any_organizer(user)


def can_obtain_token_with_password(user, has_second_factor: bool) -> Decision:
    """``/api/auth/token/`` hands out a token for a password alone, which would pass by a second factor:
    an account with one, or that must have one, makes its token on the account page instead."""
    if has_second_factor or needs_second_factor(user):
        return deny(gettext_noop("this account signs in with a second factor: make its API token on the "
                                 "account page"))
    return ALLOW
