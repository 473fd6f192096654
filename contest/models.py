"""The contest's data model, in the contest's own words (rules §§1, 4-9, 12).

Business rules live in ``contest.services``; reads in ``contest.selectors``;
who-may-see-what in ``contest.permissions``. The only rules enforced here are
integrity invariants: uniqueness constraints that make the submission limits
race-free, and the immutability of stored files and of the audit log.
"""
from __future__ import annotations

import functools
import secrets
import zoneinfo

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext

from contest import job_kinds
from scoring.algorithms.registry import judge_defaults
from scoring.grid import DEFAULT_HOSPITALS, Grid, TimeAxis
from scoring.results import TIE_EARLIER_FINAL_SUBMISSION, TIE_TEAM_ID, VARIANT_2019, VARIANT_PAPER
from scoring.scores import MEAN_DISTANCE, MEAN_LOSS
from scoring.vocabulary import AttackKind, Challenge, ScoreKind

User = settings.AUTH_USER_MODEL

IDP, TRP = Challenge.IDP, Challenge.TRP
CHALLENGES = tuple((c.value, c.label) for c in Challenge)


def _default_hospitals():
    return list(DEFAULT_HOSPITALS)


def _default_judge_attacks():
    """The registry's judge defaults (I1-I3, T1-T3): the registry says which attacks the judge runs."""
    return [a.name for a in judge_defaults()]


def _invitation_code():
    return secrets.token_urlsafe(12)


def _random_seed():
    return secrets.randbelow(2**31)


class ImmutableQuerySet(models.QuerySet):
    """Refuses bulk update and delete: rows of these models are written once."""

    def update(self, **kwargs):
        raise PermissionError(f"{self.model.__name__} rows are append-only; update() is not allowed")

    def delete(self):
        raise PermissionError(f"{self.model.__name__} rows are append-only; delete() is not allowed")


@functools.lru_cache(maxsize=32)
def _shared_grid(**params) -> Grid:
    """A :class:`Grid` per distinct parameters (frozen, so safe to share)."""
    return Grid(**params)


class AppendOnlyModel(models.Model):
    """Rows written once and never edited or deleted (stored files, their chunks, the audit log):
    ``save`` refuses an existing row, ``delete`` always, and the queryset refuses bulk update and delete.
    ``append_only`` names what the rows are, for the refusal's message."""

    append_only = "this row"

    objects = ImmutableQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):
        if self.pk is not None and type(self).objects.filter(pk=self.pk).exists():
            raise PermissionError(f"{self.append_only} is append-only: never overwritten")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError(f"{self.append_only} is append-only: never deleted")


class StoredFile(AppendOnlyModel):
    """An uploaded or generated file, kept in the database, never edited or deleted.

    The row holds what describes the file; its content is in :class:`StoredChunk` rows: the
    zlib-compressed bytes cut in pieces of ``contest.services.storage.CHUNK`` bytes. So loading a
    row (a join, a list of uploads) never loads content, and writing or reading a file of hundreds
    of MB never holds more than one piece of it in a query (measured: a 140 MB upload made the web
    worker reach 780 MB when its compressed bytes went in and out as one value).
    ``sha256`` and ``size`` describe the original (uncompressed) bytes, which a download returns exactly.
    """

    name = models.CharField(max_length=255, help_text="file name as uploaded or generated")
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.BigIntegerField(help_text="bytes of the original content")
    compressed_size = models.BigIntegerField(help_text="bytes of the zlib-compressed content, all chunks")
    content_type = models.CharField(max_length=100, default="text/csv")
    uploaded_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    append_only = "a stored file"

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"{self.name} ({self.size} B, sha256 {self.sha256[:12]})"


class StoredChunk(AppendOnlyModel):
    """Piece ``seq`` (from 0) of a stored file's zlib-compressed content; every piece but the last is
    exactly ``storage.CHUNK`` bytes. Written once with its file, never edited or deleted."""

    file = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="chunks")
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    append_only = "a stored file's content"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["file", "seq"], name="stored_chunk_once")]

    def __str__(self):
        return f"chunk {self.seq} of stored file {self.file_id}"


