"""Thin serializers of the contest's objects (no rules here: see permissions and services)."""
from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer

from contest.models import (
    Announcement,
    AnonymizedSet,
    Attack,
    Award,
    Contest,
    Dataset,
    Job,
    Phase,
    PrivacyPreview,
    PublicSet,
    Round,
    Score,
    StoredFile,
    Team,
)
from contest.services import job_messages
from contest.services.accounts import LOGIN_PASSWORD_MAX_LENGTH, is_deleted, username_max_length
from contest.services.generation import synthesizer_summary
from contest.services.setup import MAX_ROUND_DAYS


@extend_schema_field(OpenApiTypes.BINARY)
class UploadedFileField(serializers.FileField):
    """A file sent in a multipart request: declared ``format: binary`` in the schema, so the API docs offer
    a file chooser (drf-spectacular otherwise declares a file field as ``format: uri``, a text box)."""


class StoredFileSerializer(serializers.ModelSerializer):
    class Meta:
        model = StoredFile
        fields = ["id", "name", "sha256", "size", "content_type", "created_at"]


class PhaseSerializer(serializers.ModelSerializer):
    opens_at_local = serializers.SerializerMethodField()
    closes_at_local = serializers.SerializerMethodField()
    is_open = serializers.SerializerMethodField()

    class Meta:
        model = Phase
        fields = ["id", "kind", "opens_at", "closes_at", "opens_at_local", "closes_at_local", "closed_at", "is_open"]

    def get_opens_at_local(self, obj) -> str:
        return obj.local(obj.opens_at).isoformat()

    def get_closes_at_local(self, obj) -> str:
        return obj.local(obj.closes_at).isoformat()

    def get_is_open(self, obj) -> bool:
        return obj.is_open()


class RoundSerializer(serializers.ModelSerializer):
    phases = PhaseSerializer(many=True, read_only=True)
    synthesizer = serializers.SerializerMethodField()

    class Meta:
        model = Round
        fields = ["id", "number", "name", "weight", "ref_days", "org_days", "generated_at", "phases", "synthesizer"]

    def get_synthesizer(self, obj) -> dict | None:
        """The generator, privacy budget and privacy-test report of the round's data (public: no seed)."""
        return synthesizer_summary(obj.manifest or {})


class ContestSerializer(serializers.ModelSerializer):
    rounds = RoundSerializer(many=True, read_only=True)
    results_published = serializers.SerializerMethodField()

    class Meta:
        model = Contest
        exclude = ["organizers", "seed", "synthesizer_params"]

    def get_results_published(self, obj) -> bool:
        return obj.results_published_at is not None


class TeamSerializer(serializers.ModelSerializer):
    members = serializers.SerializerMethodField()

    class Meta:
        model = Team
        fields = ["id", "number", "name", "approved", "members"]

    def get_members(self, obj) -> list[dict]:
        # A member who deleted the account is "deleted user", as on the pages (contest.services.accounts).
        return [{"username": "deleted user" if is_deleted(m.user) else m.user.username, "role": m.role}
                for m in obj.memberships.select_related("user")]


class DatasetSerializer(serializers.ModelSerializer):
    round = serializers.IntegerField(source="round.number")
    team_name = serializers.CharField(source="team.name", default=None)
    reference = StoredFileSerializer(read_only=True)
    original = serializers.SerializerMethodField()

    class Meta:
        model = Dataset
        fields = ["id", "round", "kind", "number", "team_name", "challenge", "label", "reference", "original",
                  "generator", "created_at"]

    def get_original(self, obj) -> dict | None:
        # Only shown where the permissions module allows reading it (the view passes the decision).
        allowed = self.context.get("original_allowed", {})
        return StoredFileSerializer(obj.original).data if allowed.get(obj.pk) else None


class _TeamUploadSerializer(serializers.ModelSerializer):
    """A team's upload: its number among the team's uploads of its kind, the stored file, the validation's
    status and errors, when it was uploaded and scored."""
    # Shared by anonymized sets and attacks; ``UPLOAD_FIELDS`` are the fields this base serves.

    UPLOAD_FIELDS = ["seq", "file", "status", "errors", "error_total"]
    file = StoredFileSerializer(read_only=True)


class AnonymizedSetSerializer(_TeamUploadSerializer):
    dataset_label = serializers.CharField(source="dataset.label")
    round = serializers.IntegerField(source="dataset.round.number")

    class Meta:
        model = AnonymizedSet
        fields = ["id", "dataset", "dataset_label", "round", *_TeamUploadSerializer.UPLOAD_FIELDS, "s_u",
                  "valid", "selected", "final", "created_at", "scored_at"]


class PrivacyPreviewSerializer(serializers.ModelSerializer):
    """A privacy preview: the judge's sample attacks only (other teams' attacks come later); not results."""

    per_user = StoredFileSerializer(read_only=True)

    class Meta:
        model = PrivacyPreview
        fields = ["anonymized_set", "seed", "computed_at", "summary", "leak_map", "per_user"]


class PublicSetSerializer(serializers.ModelSerializer):
    label = serializers.CharField(source="dataset.label")
    round = serializers.IntegerField(source="dataset.round.number")
    kind = serializers.CharField(source="dataset.kind")
    team_number = serializers.IntegerField(source="dataset.number")
    challenge = serializers.IntegerField(source="dataset.challenge")
    reference_dataset = serializers.IntegerField(source="dataset.id")
    pubtraces = StoredFileSerializer(read_only=True)
    commitment = serializers.SerializerMethodField()
    commitment_nonce = serializers.SerializerMethodField()

    class Meta:
        model = PublicSet
        fields = ["id", "label", "round", "kind", "team_number", "challenge", "reference_dataset", "pubtraces",
                  "commitment", "commitment_nonce", "created_at"]

    def get_commitment(self, obj) -> str | None:
        # Shown only where the permissions module allows it (the view passes the decisions).
        return obj.commitment if self.context.get("commitment_visible", {}).get(obj.pk) else None

    def get_commitment_nonce(self, obj) -> str | None:
        """Revealed with the results: then ``(echo NONCE; cat ptable.csv) | sha256sum`` gives the commitment."""
        return obj.commitment_nonce or None if self.context.get("nonce_visible", {}).get(obj.pk) else None


