"""THE one place deciding who may read or write what (SPEC section 1).

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

from dataclasses import dataclass

from django.db.models import Q

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
def _authenticated(user) -> bool:
    return user is not None and getattr(user, "is_authenticated", False) and user.is_active


def is_organizer(user, contest: Contest) -> bool:
    if not _authenticated(user):
        return False
    if user.is_superuser:
        return True
    return contest.organizers.filter(pk=user.pk).exists()


def team_of(user, contest: Contest) -> Team | None:
    """The user's (approved) team in ``contest``, or None."""
    if not _authenticated(user):
        return None
    m = (Membership.objects.select_related("team")
         .filter(user=user, team__contest=contest, team__approved=True).first())
    return m.team if m else None


def is_member(user, team: Team | None) -> bool:
    return (team is not None and _authenticated(user) and team.approved
            and Membership.objects.filter(user=user, team=team).exists())


def anonymization_closed(round_) -> bool:
    """True once the judge processed the close of the round's anonymization phase."""
    return Phase.objects.filter(round=round_, kind=Phase.ANONYMIZATION, closed_at__isnull=False).exists()


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
        return deny("only the contest's teams can download data")
    if dataset.kind == Dataset.SAMPLE:
        return ALLOW
    if dataset.team_id == team.pk:
        return ALLOW
    if which == "original":
        return deny("original traces are secret to their team and the organizers")
    if anonymization_closed(dataset.round):
        return ALLOW
    return deny("other teams' reference traces are published when the anonymization phase closes")


def can_read_public_set(user, public_set: PublicSet, which: str) -> Decision:
    """``which`` is ``"pubtraces"`` or ``"ptable"`` (the secret ID table)."""
    if which not in ("pubtraces", "ptable"):
        raise ValueError(f"unknown public-set file {which!r}")
    contest = public_set.dataset.round.contest
    if is_organizer(user, contest):
        return ALLOW
    if which == "ptable":
        return deny("ID tables are secret to the organizers")
    if team_of(user, contest) is None:
        return deny("only the contest's teams can download attack material")
    if anonymization_closed(public_set.dataset.round):
        return ALLOW
    return deny("pubtraces are published when the anonymization phase closes")


def can_see_commitment(user, public_set: PublicSet) -> Decision:
    """The commitment (SHA-256 of a secret nonce line and the ptable bytes) shown with a public set.

    Organizers always; participants with the pubtraces. The nonce keeps the
    commitment from being an offline oracle for the ID table, whatever m.
    """
    if is_organizer(user, public_set.dataset.round.contest):
        return ALLOW
    if can_read_public_set(user, public_set, "pubtraces"):
        return ALLOW
    return deny("the commitment is published with the pubtraces")


def can_see_commitment_nonce(user, public_set: PublicSet) -> Decision:
    """The commitment's nonce: organizers always; everyone once the contest's results are published."""
    contest = public_set.dataset.round.contest
    if is_organizer(user, contest) or contest.results_published_at is not None:
        return ALLOW
    return deny("the commitment's nonce is revealed with the results")


def can_read_anonymized_set(user, aset: AnonymizedSet) -> Decision:
    if is_organizer(user, aset.dataset.round.contest) or is_member(user, aset.team):
        return ALLOW
    return deny("an anonymized upload is visible to its team and the organizers only")


def can_read_preview(user, aset: AnonymizedSet) -> Decision:
    """The privacy preview of an upload (summary, per-user risk CSV, leak map): its team and the organizers."""
    if can_read_anonymized_set(user, aset):
        return ALLOW
    return deny("a privacy preview is visible to its team and the organizers only")


def can_read_attack(user, attack: Attack) -> Decision:
    if is_organizer(user, attack.attacker.contest) or is_member(user, attack.attacker):
        return ALLOW
    return deny("an attack upload is visible to its team and the organizers only")


def can_read_judge_attack(user, result: JudgeAttackResult) -> Decision:
    if is_organizer(user, result.public_set.dataset.round.contest):
        return ALLOW
    return deny("the judge's attack outputs are visible to the organizers only")


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
        return deny("the synthesizer's model is the organizers' alone")
    if which == "training":
        return deny("a round's training data is the organizers' alone")
    if team_of(user, contest) is not None:
        return ALLOW
    return deny("only the contest's teams can download data")


