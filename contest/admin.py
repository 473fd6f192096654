"""Django admin for everything; stored files, scores and the audit log are read-only."""
from django.contrib import admin

from contest import models as m


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(m.StoredFile)
class StoredFileAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "size", "compressed_size", "sha256", "uploaded_by", "created_at")
    search_fields = ("name", "sha256")


@admin.register(m.StoredChunk)
class StoredChunkAdmin(ReadOnlyAdmin):
    """Where each file's content lies, never the content (a chunk is 1 MB of compressed bytes)."""

    list_display = ("id", "file", "seq")
    exclude = ("data",)
    list_select_related = ("file",)

    def get_queryset(self, request):
        return super().get_queryset(request).defer("data")


@admin.register(m.ParsedCopy)
class ParsedCopyAdmin(ReadOnlyAdmin):
    """Which stored files have their parsed arrays kept (contest.services.data), and where."""

    list_display = ("id", "source", "reader", "arrays", "grid")
    list_select_related = ("source", "arrays")


class PhaseInline(admin.TabularInline):
    model = m.Phase
    extra = 0


class RoundInline(admin.TabularInline):
    model = m.Round
    extra = 0
    fields = ("number", "name", "weight", "ref_days", "org_days", "generated_at")
    readonly_fields = ("generated_at",)


class MembershipInline(admin.TabularInline):
    model = m.Membership
    extra = 0


@admin.register(m.Contest)
class ContestAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "users_per_set", "time_zone", "results_published_at")
    filter_horizontal = ("organizers",)
    inlines = [RoundInline]


@admin.register(m.Round)
class RoundAdmin(admin.ModelAdmin):
    list_display = ("contest", "number", "name", "weight", "ref_days", "org_days", "generated_at")
    inlines = [PhaseInline]
    readonly_fields = ("model_file", "info_region", "info_time", "manifest", "generated_at", "training_data",
                       "training_kind")


@admin.register(m.Phase)
class PhaseAdmin(admin.ModelAdmin):
    list_display = ("round", "kind", "opens_at", "closes_at", "closed_at")


@admin.register(m.Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("contest", "number", "name", "approved", "invitation_code")
    list_filter = ("contest", "approved")
    inlines = [MembershipInline]


@admin.register(m.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "team", "role")


@admin.register(m.Dataset)
class DatasetAdmin(ReadOnlyAdmin):
    list_display = ("round", "kind", "number", "challenge", "team", "generator", "created_at")
    list_filter = ("round", "kind", "challenge")


@admin.register(m.AnonymizedSet)
class AnonymizedSetAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "team", "seq", "status", "s_u", "valid", "selected", "final", "created_at")
    list_filter = ("status", "final", "dataset__round")


@admin.register(m.PrivacyPreview)
class PrivacyPreviewAdmin(ReadOnlyAdmin):
    list_display = ("anonymized_set", "seed", "computed_at")


@admin.register(m.PublicSet)
class PublicSetAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "anonymized_set", "commitment", "created_at")


@admin.register(m.Attack)
class AttackAdmin(ReadOnlyAdmin):
    list_display = ("attacker", "target", "kind", "seq", "status", "score", "created_at")
    list_filter = ("kind", "status")


@admin.register(m.JudgeAttackResult)
class JudgeAttackResultAdmin(ReadOnlyAdmin):
    list_display = ("public_set", "algorithm", "score", "seed", "current", "created_at")


@admin.register(m.RoundFigures)
class RoundFiguresAdmin(ReadOnlyAdmin):
    list_display = ("round", "part", "computed_at", "inputs")


@admin.register(m.Bundle)
class BundleAdmin(ReadOnlyAdmin):
    list_display = ("contest", "kind", "round", "file_name", "size", "files", "created_at")
    list_filter = ("kind",)


@admin.register(m.Score)
class ScoreAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "metric", "value", "anonymized_set", "attack", "judge_attack", "current", "computed_at")
    list_filter = ("metric", "current")


class AwardInline(admin.TabularInline):
    model = m.Award
    extra = 0
    can_delete = False


@admin.register(m.ResultsSnapshot)
class ResultsSnapshotAdmin(ReadOnlyAdmin):
    list_display = ("contest", "created_at", "published", "published_at", "sha256")
    inlines = [AwardInline]


@admin.register(m.Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "contest", "status", "progress", "message", "attempts", "created_at", "finished_at")
    list_filter = ("kind", "status")
    readonly_fields = ("kind", "contest", "args", "celery_id", "attempts", "error", "created_by", "created_at",
                       "started_at", "finished_at", "heartbeat_at")


@admin.register(m.Announcement)
class AnnouncementAdmin(admin.ModelAdmin):
    list_display = ("contest", "created_at", "title", "created_by", "emailed_to")
    list_filter = ("contest",)
    readonly_fields = ("created_by", "emailed_to")


@admin.register(m.AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ("id", "created_at", "contest", "actor", "action", "object_type", "object_id")
    list_filter = ("action",)