class ParsedCopy(AppendOnlyModel):
    """The arrays a stored trace file parses to, kept as a stored file of its own (a sequence of ``.npy``
    arrays), so a job in any worker process loads a 2019-size set's traces in milliseconds instead of
    parsing its 800k CSV rows again (0.4 s each time; contest.services.data). Only the judge's code reads
    it: no page or API serves it, and as a file nothing refers to, ``permissions.can_read_file`` denies
    it to everyone but superusers. ``reader`` names the reader and its array layout; ``grid`` the SHA-256
    of the grid the file was validated against."""

    source = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="parsed_copies")
    reader = models.CharField(max_length=20)
    grid = models.CharField(max_length=64)
    arrays = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+")

    append_only = "a parsed copy of a stored file"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "reader", "grid"], name="parsed_copy_once")]

    def __str__(self):
        return f"{self.reader} of stored file {self.source_id}"


class Contest(models.Model):
    """A contest and all its parameters (rules §12; defaults = 2019 final round)."""

    # the names are the judge's (scoring.scores, scoring.results); the labels are the site's
    CONVENTIONS = ((MEAN_DISTANCE, "mean distance (paper)"), (MEAN_LOSS, "mean loss (2019 program)"))
    AWARD_VARIANTS = ((VARIANT_2019, "2019 rule v1.4"), (VARIANT_PAPER, "paper's simpler variant"))
    TIE_BREAKS = ((TIE_EARLIER_FINAL_SUBMISSION, "earlier final submission wins"), (TIE_TEAM_ID, "lower team number wins"))

    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    organizers = models.ManyToManyField(User, blank=True, related_name="organized_contests")
    # A new contest is a draft until its organizers open it (contest.services.setup.open_to_public): its
    # pages and lists show to its organizers only (permissions.can_view_contest).
    draft = models.BooleanField(default=True, help_text="seen by its organizers only until opened to the public")
    # grid (rules §2)
    grid_nx = models.PositiveIntegerField(default=32)
    grid_ny = models.PositiveIntegerField(default=32)
    grid_min_x = models.FloatField(default=139.68, help_text="west edge longitude, degrees")
    grid_max_x = models.FloatField(default=139.80)
    grid_min_y = models.FloatField(default=35.65, help_text="south edge latitude, degrees")
    grid_max_y = models.FloatField(default=35.75)
    km_lat = models.FloatField(default=111.0)
    km_lon = models.FloatField(default=91.0)
    hospitals = models.JSONField(default=_default_hospitals, help_text="1-based region ids")
    hospital_weight = models.FloatField(default=10.0)
    # time and sets (rules §3, 4)
    users_per_set = models.PositiveIntegerField(default=2000, help_text="m")
    slots_per_day = models.PositiveIntegerField(default=20, help_text="S")
    day_start_minute = models.PositiveIntegerField(default=8 * 60)
    slot_minutes = models.PositiveIntegerField(default=30)
    # scores (rules §7)
    lambda_u = models.FloatField(default=2.0, help_text="km")
    lambda_t = models.FloatField(default=2.0, help_text="km")
    s_req = models.FloatField(default=0.7)
    utility_convention = models.CharField(max_length=20, choices=CONVENTIONS, default=MEAN_DISTANCE)
    # rules (rules §8)
    anonymized_upload_limit = models.PositiveIntegerField(default=10, help_text="per challenge per round")
    etable_limit = models.PositiveIntegerField(default=2, help_text="per (attacker, target set)")
    etraces_limit = models.PositiveIntegerField(default=2, help_text="per (attacker, target set)")
    upload_size_limit = models.BigIntegerField(default=200 * 1024 * 1024, help_text="bytes, uncompressed")
    judge_attacks_enabled = models.BooleanField(default=True)
    judge_attacks = models.JSONField(default=_default_judge_attacks, help_text="registry names")
    # Exact mode uses every event and every region of a generalized set; the 2019 judge's programs
    # sampled (10% of events in I2/T2, at most 10 regions of a set), which changes attack scores
    # (I2 on un-anonymized data: 0.919 exact against about 0.958 sampled on the Osaka set).
    JUDGE_MODES = (("exact", "exact (every event)"),
                   ("sample_2019", "2019 sampling (10% of events, at most 10 regions of a generalized set)"))
    judge_attack_mode = models.CharField(max_length=12, choices=JUDGE_MODES, default="exact")
    time_zone = models.CharField(max_length=64, default="Asia/Tokyo")
    award_variant = models.CharField(max_length=10, choices=AWARD_VARIANTS, default=VARIANT_2019)
    tie_break = models.CharField(max_length=40, choices=TIE_BREAKS, default=TIE_EARLIER_FINAL_SUBMISSION)
    # data generation (rules §11)
    synthesizer = models.CharField(max_length=40, default="ppmtf")
    synthesizer_params = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(default=_random_seed, help_text="master seed of generation and judge attacks")
    # results (rules §8.6)
    freeze_at = models.DateTimeField(null=True, blank=True, help_text="scores after this time are not shown before publication")
    results_published_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return self.name

    def grid(self) -> Grid:
        """The contest's grid: one shared (immutable) object per set of parameters in a process, so its
        derived tables (the 8 MB distance matrix, 11 ms to build) are built once, not once per call."""
        return _shared_grid(nx=self.grid_nx, ny=self.grid_ny, min_x=self.grid_min_x, max_x=self.grid_max_x,
                            min_y=self.grid_min_y, max_y=self.grid_max_y, km_lat=self.km_lat, km_lon=self.km_lon,
                            hospitals=tuple(self.hospitals))

    @property
    def city_seed(self) -> int:
        """The seed of the contest's built-in city (``synth.city.city_model``): ``synthesizer_params["city_seed"]``,
        else the contest's seed."""
        return int((self.synthesizer_params or {}).get("city_seed", self.seed % (2**31)))

    @property
    def tz(self):
        return zoneinfo.ZoneInfo(self.time_zone)

    def local_text(self, dt, *, seconds: bool = False) -> str:
        """``dt`` (aware) as people of the contest read it: ``2019-11-20 17:00 JST`` in the contest's
        zone (``seconds``: ``17:00:05 JST``). The one format of a contest time in messages and pages
        built in Python, and in templates through the ``contest_time`` filter (contest/templatetags)."""
        return dt.astimezone(self.tz).strftime("%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z")

    @property
    def n_teams(self) -> int:
        return self.teams.count()