class AttackSerializer(_TeamUploadSerializer):
    attacker_number = serializers.IntegerField(source="attacker.number")
    target_label = serializers.CharField(source="target.dataset.label")

    class Meta:
        model = Attack
        fields = ["id", "attacker_number", "target", "target_label", "kind", *_TeamUploadSerializer.UPLOAD_FIELDS,
                  "score", "created_at", "scored_at"]


class JobSerializer(serializers.ModelSerializer):
    message = serializers.SerializerMethodField(
        help_text="What the job says, in the request's language (Accept-Language), as the console shows it.")

    class Meta:
        model = Job
        fields = ["id", "kind", "status", "progress", "message", "error", "attempts", "created_at", "started_at",
                  "finished_at"]

    def get_message(self, job: Job) -> str:
        # stored in English by a worker (contest.services.job_messages); read in the request's language
        return job_messages.shown(job.message)


class ScoreSerializer(serializers.ModelSerializer):
    label = serializers.CharField(source="dataset.label")

    class Meta:
        model = Score
        fields = ["id", "label", "metric", "value", "anonymized_set", "attack", "current", "computed_at"]


class AwardSerializer(serializers.ModelSerializer):
    team_number = serializers.IntegerField(source="team.number")
    team_name = serializers.CharField(source="team.name")

    class Meta:
        model = Award
        fields = ["award", "title", "team_number", "team_name", "value"]


class AnnouncementSerializer(serializers.ModelSerializer):
    class Meta:
        model = Announcement
        fields = ["id", "title", "body", "created_at", "emailed_to"]


class AnnouncementCreateSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    body = serializers.CharField(max_length=5000)
    email = serializers.BooleanField(default=True, help_text="also e-mail it to every member")


class PublishSerializer(serializers.Serializer):
    """Which rounds to publish: those played up to ``round`` (omitted: every round played so far)."""

    round = serializers.IntegerField(min_value=1, required=False)


class PhaseScheduleSerializer(serializers.Serializer):
    """A phase's new opening and/or deadline (ISO 8601 with offset); at least one of them."""

    opens_at = serializers.DateTimeField(required=False)
    closes_at = serializers.DateTimeField(required=False)

    def validate(self, data):
        if not data:
            raise serializers.ValidationError(_("give opens_at, closes_at or both"))
        return data


class RoundCreateSerializer(serializers.Serializer):
    """A new round: name, weight, day counts and both phase windows (ISO 8601 with offset)."""

    name = serializers.CharField(max_length=100)
    weight = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True, default=None,
                                    help_text="omitted: the 2019 rule (round 1 0.1, later rounds 0.9)")
    ref_days = serializers.IntegerField(min_value=1, max_value=MAX_ROUND_DAYS, default=20)
    org_days = serializers.IntegerField(min_value=1, max_value=MAX_ROUND_DAYS, default=20)
    anonymization_opens = serializers.DateTimeField()
    anonymization_closes = serializers.DateTimeField()
    attack_opens = serializers.DateTimeField()
    attack_closes = serializers.DateTimeField()


class UploadSerializer(serializers.Serializer):
    # An empty file is refused at once, as on the web page (UploadForm), not stored and rejected later.
    file = UploadedFileField(help_text="CSV, or .gz / .zip holding one CSV", error_messages={
        "empty": "the file is empty (0 bytes): an upload is a CSV file with its header and rows"})


class TrainingDataSerializer(UploadSerializer):
    kind = serializers.ChoiceField(choices=[Round.TRAINING_TRACES, Round.TRAINING_MODEL],
                                   help_text="traces: user_id,time_id,reg_id on the contest's slots; "
                                             "model: an .npz of python -m synth train")


class AttackUploadSerializer(UploadSerializer):
    kind = serializers.ChoiceField(choices=[Attack.ETABLE, Attack.ETRACES])


class ContestCreateSerializer(serializers.Serializer):
    """The contest setup YAML, as a field ``yaml`` or an uploaded ``file``."""

    yaml = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    file = UploadedFileField(required=False, help_text="the contest file (YAML), instead of the field yaml")

    def validate(self, attrs):
        text = attrs.get("yaml") or ""
        if not text and attrs.get("file") is not None:
            try:
                text = attrs["file"].read().decode("utf-8")
            except UnicodeDecodeError:
                raise serializers.ValidationError({"file": [_("the contest setup file must be UTF-8 text")]}) from None
        if not text.strip():
            raise serializers.ValidationError({"yaml": [_("the contest setup YAML is required")]})
        return {"text": text}


class TeamCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, allow_blank=True, default="")


class TeamApproveSerializer(serializers.Serializer):
    approved = serializers.BooleanField(default=True)


class TeamJoinSerializer(serializers.Serializer):
    invitation_code = serializers.CharField(max_length=64)


class TokenLoginSerializer(AuthTokenSerializer):
    """DRF's user name and password, each no longer than a login takes (``accounts.username_max_length``,
    ``accounts.LOGIN_PASSWORD_MAX_LENGTH``): refused by name before they reach the login lockout's record."""

    username = serializers.CharField(write_only=True, max_length=username_max_length())
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False, write_only=True,
                                     max_length=LOGIN_PASSWORD_MAX_LENGTH)