def can_read_file(user, stored_file) -> Decision:
    """Any stored file, by what refers to it (the most permissive reference wins)."""
    fid = stored_file.pk
    for r in Round.objects.filter(Q(info_region_id=fid) | Q(info_time_id=fid) | Q(model_file_id=fid)
                                  | Q(training_data_id=fid)).select_related("contest"):
        which = ("info_region" if r.info_region_id == fid else "info_time" if r.info_time_id == fid
                 else "model" if r.model_file_id == fid else "training")
        if can_read_round_file(user, r, which):
            return ALLOW
    for ds in Dataset.objects.filter(reference_id=fid).select_related("round__contest"):
        if can_read_dataset_file(user, ds, "reference"):
            return ALLOW
    for ds in Dataset.objects.filter(original_id=fid).select_related("round__contest"):
        if can_read_dataset_file(user, ds, "original"):
            return ALLOW
    for ps in PublicSet.objects.filter(pubtraces_id=fid):
        if can_read_public_set(user, ps, "pubtraces"):
            return ALLOW
    for ps in PublicSet.objects.filter(ptable_id=fid):
        if can_read_public_set(user, ps, "ptable"):
            return ALLOW
    for a in AnonymizedSet.objects.filter(file_id=fid):
        if can_read_anonymized_set(user, a):
            return ALLOW
    for p in PrivacyPreview.objects.filter(per_user_id=fid).select_related("anonymized_set__dataset__round__contest",
                                                                         "anonymized_set__team"):
        if can_read_preview(user, p.anonymized_set):
            return ALLOW
    for a in Attack.objects.filter(file_id=fid):
        if can_read_attack(user, a):
            return ALLOW
    for r in JudgeAttackResult.objects.filter(output_id=fid):
        if can_read_judge_attack(user, r):
            return ALLOW
    if getattr(user, "is_superuser", False) and user.is_active:
        return ALLOW
    return deny("you may not read this file")


# ----- scores and results ------------------------------------------------------------
def can_view_team_scores(user, team: Team) -> Decision:
    if is_organizer(user, team.contest) or is_member(user, team):
        return ALLOW
    return deny("a team's scores are visible to the team and the organizers until results are published")


def can_view_results(user, contest: Contest) -> Decision:
    if contest.results_published_at is not None or is_organizer(user, contest):
        return ALLOW
    return deny("results are embargoed until the organizers publish them")


# ----- writing -----------------------------------------------------------------------
def can_upload_anonymized(user, dataset: Dataset) -> Decision:
    if dataset.kind != Dataset.TEAM:
        return deny("anonymized sets are uploaded for a team's own datasets only")
    if is_member(user, dataset.team):
        return ALLOW
    return deny("only members of the dataset's team can upload its anonymized sets")


def can_upload_attack(user, attacker: Team, target: PublicSet) -> Decision:
    if not is_member(user, attacker):
        return deny("only members of the attacking team can upload its attacks")
    if target.dataset.round.contest_id != attacker.contest_id:
        return deny("the target belongs to another contest")
    if target.dataset.team_id == attacker.pk:
        return deny("a team cannot attack its own sets")
    return ALLOW


def can_create_contest(user) -> Decision:
    """Staff, superusers and anyone who already organizes a contest may create one."""
    if not _authenticated(user):
        return deny("log in first")
    if user.is_staff or user.is_superuser or Contest.objects.filter(organizers=user).exists():
        return ALLOW
    return deny("only staff and contest organizers may create contests")


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
    return deny("organizers only")


def can_view_job_internals(user, job) -> Decision:
    """A job's traceback and failure text (server paths, file names, ids) are for the organizers.

    A team member who may see the job at all (``selectors.visible_job``) sees
    its kind, status and progress, and a failure only as "failed".
    """
    if job.contest_id is not None:
        return can_manage_contest(user, job.contest)
    if _authenticated(user) and user.is_superuser:
        return ALLOW
    return deny("a job's failure details are visible to the organizers only")


def can_view_team_page(user, team: Team) -> Decision:
    """A team's page (members, invitation code): its members, approved or not yet, and the organizers."""
    if is_organizer(user, team.contest):
        return ALLOW
    if _authenticated(user) and Membership.objects.filter(user=user, team=team).exists():
        return ALLOW
    return deny("only the team's members and the contest's organizers see this team's page")


def can_edit_team(user, team: Team) -> Decision:
    """Rename the team or replace its invitation code: the same people who see its page."""
    return can_view_team_page(user, team)


def can_remove_member(user, team: Team) -> Decision:
    """Taking a member out of a team is the organizers' decision."""
    if is_organizer(user, team.contest):
        return ALLOW
    return deny("only the contest's organizers remove a member from a team")


def can_manage_contest(user, contest: Contest) -> Decision:
    if is_organizer(user, contest):
        return ALLOW
    return deny("organizers only")