class Round(models.Model):
    contest = models.ForeignKey(Contest, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField(help_text="order of the round, 1-based")
    name = models.CharField(max_length=100)
    # No default here: the setup service applies the rule (scoring.results.default_round_weight: 0.1, 0.9).
    weight = models.FloatField(help_text="in the weighted total; 2019 rule: preliminary 0.1, final 0.9")
    ref_days = models.PositiveIntegerField(default=20)
    org_days = models.PositiveIntegerField(default=20)
    # Filled by data generation (rules §8.2): the synthesizer model used, the
    # grid and time files given to the teams, and the generator's manifest
    # (seed, version, SHA-256 of every file).
    model_file = models.ForeignKey(StoredFile, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    info_region = models.ForeignKey(StoredFile, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    info_time = models.ForeignKey(StoredFile, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    manifest = models.JSONField(default=dict, blank=True)
    generated_at = models.DateTimeField(null=True, blank=True)
    # The organizer's own training data (contest.services.training_data): training traces the generation
    # job trains the contest's method on, or a model trained offline (then also ``model_file``). Readable
    # by the organizers only (contest.permissions); never in a bundle, a team's export, a page or the manifest.
    TRAINING_TRACES, TRAINING_MODEL = "traces", "model"
    TRAINING_KINDS = ((TRAINING_TRACES, "training traces"), (TRAINING_MODEL, "model trained offline"))
    training_data = models.ForeignKey(StoredFile, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    training_kind = models.CharField(max_length=10, blank=True, default="", choices=TRAINING_KINDS)
    results_published_at = models.DateTimeField(null=True, blank=True,
                                                 help_text="when the results of this round were first published")

    class Meta:
        ordering = ["contest", "number"]
        constraints = [models.UniqueConstraint(fields=["contest", "number"], name="round_number_unique")]

    def __str__(self):
        return f"{self.contest.slug} / {self.name}"

    def time_axis(self) -> TimeAxis:
        c = self.contest
        return TimeAxis(slots_per_day=c.slots_per_day, ref_days=self.ref_days, org_days=self.org_days,
                        start_minute=c.day_start_minute, slot_minutes=c.slot_minutes)


class Phase(models.Model):
    ANONYMIZATION, ATTACK = "anonymization", "attack"
    KINDS = ((ANONYMIZATION, "anonymization"), (ATTACK, "attack"))

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="phases")
    kind = models.CharField(max_length=20, choices=KINDS)
    opens_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True, help_text="when the judge processed the close")

    class Meta:
        ordering = ["round", "opens_at"]
        constraints = [models.UniqueConstraint(fields=["round", "kind"], name="phase_kind_unique")]


    def __str__(self):
        return f"{self.round} / {self.kind}"

    @classmethod
    def kind_name(cls, kind: str) -> str:
        """A phase kind's name as pages and refusals read it ("anonymization phase", "attack phase"), in the
        active language (the choices' labels are the stored words, untranslated)."""
        return gettext("anonymization phase") if kind == cls.ANONYMIZATION else gettext("attack phase")

    def is_open(self, now=None) -> bool:
        now = now or timezone.now()
        return self.closed_at is None and self.opens_at <= now < self.closes_at

    def local(self, dt):
        """``dt`` in the contest's time zone, for display."""
        return dt.astimezone(self.round.contest.tz) if dt else None


class Team(models.Model):
    contest = models.ForeignKey(Contest, on_delete=models.CASCADE, related_name="teams")
    number = models.PositiveIntegerField(help_text="team number t (1..tau) in file names")
    name = models.CharField(max_length=100)
    approved = models.BooleanField(default=True)
    invitation_code = models.CharField(max_length=32, default=_invitation_code, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["contest", "number"]
        constraints = [models.UniqueConstraint(fields=["contest", "number"], name="team_number_unique"),
                       models.UniqueConstraint(fields=["contest", "name"], name="team_name_unique")]

    def __str__(self):
        return f"team {self.number:03d} {self.name}"


class Membership(models.Model):
    CAPTAIN, MEMBER = "captain", "member"
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=((CAPTAIN, "captain"), (MEMBER, "member")), default=MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="membership_unique")]

    def __str__(self):
        return f"{self.user} in {self.team}"


class Dataset(models.Model):
    """R and O of one (data team number, challenge) of a round (rules §4)."""

    TEAM, BENCHMARK, SAMPLE = "team", "benchmark", "sample"
    KINDS = ((TEAM, "team"), (BENCHMARK, "benchmark"), (SAMPLE, "sample"))

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="datasets")
    kind = models.CharField(max_length=12, choices=KINDS)
    number = models.PositiveIntegerField(help_text="data team number: 1..tau teams, tau+1 benchmark, tau+2.. samples")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.PROTECT, related_name="datasets")
    challenge = models.PositiveSmallIntegerField(choices=CHALLENGES)
    reference = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+")
    original = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+")
    # Figure computed by a job, read by the team's map page (which never parses a trace file):
    # scoring.analyses.population_counts of O, (S, M) float32 .npy.
    population = models.ForeignKey(StoredFile, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # The rules §13 utility figures of the two baselines (reference traces as the anonymized traces, uniform
    # regions), stored by the set's generation job: {"inputs": SHA-256 of what they depend on, "figures":
    # {"reference": {...}, "uniform": {...}}} (contest.services.analyses). The results job only reads them.
    baselines = models.JSONField(null=True, blank=True, editable=False)
    seed = models.BigIntegerField()
    generator = models.CharField(max_length=100, help_text="synthesizer name and version")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["round", "number", "challenge"]
        constraints = [models.UniqueConstraint(fields=["round", "number", "challenge"], name="dataset_unique")]

    def __str__(self):
        return f"{self.round} team{self.number:03d} data{self.challenge:02d} ({self.kind})"

    @property
    def label(self) -> str:
        """2019 file-name stem part: ``team001_data01``."""
        return f"team{self.number:03d}_data{self.challenge:02d}"


class AnonymizedSet(models.Model):
    """An anotraces upload (rules §8.3). Rejected uploads are kept with their errors."""

    PENDING, VALID, INVALID, REJECTED, ERROR = "pending", "valid", "invalid", "rejected", "error"
    STATUSES = ((PENDING, "pending"), (VALID, "valid (s_U >= s_req)"), (INVALID, "invalid (s_U < s_req)"),
                (REJECTED, "rejected (format errors)"), (ERROR, "judge error"))

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="anonymized_sets")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="anonymized_sets")
    seq = models.PositiveIntegerField(help_text="upload number of the team for this dataset, 1-based")
    file = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    errors = models.JSONField(default=list, blank=True)
    error_total = models.PositiveIntegerField(default=0)
    s_u = models.FloatField(null=True, blank=True)
    valid = models.BooleanField(null=True)
    selected = models.BooleanField(default=False, help_text="chosen by the team as final")
    final = models.BooleanField(default=False, help_text="frozen as the final set at phase close")
    uploaded_by = models.ForeignKey(User, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    #: The request that stored it (``uploads.request_key``): a retry of that request finds this row
    #: instead of storing the upload again.
    request_key = models.CharField(max_length=100, null=True, blank=True, unique=True, editable=False)
    # population_counts of the upload, stored by the scoring job (see Dataset.population).
    population = models.ForeignKey(StoredFile, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # The rules §13 utility figures of a final valid set (TP-TV-Top50, TM-EMD, POI accuracy), stored by its
    # set_analyses job at the phase close: {"inputs": SHA-256, "figures": {...}} (contest.services.analyses).
    analyses = models.JSONField(null=True, blank=True, editable=False)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["dataset", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "seq"], name="anonymized_seq_unique"),
            models.UniqueConstraint(fields=["dataset"], condition=models.Q(final=True), name="one_final_per_dataset"),
        ]

    def __str__(self):
        return f"anotraces {self.dataset.label} #{self.seq} ({self.status})"


