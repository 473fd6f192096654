"""REST API views: thin; who-may-what comes from ``contest.permissions``, work from ``contest.services``."""
from __future__ import annotations

from django.db import DatabaseError, connection, transaction
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import NotAuthenticated, NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.permissions import AllowAny, BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from contest import permissions, request_start, second_factor, selectors
from contest.api import serializers as S
from contest.api import throttles
from contest.models import Contest, Job, Phase, PrivacyPreview, StoredFile
from contest.services import accounts, results_snapshot, schedule, storage, training_data, uploads
from contest.services import announcements as announcements_service
from contest.services import results as results_service
from contest.services import setup as setup_service
from contest.services import teams as teams_service
from contest.services.generation import request_generation, synthesizer_summary
from contest.services.jobs import retry as retry_job
from contest.services.judge import close_phase_now


def _require(decision, user):
    if not decision:
        if not getattr(user, "is_authenticated", False):
            raise NotAuthenticated(decision.reason)
        raise PermissionDenied(decision.reason)


def stream_file(stored: StoredFile) -> StreamingHttpResponse:
    """The exact stored bytes, streamed, with their SHA-256 for the client to check."""
    response = StreamingHttpResponse(storage.iter_bytes(stored), content_type=stored.content_type or "text/csv")
    response["Content-Length"] = str(stored.size)
    response["Content-Disposition"] = f'attachment; filename="{stored.name}"'
    response["ETag"] = f'"{stored.sha256}"'
    response["X-Content-SHA256"] = stored.sha256
    return response


def job_data(job: Job, user) -> dict:
    """A job as JSON; its traceback and failure text only for those ``permissions`` allows."""
    data = S.JobSerializer(job).data
    if not permissions.can_view_job_internals(user, job):
        data["error"] = ""
        if job.status == Job.FAILED:
            data["message"] = "failed (the organizers can see the details)"
        elif job.retrying:
            data["message"] = "retrying"
    return data


def public_sets_data(public_sets, user) -> list[dict]:
    """Public sets as JSON, each commitment only where ``permissions.can_see_commitment`` allows."""
    ctx = {"commitment_visible": {ps.pk: bool(permissions.can_see_commitment(user, ps)) for ps in public_sets},
           "nonce_visible": {ps.pk: bool(permissions.can_see_commitment_nonce(user, ps)) for ps in public_sets}}
    return S.PublicSetSerializer(public_sets, many=True, context=ctx).data


def _valid(serializer_class, request) -> dict:
    """The request's data checked by ``serializer_class``; a 400 JSON error naming each field otherwise."""
    form = serializer_class(data=request.data)
    form.is_valid(raise_exception=True)
    return form.validated_data


def _upload(request, serializer_class=S.UploadSerializer) -> tuple:
    """(the file object, file name, validated fields) of a multipart upload; the file is never read whole here."""
    data = _valid(serializer_class, request)
    f = data["file"]
    f.seek(0)  # the serializer's checks may have read it
    return f.file, f.name or "upload.csv", data


class IsContestOrganizer(BasePermission):
    """The one organizer check of the API: ``contest.permissions.can_manage_contest`` on the contest the
    view acts on (views call ``self.check_object_permissions(request, contest)``)."""

    message = "only the contest's organizers can do this"

    def has_object_permission(self, request, view, obj) -> bool:
        decision = permissions.can_manage_contest(request.user, obj)
        if not decision:
            self.message = decision.reason or self.message
        return bool(decision)


# ----- contests, rounds, teams ----------------------------------------------------------
class ContestList(APIView):
    permission_classes = [AllowAny]  # anyone lists contests; POST asks ``permissions.can_create_contest``
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(description="The contests open to the public; an organizer also sees the drafts they organize.",
                   responses=S.ContestSerializer(many=True))
    def get(self, request):
        visible = [c for c in selectors.contests() if permissions.can_view_contest(request.user, c)]
        return Response(S.ContestSerializer(visible, many=True).data)

    @extend_schema(request=S.ContestCreateSerializer, responses={201: S.ContestSerializer})
    def post(self, request):
        """Staff and organizers: create a contest from the YAML setup format (field ``yaml``)."""
        _require(permissions.can_create_contest(request.user), request.user)
        text = _valid(S.ContestCreateSerializer, request)["text"]
        contest = setup_service.create_contest_from_yaml(text, actor=request.user)
        return Response(S.ContestSerializer(contest).data, status=status.HTTP_201_CREATED)


