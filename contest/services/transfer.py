"""Export and import a whole contest, files included, byte for byte.

The archive is a zip holding ``contest.json`` and ``files/<sha256>`` (the
exact original bytes of every stored file the contest refers to). Rows are
numbered per model in primary-key order (export-local ids), foreign keys use
those numbers, users are referenced by username, so an export of an import
is the same JSON (apart from the audit trail, which records the import).

Not exported: jobs (operational state of the workers, whose arguments are
database ids) and team invitation codes (registration secrets; new ones are
drawn on import).
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.utils.dateparse import parse_datetime

from contest import models as m
from contest.services import audit, bundles, storage
from scoring.io import archive

FORMAT = "tracecup-contest-export"
VERSION = 1
#: contest.json of a 2019-size contest is a few MB (rows, not files); anything far beyond is not ours.
MAX_INDEX_BYTES = 512 << 20

# (key, model, filter from the contest) in dependency order.
SECTIONS = [
    ("rounds", m.Round, "contest"),
    ("phases", m.Phase, "round__contest"),
    ("teams", m.Team, "contest"),
    ("memberships", m.Membership, "team__contest"),
    ("datasets", m.Dataset, "round__contest"),
    ("anonymized_sets", m.AnonymizedSet, "dataset__round__contest"),
    ("public_sets", m.PublicSet, "dataset__round__contest"),
    ("attacks", m.Attack, "attacker__contest"),
    ("judge_attack_results", m.JudgeAttackResult, "public_set__dataset__round__contest"),
    ("scores", m.Score, "dataset__round__contest"),
    ("snapshots", m.ResultsSnapshot, "contest"),
    ("awards", m.Award, "snapshot__contest"),
    ("audit", m.AuditLog, "contest"),
]
#: Not carried over: ids and invitation codes are the importing site's, the compressed size its storage's,
#: and an upload's request key (the idempotency key of the request that stored it) a fact of this site's
#: requests, unique here: imported into the same site beside the original, it would collide.
SKIP_FIELDS = {"id", "invitation_code", "compressed_size", "request_key"}
User = None


def _fields(model):
    return [f for f in model._meta.concrete_fields if f.name not in SKIP_FIELDS]


def _value(f, obj, ids):
    if isinstance(f, models.ForeignKey):
        target = getattr(obj, f.attname)
        if target is None:
            return None
        rel = f.related_model
        if rel is get_user_model():
            return getattr(obj, f.name).username
        return ids[rel][target]
    v = getattr(obj, f.attname)
    if isinstance(v, datetime):
        return v.isoformat()
    return v


def _files_of(contest) -> list:
    """Every stored file the contest refers to, in id order."""
    refs = set()
    for r in m.Round.objects.filter(contest=contest):
        # the organizer's training data too: the export is the organizers' (and a row must find its file)
        refs.update(x for x in (r.model_file_id, r.info_region_id, r.info_time_id, r.training_data_id) if x)
    for d in m.Dataset.objects.filter(round__contest=contest):
        refs.update(x for x in (d.reference_id, d.original_id, d.population_id) if x)
    for a in m.AnonymizedSet.objects.filter(dataset__round__contest=contest).values("file_id", "population_id"):
        refs.update(x for x in a.values() if x)
    for p in m.PublicSet.objects.filter(dataset__round__contest=contest):
        refs.update((p.pubtraces_id, p.ptable_id))
    refs.update(m.Attack.objects.filter(attacker__contest=contest).values_list("file_id", flat=True))
    refs.update(m.JudgeAttackResult.objects.filter(public_set__dataset__round__contest=contest)
                .values_list("output_id", flat=True))
    # the rows only: the bundle streams each file's content out of storage on its own
    return list(m.StoredFile.objects.filter(pk__in=refs).order_by("pk"))


def export_contest(contest: m.Contest, dest) -> dict:
    """Write the contest archive to ``dest`` (path or binary file); returns the JSON document."""
    ids: dict = {m.Contest: {contest.pk: 1}}
    files = _files_of(contest)
    ids[m.StoredFile] = {f.pk: i + 1 for i, f in enumerate(files)}
    doc = {"format": FORMAT, "version": VERSION,
           "contest": {f.name: _value(f, contest, ids) for f in _fields(m.Contest)},
           "organizers": sorted(contest.organizers.values_list("username", flat=True)),
           "files": [{f.name: _value(f, sf, ids) for f in _fields(m.StoredFile)} for sf in files]}
    for key, model, path in SECTIONS:
        rows = list(model.objects.filter(**{path: contest}).order_by("pk"))
        ids[model] = {r.pk: i + 1 for i, r in enumerate(rows)}
        doc[key] = [{f.name: _value(f, r, ids) for f in _fields(model)} for r in rows]
    # Files by content: the same content stored twice (e.g. equal figures) is one member.
    bundles.write_bundle(dest, (bundles.Entry(sf.pk, "files", name=sf.sha256, info={"name": sf.name}) for sf in files),
                         manifest={"format": FORMAT, "version": VERSION, "contest": contest.slug},
                         extra={"contest.json": json.dumps(doc, indent=1, sort_keys=True)})
    return doc


def _user(username):
    if username is None:
        return None
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save()
    return user


@transaction.atomic
def import_contest(source, *, slug: str | None = None, actor=None) -> m.Contest:
    """Recreate a contest from an export archive (``source``: path or binary file)."""
    with archive.zip_members(source) as member:
        doc = json.loads(member("contest.json", MAX_INDEX_BYTES))
        if doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ValueError(f"not a {FORMAT} version {VERSION} archive")
        new: dict = {}

        def build(model, row):
            kwargs = {}
            for f in _fields(model):
                if f.name not in row:
                    continue
                v = row[f.name]
                if isinstance(f, models.ForeignKey):
                    rel = f.related_model
                    if rel is get_user_model():
                        kwargs[f.name] = _user(v)
                    else:
                        kwargs[f.name] = new[rel][v] if v is not None else None
                elif isinstance(f, models.DateTimeField) and v is not None:
                    kwargs[f.name] = parse_datetime(v)
                else:
                    kwargs[f.name] = v
            return kwargs

        new[m.StoredFile] = {}
        for i, row in enumerate(doc["files"], start=1):
            # the index declares each file's size: a member larger than that is refused while read
            content = member(f"files/{row['sha256']}", int(row["size"]))
            if hashlib.sha256(content).hexdigest() != row["sha256"]:
                raise ValueError(f"file {row['name']} does not match its SHA-256")
            kwargs = build(m.StoredFile, row)
            new[m.StoredFile][i] = storage.store_bytes(
                content, kwargs["name"], user=kwargs.get("uploaded_by"),
                content_type=kwargs.get("content_type", "text/csv"), created_at=kwargs.get("created_at"))
    crow = dict(doc["contest"])
    if slug:
        crow["slug"] = slug
    if m.Contest.objects.filter(slug=crow["slug"]).exists():
        raise ValueError(f"a contest with slug {crow['slug']!r} exists; import with another slug")
    contest = m.Contest.objects.create(**build(m.Contest, crow))
    contest.organizers.set([_user(u) for u in doc["organizers"]])
    new[m.Contest] = {1: contest}
    for key, model, _ in SECTIONS:
        new[model] = {}
        for i, row in enumerate(doc[key], start=1):
            kwargs = build(model, row)
            if model is m.AuditLog:
                obj = model(**kwargs)
                obj.save()
            else:
                obj = model.objects.create(**kwargs)
            new[model][i] = obj
    audit.record("import_contest", contest=contest, actor=actor, obj=contest, source_slug=doc["contest"]["slug"])
    return contest