class PrivacyPreview(models.Model):
    """The judge's sample attacks on one valid upload, against the team's own reference traces R.

    Computed by the low-priority ``privacy_preview`` job after the upload is
    scored (a private pseudonymization, never published). A team's view only:
    nothing here enters the results (no Score or JudgeAttackResult rows).
    """

    anonymized_set = models.OneToOneField(AnonymizedSet, on_delete=models.CASCADE, related_name="preview")
    summary = models.JSONField(help_text="scoring.preview.Preview.as_dict() plus the riskiest users and the version")
    per_user = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+",
                                 help_text="per-user risk CSV (scoring.preview.PER_USER_HEADER)")
    leak_map = models.JSONField(help_text="scoring.preview.leak_map as lists of M counts")
    seed = models.BigIntegerField()
    computed_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"preview of {self.anonymized_set}"


class PublicSet(models.Model):
    """A pseudonymized set published in the attack phase (rules §6)."""

    dataset = models.OneToOneField(Dataset, on_delete=models.PROTECT, related_name="public_set")
    anonymized_set = models.OneToOneField(AnonymizedSet, null=True, blank=True, on_delete=models.PROTECT,
                                          related_name="public_set", help_text="empty for the benchmark")
    pubtraces = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+")
    ptable = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+", help_text="secret ID table")
    commitment = models.CharField(max_length=64, help_text="SHA-256 of the nonce line and the ptable bytes")
    #: 32 hex digits, secret until the results are published (scoring.pseudonymize); empty on sets
    #: pseudonymized before commitments were salted (their commitment is the ptable's plain SHA-256).
    commitment_nonce = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["dataset"]

    def __str__(self):
        return f"pubtraces {self.dataset.label}"

    @property
    def target_team(self):
        return self.dataset.team