class ContestDetail(APIView):
    permission_classes = [AllowAny]  # a contest's description is public
    @extend_schema(description="One contest: its description, rounds and phases with their times.",
                   responses=S.ContestSerializer)
    def get(self, request, slug):
        contest = get_object_or_404(selectors.contests(), slug=slug)
        if not permissions.can_view_contest(request.user, contest):
            raise NotFound("no such contest")  # a draft does not exist for those who may not see it
        return Response(S.ContestSerializer(contest).data)


class MyTeam(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(description="Who you are in this contest: your user name, whether you organize it, your team "
                               "and the public sets your team may attack.",
                   responses={200: OpenApiResponse(description="my role and team in the contest")})
    def get(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        team = permissions.team_of(request.user, contest)
        return Response({
            "username": request.user.username,
            "organizer": permissions.is_organizer(request.user, contest),
            "team": S.TeamSerializer(team).data if team else None,
            "attack_targets": public_sets_data(selectors.attack_targets(team), request.user) if team else [],
        })


class DatasetList(APIView):
    permission_classes = [AllowAny]  # ``selectors.visible_datasets`` asks ``permissions`` per dataset
    @extend_schema(description="The contest's data sets you may read: the sample, your team's own and, once the "
                               "anonymization phase closes, the other teams' (reference traces only); an organizer "
                               "sees every one.",
                   responses=S.DatasetSerializer(many=True))
    def get(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        visible = selectors.visible_datasets(request.user, contest)
        ctx = {"original_allowed": {ds.pk: ok for ds, ok in visible}}
        return Response(S.DatasetSerializer([ds for ds, _ in visible], many=True, context=ctx).data)


class DatasetFile(APIView):
    permission_classes = [AllowAny]  # ``permissions.can_read_dataset_file`` decides
    @extend_schema(description="Download a data set's reference traces or original traces (your team's own; the "
                               "original traces of other teams are secret) as CSV, with its SHA-256 in the ETag and "
                               "X-Content-SHA256 headers.",
                   responses={(200, "text/csv"): OpenApiResponse(description="the exact file bytes")})
    def get(self, request, pk, which):
        ds = get_object_or_404(selectors.datasets(), pk=pk)
        _require(permissions.can_read_dataset_file(request.user, ds, which), request.user)
        return stream_file(ds.reference if which == "reference" else ds.original)


class RoundFile(APIView):
    permission_classes = [AllowAny]  # ``permissions.can_read_round_file`` decides
    @extend_schema(description="Download the round's region table (info_region.csv) or time-slot table "
                               "(info_time.csv); 400 while the round's data is not generated yet.",
                   responses={(200, "text/csv"): OpenApiResponse(description="info_region.csv / info_time.csv")})
    def get(self, request, pk, which):
        rnd = get_object_or_404(selectors.rounds(), pk=pk)
        _require(permissions.can_read_round_file(request.user, rnd, which), request.user)
        stored = rnd.info_region if which == "info_region" else rnd.info_time
        if stored is None:
            raise ValidationError({which: [_("the round's data is not generated yet")]})
        return stream_file(stored)


class PublicSetList(APIView):
    permission_classes = [AllowAny]  # ``selectors.visible_public_sets`` asks ``permissions`` per set
    @extend_schema(description="The contest's public sets (pseudonymized anonymized traces to attack) you may "
                               "see, each with its commitment once it may be shown.",
                   responses=S.PublicSetSerializer(many=True))
    def get(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        return Response(public_sets_data(selectors.visible_public_sets(request.user, contest), request.user))


class PublicSetFile(APIView):
    permission_classes = [AllowAny]  # ``permissions.can_read_public_set`` decides
    @extend_schema(description="Download a public set's pseudonymized traces (pubtraces, for the contest's teams once "
                               "the anonymization phase closes) or its secret ID table (ptable, organizers only) as CSV.",
                   responses={(200, "text/csv"): OpenApiResponse(description="pubtraces / ptable")})
    def get(self, request, pk, which):
        ps = get_object_or_404(selectors.public_sets(), pk=pk)
        _require(permissions.can_read_public_set(request.user, ps, which), request.user)
        return stream_file(ps.pubtraces if which == "pubtraces" else ps.ptable)


class FileDownload(APIView):
    permission_classes = [AllowAny]  # ``permissions.can_read_file`` decides
    @extend_schema(description="Download a stored file by its id (the ids the other answers name), if you may "
                               "read it; the SHA-256 is in the ETag and X-Content-SHA256 headers.",
                   responses={(200, "application/octet-stream"): OpenApiResponse(description="the exact bytes")})
    def get(self, request, pk):
        stored = get_object_or_404(StoredFile, pk=pk)
        _require(permissions.can_read_file(request.user, stored), request.user)
        return stream_file(stored)


# ----- uploads ------------------------------------------------------------------------------
class AnonymizedSetUpload(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = throttles.UPLOADS

    @extend_schema(request=S.UploadSerializer, responses={202: S.AnonymizedSetSerializer})
    def post(self, request, pk):
        """Upload an anotraces file for data set ``id`` (your team's, challenge 1 or 2)."""
        started = request_start.started_at(request)  # the deadline counts when the request began (rules §15)
        ds = get_object_or_404(selectors.datasets(), pk=pk)
        content, name, _fields = _upload(request)
        aset = uploads.submit_anonymized_set(user=request.user, dataset=ds, content=content, name=name,
                                             key=request.headers.get("Idempotency-Key"), started_at=started)
        return _accepted(request, aset, S.AnonymizedSetSerializer,
                         selectors.scoring_jobs_of(aset))


def _accepted(request, upload, serializer_class, scoring_jobs) -> Response:
    """202 with the upload and the job that validates and scores it (for polling).

    The upload is stored when this runs, so a database failure now (a connection dropped after the
    commit) must not make the answer an error, which would tell the client to send the upload again:
    the answer says what is known, the upload as it was stored and no job (the job runs all the same)."""
    try:
        upload.refresh_from_db()
        data = serializer_class(upload).data
        job = scoring_jobs.first()
        data["job"] = job_data(job, request.user) if job else None
    except DatabaseError:
        connection.close()  # a dropped connection stays broken until closed
        data = {"id": upload.pk, "seq": upload.seq, "status": upload.status, "created_at": upload.created_at,
                "job": None}
    return Response(data, status=status.HTTP_202_ACCEPTED)


class _TeamUploadList(APIView):
    """The contest's uploads of this kind that you may read: your team's own; every team's if you organize it."""
    # Shared by anonymized sets and attacks: ``visible(user, contest)`` from ``contest.selectors``.

    permission_classes = [IsAuthenticated]
    serializer = None
    visible = None

    def get(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        return Response(self.serializer(type(self).visible(request.user, contest), many=True).data)


class _TeamUploadDetail(APIView):
    """One upload: your team's own, or any team's if you organize the contest."""
    # Shared by anonymized sets and attacks: ``can_read(user, upload)`` from ``contest.permissions``.

    permission_classes = [IsAuthenticated]
    serializer = None
    uploads = None
    can_read = None

    def get(self, request, pk):
        upload = get_object_or_404(self.uploads, pk=pk)
        _require(type(self).can_read(request.user, upload), request.user)
        return Response(self.serializer(upload).data)


def _team_upload_views(name: str, serializer, *, visible, uploads, can_read) -> tuple[type, type]:
    """``<name>List`` and ``<name>Detail``, the two read endpoints of one kind of team upload (anonymized
    sets, attacks): what differs between the kinds is their serializer, their selector ``visible(user,
    contest)``, the queryset ``uploads`` a detail is read from and the permission ``can_read(user, upload)``."""
    def view(base, suffix: str, responses, **attrs) -> type:
        cls = type(name + suffix, (base,), {"__module__": __name__, "__qualname__": name + suffix,
                                            "serializer": serializer, **attrs})
        return extend_schema_view(get=extend_schema(responses=responses))(cls)
    return (view(_TeamUploadList, "List", serializer(many=True), visible=visible),
            view(_TeamUploadDetail, "Detail", serializer, uploads=uploads, can_read=can_read))


AnonymizedSetList, AnonymizedSetDetail = _team_upload_views(
    "AnonymizedSet", S.AnonymizedSetSerializer, visible=selectors.anonymized_sets_for,
    uploads=selectors.anonymized_sets(),
    can_read=permissions.can_read_anonymized_set)


def _preview_of(request, pk) -> PrivacyPreview:
    aset = get_object_or_404(selectors.anonymized_sets(), pk=pk)
    _require(permissions.can_read_preview(request.user, aset), request.user)
    p = selectors.preview_of(aset)
    if p is None:
        raise NotFound(_("no privacy preview of this upload (not valid, or its preview job has not run yet)"))
    return p


class AnonymizedSetPreview(APIView):
    """The privacy preview of an upload: the judge's sample attacks only; other teams' attacks come later."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=S.PrivacyPreviewSerializer)
    def get(self, request, pk):
        return Response(S.PrivacyPreviewSerializer(_preview_of(request, pk)).data)


class AnonymizedSetPreviewCSV(APIView):
    """The per-user risk table of an upload's privacy preview (CSV)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={(200, "text/csv"): OpenApiResponse(description="per-user risk CSV")})
    def get(self, request, pk):
        return stream_file(_preview_of(request, pk).per_user)


class AnonymizedSetSelect(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses=S.AnonymizedSetSerializer)
    def post(self, request, pk):
        """Choose this upload as the team's final set for its dataset."""
        aset = get_object_or_404(selectors.anonymized_sets(), pk=pk)
        aset = uploads.select_anonymized_set(user=request.user, aset=aset)
        return Response(S.AnonymizedSetSerializer(aset).data)


class AttackUpload(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = throttles.UPLOADS

    @extend_schema(request=S.AttackUploadSerializer, responses={202: S.AttackSerializer})
    def post(self, request, pk):
        """Upload an etable or etraces (field ``kind``) against public set ``id``."""
        started = request_start.started_at(request)  # the deadline counts when the request began (rules §15)
        target = get_object_or_404(selectors.public_sets(), pk=pk)
        team = permissions.team_of(request.user, target.dataset.round.contest)
        if team is None:
            raise PermissionDenied(_("only members of a team of this contest can upload attacks"))
        content, name, fields = _upload(request, S.AttackUploadSerializer)
        attack = uploads.submit_attack(user=request.user, attacker=team, target=target, kind=fields["kind"],
                                       content=content, name=name, key=request.headers.get("Idempotency-Key"),
                                       started_at=started)
        return _accepted(request, attack, S.AttackSerializer,
                         selectors.scoring_jobs_of(attack))


AttackList, AttackDetail = _team_upload_views(
    "Attack", S.AttackSerializer, visible=selectors.attacks_for,
    uploads=selectors.attacks(),
    can_read=permissions.can_read_attack)


# ----- jobs and scores -------------------------------------------------------------------------
class JobDetail(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(description="One job (scoring, generation, the judge's attacks, results): its status and "
                               "message; poll it after an upload. Failure details are for the organizers.",
                   responses=S.JobSerializer)
    def get(self, request, pk):
        job = get_object_or_404(selectors.jobs_with_contest(), pk=pk)
        _require(permissions.can_see_job(request.user, job), request.user)
        return Response(job_data(job, request.user))


class JobList(APIView):
    permission_classes = [IsAuthenticated, IsContestOrganizer]

    @extend_schema(description="Organizers: the contest's 200 most recent jobs.",
                   responses=S.JobSerializer(many=True))
    def get(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        self.check_object_permissions(request, contest)
        return Response(S.JobSerializer(selectors.contest_jobs(contest, 200), many=True).data)


class MyScores(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(description="Your team's scores: the utility score s_U of each anonymized set and the score "
                               "of each attack.",
                   responses={200: OpenApiResponse(description="s_U of my uploads and the scores of my attacks")})
    def get(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        team = permissions.team_of(request.user, contest)
        if team is None:
            raise PermissionDenied(_("you are not in a team of this contest"))
        scores = selectors.team_scores(team)
        return Response({k: S.ScoreSerializer(v, many=True).data for k, v in scores.items()})


# ----- results (public once published) -------------------------------------------------------------
class Results(APIView):
    permission_classes = [AllowAny]  # ``permissions.can_view_results`` decides
    part = None

    @extend_schema(description="The published results (leaderboard, attack matrix and awards, or one of them); "
                               "an organizer reads the latest computed snapshot, published or not "
                               "(POST /api/contests/{slug}/snapshot/ computes it).",
                   responses={200: OpenApiResponse(description="the published results; for organizers the latest "
                                                               "snapshot (the preview the web shows them too)")})
    def get(self, request, slug):
        # What the results jobs stored, never computed here, as the web pages do.
        contest = get_object_or_404(Contest, slug=slug)
        _require(permissions.can_view_results(request.user, contest), request.user)
        snap, _preview = selectors.visible_snapshot(request.user, contest)
        if snap is None:
            raise NotFound(_("no results computed yet: POST /api/contests/<slug>/snapshot/ computes them"))
        results = results_snapshot.read(snap.data)
        as_json = results_snapshot.as_json
        if self.part == "leaderboard":
            return Response({"team_rounds": as_json(results.team_rounds), "team_totals": as_json(results.team_totals),
                             "sets": as_json(results.sets), "team_names": as_json(results.team_names),
                             "standing": as_json(results.standing)})
        if self.part == "matrix":
            return Response({"matrix": as_json(results.matrix), "team_names": as_json(results.team_names),
                             "standing": as_json(results.standing)})
        if self.part == "awards":
            return Response({"standing": as_json(results.standing),
                             "awards": S.AwardSerializer(snap.awards.select_related("team"), many=True).data,
                             "standings": as_json(results.standings), "variant": results.variant,
                             "tie_break": results.tie_break})
        return Response(results_snapshot.to_json(results))


# ----- organizer commands ---------------------------------------------------------------------------------
class _OrganizerCommand(APIView):
    permission_classes = [IsAuthenticated, IsContestOrganizer]

    def organized(self, request, contest: Contest) -> Contest:
        """``contest`` once :class:`IsContestOrganizer` allowed the request on it (403 otherwise)."""
        self.check_object_permissions(request, contest)
        return contest

    def _job_response(self, job):
        return Response(S.JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class RoundGenerate(_OrganizerCommand):
    @extend_schema(description="Organizers: generate the round's missing data (every team's data sets, the region "
                               "and time tables) in a job.",
                   request=None, responses={202: S.JobSerializer})
    def post(self, request, pk):
        rnd = get_object_or_404(selectors.rounds(), pk=pk)
        self.organized(request, rnd.contest)
        with transaction.atomic():
            job = request_generation(rnd, user=request.user)
        return self._job_response(job)


class RoundTraining(_OrganizerCommand):
    """The organizer's own training data of a round (contest.services.training_data): organizers only."""

    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = throttles.UPLOADS

    def _summary(self, rnd) -> dict:
        return {"training": training_data.training_summary(rnd), "synthesizer": synthesizer_summary(rnd.manifest or {})}

    @extend_schema(responses={200: OpenApiResponse(description="which data trains the round (kind, name, size, "
                                                               "sha256; null = the built-in city) and its ledger")})
    def get(self, request, pk):
        rnd = get_object_or_404(selectors.rounds(), pk=pk)
        self.organized(request, rnd.contest)
        return Response(self._summary(rnd))

    @extend_schema(request=S.TrainingDataSerializer, responses={201: OpenApiResponse(description="as GET")})
    def post(self, request, pk):
        """Give the round training traces, or a model trained offline, before its data is generated."""
        rnd = get_object_or_404(selectors.rounds(), pk=pk)
        self.organized(request, rnd.contest)
        content, name, fields = _upload(request, S.TrainingDataSerializer)
        training_data.give_training_data(rnd, user=request.user, content=content.read(), name=name,
                                         kind=fields["kind"])
        return Response(self._summary(rnd), status=status.HTTP_201_CREATED)


class RoundClose(_OrganizerCommand):
    @extend_schema(request=None, responses={202: S.JobSerializer})
    def post(self, request, pk):
        """Close the anonymization phase now: freeze, pseudonymize, run the judge attacks."""
        rnd = get_object_or_404(selectors.rounds(), pk=pk)
        self.organized(request, rnd.contest)
        phase = selectors.anonymization_phase(rnd)
        if phase is None:
            raise ValidationError({"round": [_("this round has no anonymization phase")]})
        return self._job_response(close_phase_now(phase, user=request.user))


class PhaseClose(_OrganizerCommand):
    @extend_schema(request=None, responses={202: S.JobSerializer})
    def post(self, request, pk):
        """Close a phase now. Anonymization: freeze, pseudonymize, judge attacks; attack: recompute the results."""
        phase = get_object_or_404(selectors.phases(), pk=pk)
        self.organized(request, phase.round.contest)
        return self._job_response(close_phase_now(phase, user=request.user))


class PhaseSchedule(_OrganizerCommand):
    parser_classes = [JSONParser]

    @extend_schema(request=S.PhaseScheduleSerializer, responses={200: S.PhaseSerializer})
    def patch(self, request, pk):
        """Move a phase's opening and/or deadline (extend, shorten, reopen a closed attack phase).

        409 with the reason for an impossible order (closes before it opens, the anonymization phase
        still open when the attack phase opens, an anonymization phase already pseudonymized).
        """
        phase = get_object_or_404(selectors.phases(), pk=pk)
        self.organized(request, phase.round.contest)
        data = _valid(S.PhaseScheduleSerializer, request)
        phase = schedule.reschedule_phase(phase, user=request.user, **data)
        return Response(S.PhaseSerializer(phase).data)


class RoundOpenAttack(_OrganizerCommand):
    @extend_schema(request=None, responses={200: S.PhaseSerializer})
    def post(self, request, pk):
        """Open the round's attack phase now (its deadline stays); the anonymization phase must be closed."""
        rnd = get_object_or_404(selectors.rounds(), pk=pk)
        self.organized(request, rnd.contest)
        return Response(S.PhaseSerializer(schedule.open_attack_now(rnd, user=request.user)).data)


class RoundAdd(_OrganizerCommand):
    parser_classes = [JSONParser]

    @extend_schema(request=S.RoundCreateSerializer, responses={201: S.RoundSerializer})
    def post(self, request, slug):
        """Add a round (the next number) with its anonymization and attack phase windows."""
        contest = get_object_or_404(Contest, slug=slug)
        self.organized(request, contest)
        form = S.RoundCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        try:
            rnd = setup_service.add_round(
                contest, name=d["name"], weight=d["weight"], ref_days=d["ref_days"], org_days=d["org_days"],
                actor=request.user, phases={kind: (d[f"{kind}_opens"], d[f"{kind}_closes"])
                                            for kind in (Phase.ANONYMIZATION, Phase.ATTACK)})
        except setup_service.SetupError as exc:
            raise ValidationError({"phases": [str(exc)]}) from None
        return Response(S.RoundSerializer(rnd).data, status=status.HTTP_201_CREATED)


class TeamAdd(_OrganizerCommand):
    parser_classes = [JSONParser, FormParser]

    @extend_schema(request=S.TeamCreateSerializer, responses={201: S.TeamSerializer})
    def post(self, request, slug):
        """Add a team (the next team number); its members join with its invitation code."""
        contest = get_object_or_404(Contest, slug=slug)
        self.organized(request, contest)
        name = _valid(S.TeamCreateSerializer, request)["name"]
        try:
            team = teams_service.add_team(contest, name, actor=request.user)
        except teams_service.TeamError as exc:
            raise ValidationError({"name": [str(exc)]}) from None
        return Response(S.TeamSerializer(team).data, status=status.HTTP_201_CREATED)


class TeamApprove(_OrganizerCommand):
    parser_classes = [JSONParser, FormParser]

    @extend_schema(request=S.TeamApproveSerializer, responses={200: S.TeamSerializer})
    def post(self, request, pk):
        """Approve a team (``approved``: true, the default) or withdraw the approval (false)."""
        team = get_object_or_404(selectors.teams(), pk=pk)
        self.organized(request, team.contest)
        teams_service.approve_team(team, _valid(S.TeamApproveSerializer, request)["approved"], actor=request.user)
        return Response(S.TeamSerializer(team).data)


class TeamJoin(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [JSONParser, FormParser]

    @extend_schema(request=S.TeamJoinSerializer, responses={200: S.TeamSerializer})
    def post(self, request):
        """Join the team whose invitation code is ``invitation_code``."""
        try:
            team, _created = teams_service.join_team(request.user, _valid(S.TeamJoinSerializer, request)["invitation_code"])
        except teams_service.TeamError as exc:
            raise ValidationError({"invitation_code": [str(exc)]}) from None
        return Response(S.TeamSerializer(team).data)


class ContestRescore(_OrganizerCommand):
    @extend_schema(description="Organizers: score every upload and judge attack of the contest again (after a "
                               "change of the judge), in a job.",
                   request=None, responses={202: S.JobSerializer})
    def post(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        self.organized(request, contest)
        return self._job_response(results_service.request_rescore(contest, user=request.user))


class ContestPublish(_OrganizerCommand):
    parser_classes = [JSONParser, FormParser]

    @extend_schema(request=S.PublishSerializer, responses={202: S.JobSerializer})
    def post(self, request, slug):
        """Snapshot the results of the rounds played up to ``round`` (default: every round played) with
        their awards, and publish them: provisional until the last round is published, final after.
        409 with the reason when that round has not been played yet or its attack phase (or an earlier
        round's) has not closed: its attacks are not all counted, so nothing is published."""
        contest = get_object_or_404(Contest, slug=slug)
        self.organized(request, contest)
        through = _valid(S.PublishSerializer, request).get("round")
        return self._job_response(results_service.request_results(contest, user=request.user, publish=True,
                                                                  through_round=through))


class Announcements(APIView):
    """The contest's announcements: everyone reads them; organizers post them (and e-mail every member)."""

    parser_classes = [JSONParser, FormParser]

    def get_permissions(self):
        return [IsAuthenticated(), IsContestOrganizer()] if self.request.method == "POST" else [AllowAny()]

    @extend_schema(responses=S.AnnouncementSerializer(many=True))
    def get(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        return Response(S.AnnouncementSerializer(contest.announcements.all()[:100], many=True).data)

    @extend_schema(request=S.AnnouncementCreateSerializer, responses={201: S.AnnouncementSerializer})
    def post(self, request, slug):
        contest = get_object_or_404(Contest, slug=slug)
        self.check_object_permissions(request, contest)
        d = _valid(S.AnnouncementCreateSerializer, request)
        item = announcements_service.announce(contest, title=d["title"], body=d["body"], user=request.user,
                                              email=d["email"])
        return Response(S.AnnouncementSerializer(item).data, status=status.HTTP_201_CREATED)


class ContestUnpublish(_OrganizerCommand):
    @extend_schema(request=None, responses={204: None})
    def post(self, request, slug):
        """Embargo the published results again (the snapshots are kept)."""
        contest = get_object_or_404(Contest, slug=slug)
        self.organized(request, contest)
        results_service.unpublish_results(contest, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class JobRetry(_OrganizerCommand):
    @extend_schema(request=None, responses={202: S.JobSerializer})
    def post(self, request, pk):
        """Re-run a failed job as a new job (the failed one is kept)."""
        job = get_object_or_404(selectors.jobs_with_contest(), pk=pk)
        _require(permissions.can_retry_job(request.user, job), request.user)
        try:
            new = retry_job(job, user=request.user)
        except ValueError as exc:
            raise ValidationError({"job": [str(exc)]}) from None
        return self._job_response(new)


class ContestSnapshot(_OrganizerCommand):
    @extend_schema(request=None, responses={202: S.JobSerializer})
    def post(self, request, slug):
        """Compute and store the results (still embargoed)."""
        contest = get_object_or_404(Contest, slug=slug)
        self.organized(request, contest)
        return self._job_response(results_service.request_results(contest, user=request.user))


class ObtainToken(ObtainAuthToken):
    """POST username and password, get the API token; throttled like the web login (django-axes). DELETE
    with the token revokes it. The API docs show the descriptions given to ``extend_schema``, not this.

    The serializer authenticates with Django's own request (not DRF's wrapper), so a lockout is
    recorded where ``axes.middleware.AxesMiddleware`` reads it and answered 429.
    """

    permission_classes = [AllowAny]  # anyone may try to log in (django-axes throttles the failures)
    throttle_classes = throttles.DEFAULT  # DRF's view has none; wrong passwords are django-axes's
    serializer_class = S.TokenLoginSerializer

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "request": self.request._request}

    @extend_schema(description="Send your user name and password, get your API token (the same token each time) "
                               "to send as `Authorization: Token <key>`. Repeated wrong passwords lock the "
                               "account for a while (429), as on the web login. An account with a second factor "
                               "makes its token on its account page instead.",
                   responses={200: OpenApiResponse(description='{"token": "<key>"}')})
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = serializer.validated_data["user"]
        _require(permissions.can_obtain_token_with_password(user, second_factor.has_device(user)), user)
        return Response({"token": accounts.token_of(user).key})

    @extend_schema(description="Revoke the token this request carries (a script retiring itself, a leaked token): "
                               "it stops working at once and none replaces it; the account page makes a new one.",
                   request=None, responses={204: None})
    def delete(self, request, *args, **kwargs):
        # The description is extend_schema's (above), as for POST.
        if not request.user.is_authenticated:
            raise NotAuthenticated(_("send the token to revoke in the Authorization header"))
        accounts.revoke_token(request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