class Attack(models.Model):
    """A team's etable or etraces against a public set (rules §8.5)."""

    ETABLE, ETRACES = AttackKind.REIDENTIFICATION.file_kind, AttackKind.TRACE_INFERENCE.file_kind
    KINDS = ((ETABLE, "etable (re-identification)"), (ETRACES, "etraces (trace inference)"))
    PENDING, VALID, REJECTED, ERROR = "pending", "valid", "rejected", "error"
    STATUSES = ((PENDING, "pending"), (VALID, "scored"), (REJECTED, "rejected (format errors)"), (ERROR, "judge error"))

    attacker = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="attacks")
    target = models.ForeignKey(PublicSet, on_delete=models.PROTECT, related_name="attacks")
    kind = models.CharField(max_length=10, choices=KINDS)
    seq = models.PositiveIntegerField()
    file = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    errors = models.JSONField(default=list, blank=True)
    error_total = models.PositiveIntegerField(default=0)
    score = models.FloatField(null=True, blank=True)
    uploaded_by = models.ForeignKey(User, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    #: The request that stored it (``uploads.request_key``): a retry of that request finds this row
    #: instead of storing the upload again.
    request_key = models.CharField(max_length=100, null=True, blank=True, unique=True, editable=False)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["target", "attacker", "kind", "seq"]
        constraints = [models.UniqueConstraint(fields=["attacker", "target", "kind", "seq"], name="attack_seq_unique")]

    def __str__(self):
        return f"{self.kind} by team{self.attacker.number:03d} on {self.target.dataset.label} #{self.seq}"


class RoundFigures(models.Model):
    """A figure of a round's generated data alone (fairness of one challenge, the sample anonymizers),
    computed once by a ``round_figures`` job (contest.services.round_figures); ``inputs`` is the
    SHA-256 of what it depends on, so a stale row is recomputed, never shown."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="figures")
    part = models.CharField(max_length=40, help_text="fairness-<challenge>-<team> or sample_anonymizers")
    inputs = models.CharField(max_length=64)
    data = models.JSONField(null=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["round", "part"], name="round_figures_unique")]

    def __str__(self):
        return f"{self.round} / {self.part}"


class Bundle(models.Model):
    """A zip of many stored files, built once by a ``build_bundle`` job and streamed from the database
    (contest.services.bundles): a round's attack material, or the organizer's export of everything.

    ``inputs`` is the SHA-256 of the bundle's member list (paths, checksums, what each is): a page
    serves the bundle whose inputs equal what it would hold now, so an outdated one is never served.
    The zip itself is the stored file ``file`` (its chunks in the database, like every upload), so any
    machine serves what any worker built; ``size`` and ``sha256`` are the zip's, as ``file`` says.
    A row without a file (one built before zips were stored) counts as not built and is built again.
    """

    ATTACK_MATERIAL, EXPORT = "attack_material", "export"
    KINDS = ((ATTACK_MATERIAL, "attack material of a round"), (EXPORT, "organizer's export of everything"))

    contest = models.ForeignKey(Contest, on_delete=models.CASCADE, related_name="bundles")
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.CASCADE, related_name="bundles")
    kind = models.CharField(max_length=20, choices=KINDS)
    inputs = models.CharField(max_length=64, help_text="SHA-256 of the member list")
    file_name = models.CharField(max_length=200, help_text="the zip's name in a download")
    file = models.ForeignKey(StoredFile, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                             help_text="the zip; empty for a bundle built before zips were stored")
    size = models.BigIntegerField(help_text="bytes of the zip")
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the zip")
    files = models.PositiveIntegerField(help_text="stored files in the zip")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["contest", "kind", "inputs"], name="bundle_unique")]

    def __str__(self):
        return f"{self.contest.slug} {self.kind} {self.file_name}"


class JudgeAttackResult(models.Model):
    """One run of a judge sample attack on a public set, with its output file."""

    public_set = models.ForeignKey(PublicSet, on_delete=models.PROTECT, related_name="judge_attacks")
    algorithm = models.CharField(max_length=60)
    kind = models.CharField(max_length=20, help_text="reidentification or trace_inference")  # scoring.vocabulary.AttackKind
    params = models.JSONField(default=dict)
    seed = models.BigIntegerField()
    output = models.ForeignKey(StoredFile, on_delete=models.PROTECT, related_name="+")
    score = models.FloatField()
    current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["public_set", "algorithm", "id"]
        constraints = [models.UniqueConstraint(fields=["public_set", "algorithm"], condition=models.Q(current=True),
                                               name="one_current_judge_attack")]

    def __str__(self):
        return f"{self.algorithm} on {self.public_set}"


class Score(models.Model):
    """One score row: a set x utility, or a set x attack (DESIGN "Data at rest").

    Re-scoring inserts new rows and marks the old ones ``current=False``.
    """

    UTILITY, REIDENTIFICATION, TRACE_INFERENCE = ScoreKind.UTILITY, ScoreKind.REIDENTIFICATION, ScoreKind.TRACE_INFERENCE
    METRICS = tuple((k.value, k.symbol) for k in ScoreKind)

    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="scores")
    metric = models.CharField(max_length=20, choices=METRICS)
    value = models.FloatField()
    anonymized_set = models.ForeignKey(AnonymizedSet, null=True, blank=True, on_delete=models.PROTECT, related_name="scores")
    attack = models.ForeignKey(Attack, null=True, blank=True, on_delete=models.PROTECT, related_name="scores")
    judge_attack = models.ForeignKey(JudgeAttackResult, null=True, blank=True, on_delete=models.PROTECT, related_name="scores")
    # The score's per-user parts, users in ascending id (scoring.uncertainty.per_user_utility /
    # per_user_attack): {"num": [m]} for a mean, plus "den": [m] for s_T = sum num / sum den. The
    # results job bootstraps them; rows scored before they were kept have none (fixed in replicates).
    per_user = models.JSONField(null=True, blank=True, editable=False)
    current = models.BooleanField(default=True)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["dataset", "metric", "id"]
        # At most one current score per scored object and metric, whatever the deliveries and re-scores.
        constraints = [
            models.UniqueConstraint(fields=["anonymized_set", "metric"], name="one_current_score_per_set",
                                    condition=models.Q(current=True, anonymized_set__isnull=False)),
            models.UniqueConstraint(fields=["attack"], name="one_current_score_per_attack",
                                    condition=models.Q(current=True, attack__isnull=False)),
            models.UniqueConstraint(fields=["judge_attack"], name="one_current_score_per_judge_attack",
                                    condition=models.Q(current=True, judge_attack__isnull=False)),
        ]

    def __str__(self):
        return f"{self.metric} of {self.dataset}: {self.value}"

    @property
    def source(self) -> str:
        if self.attack_id:
            return f"team{self.attack.attacker.number:03d}"
        if self.judge_attack_id:
            return self.judge_attack.algorithm
        return "utility"


class ResultsSnapshot(models.Model):
    """Results (minimums, totals, matrix, awards) computed from the score rows at one time."""

    contest = models.ForeignKey(Contest, on_delete=models.CASCADE, related_name="snapshots")
    data = models.JSONField()
    sha256 = models.CharField(max_length=64)
    published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["contest", "-created_at", "-id"]
        get_latest_by = "created_at"

    def __str__(self):
        return f"{self.contest.slug} results of {self.created_at:%Y-%m-%d %H:%M}"


class Award(models.Model):
    snapshot = models.ForeignKey(ResultsSnapshot, on_delete=models.CASCADE, related_name="awards")
    award = models.CharField(max_length=60, help_text="e.g. overall-1, best-anonymizer-idp")
    title = models.CharField(max_length=120)
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="awards")
    value = models.FloatField()

    class Meta:
        ordering = ["snapshot", "id"]

    def __str__(self):
        return f"{self.title}: {self.team}"


class Job(models.Model):
    """A Celery task's visible state (DESIGN "Work in the background")."""

    QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
    STATUSES = ((QUEUED, "queued"), (RUNNING, "running"), (SUCCEEDED, "succeeded"), (FAILED, "failed"))

    #: One of the kinds declared in ``contest.job_kinds`` (its choices, with their labels, come from there).
    kind = models.CharField(max_length=40, choices=job_kinds.CHOICES)
    contest = models.ForeignKey(Contest, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs")
    args = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=STATUSES, default=QUEUED)
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    celery_id = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: Token of the delivery that claimed the job (``jobs.execute``): only that run may finish it.
    claim = models.CharField(max_length=32, blank=True, editable=False)
    #: When the job's message was last handed to the broker (None: not yet, e.g. the broker was down;
    #: the sweep sends it, a transactional outbox), and how many times.
    sent_at = models.DateTimeField(null=True, blank=True)
    sends = models.PositiveIntegerField(default=0)
    #: The Celery worker (node name, ``name@host``) whose delivery claimed the job last: the System page's
    #: "current job" of each worker (``contest.system``).
    worker = models.CharField(max_length=200, blank=True)
    #: The team whose upload the job is about (None: the judge's own work). A worker's claim serves the
    #: teams of a queue in turn (``jobs.claim_next``), so one team's burst never delays another's upload.
    team = models.ForeignKey("Team", null=True, blank=True, on_delete=models.CASCADE, related_name="+")

    #: The message of a preview job that a newer upload's preview replaced before it ran (``previews``).
    SUPERSEDED = "superseded"

    class Meta:
        ordering = ["-created_at", "-id"]
        # finished_at: the newest end of a job is part of the page cache's state stamp (contest.web.page_cache).
        # team, started_at: when a worker last served the team, the claim's order (jobs.claim_next).
        indexes = [models.Index(fields=["status", "heartbeat_at"]), models.Index(fields=["status", "sent_at"]),
                   models.Index(fields=["finished_at"]), models.Index(fields=["team", "started_at"]),
                   models.Index(fields=["team", "finished_at"])]

    def __str__(self):
        return f"job {self.pk} {self.kind} {self.status}"

    @property
    def retrying(self) -> bool:
        """Queued again after an attempt that did not finish (the worker stopped, a transient error)."""
        return self.status == Job.QUEUED and self.attempts > 0

    @property
    def superseded(self) -> bool:
        """Never run: a newer upload's preview replaced it while it was queued."""
        return self.status == Job.SUCCEEDED and self.message.startswith(Job.SUPERSEDED)


class Announcement(models.Model):
    """A message from the organizers to everyone in the contest (contest page, team page, e-mail)."""

    contest = models.ForeignKey(Contest, on_delete=models.CASCADE, related_name="announcements")
    title = models.CharField(max_length=200)
    body = models.TextField(max_length=5000)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    emailed_to = models.PositiveIntegerField(
        default=0, help_text="e-mails sent: one per address of the approved teams' members and the organizers")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.contest.slug}: {self.title}"


class AuditLog(AppendOnlyModel):
    """Append-only record of uploads, selections, phase changes, re-scores, publications."""

    contest = models.ForeignKey(Contest, null=True, blank=True, on_delete=models.PROTECT, related_name="audit")
    actor = models.ForeignKey(User, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    #: The team whose own action this is (an upload, an attack, a final set chosen): its entry changes that
    #: team's pages only (``contest.services.site_state.team_stamp``). None for every other entry.
    team = models.ForeignKey("Team", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=60)
    object_type = models.CharField(max_length=60, blank=True)
    object_id = models.CharField(max_length=60, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    append_only = "the audit log"

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["team", "id"])]

    def __str__(self):
        return f"{self.action} {self.object_type} {self.object_id}".rstrip()
