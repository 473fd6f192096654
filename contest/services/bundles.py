"""Bundles: many stored files in one zip, with what each is and its checksum.

Every download of several files goes through :func:`write_bundle`: a team's
attack material, the organizer's export of everything, and the contest
archive of ``contest.services.transfer``. A bundle holds the files (each
streamed out of storage, never whole in memory), ``MANIFEST.json`` (path,
size, SHA-256 and what each file is) and ``SHA256SUMS`` in ``sha256sum -c``
format, so whoever receives it can check what arrived.

The attack material (about 1.7 GB of CSV at the 2019 size) and the export are
built **once**, by a ``build_bundle`` job, not per request: a :class:`Plan`
says what a bundle holds now (one query, no file bytes); its ``inputs`` key
(SHA-256 of the member list) names the :class:`~contest.models.Bundle` row,
whose zip is a stored file like any upload (written through
``storage.Packer`` as it is built, never whole in memory), so a web server on
any machine streams what a worker on any other built, with the zip's SHA-256
in its headers. A bundle whose members changed has another key, so an
outdated zip is never served.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC

from django.db import IntegrityError, transaction
from django.utils import timezone

from contest import job_kinds
from contest.models import (
    AnonymizedSet,
    Attack,
    Bundle,
    Contest,
    Dataset,
    Job,
    JudgeAttackResult,
    PublicSet,
    Round,
    StoredFile,
)
from contest.services import jobs, storage
from contest.services.job_messages import say

log = logging.getLogger(__name__)

#: zlib level of the members of a bundle (1 fastest .. 9 smallest).
ZIP_LEVEL = 1


@dataclass(frozen=True)
class Entry:
    """One file of a bundle: the stored file, where it goes, and manifest columns saying what it is.

    Its path in the zip is ``folder/name``, ``name`` defaulting to the stored file's own name.
    """

    file_id: int
    folder: str = ""
    info: dict = field(default_factory=dict)
    name: str | None = None


@dataclass(frozen=True)
class Member:
    """An entry resolved against storage: its path in the zip and the stored file's size and SHA-256."""

    path: str
    file_id: int
    size: int
    sha256: str
    info: dict

    def row(self) -> dict:
        """The member's row of MANIFEST.json."""
        return {"path": self.path, "size": self.size, "sha256": self.sha256, **self.info}


def members(entries: Iterable[Entry]) -> list[Member]:
    """Resolve ``entries`` with one query (names, sizes, hashes; never the bytes); each path once,
    the first entry winning."""
    entries = list(entries)
    files = {f.pk: f for f in StoredFile.objects.filter(pk__in={e.file_id for e in entries})
             .only("pk", "name", "size", "sha256")}
    out, seen = [], set()
    for e in entries:
        stored = files[e.file_id]
        path = "/".join(p for p in (e.folder, e.name or stored.name) if p)
        if path not in seen:
            seen.add(path)
            out.append(Member(path, stored.pk, stored.size, stored.sha256, dict(e.info)))
    return out


def member_info(path: str, built: tuple[int, ...]) -> zipfile.ZipInfo:
    """A zip member's header: dated ``built`` (UTC, year..second) and readable by everyone (mode 0644).

    ``ZipFile.open(name, "w")`` alone dates a member 1980-01-01 and ``writestr`` gives mode 0600: unzipped,
    a team's files would be unreadable to the other users of a shared machine and dated 45 years back."""
    info = zipfile.ZipInfo(path, date_time=built)
    info.compress_type = zipfile.ZIP_DEFLATED
    info._compresslevel = ZIP_LEVEL  # what ZipFile's compresslevel sets on the members it dates itself (3.11)
    info.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
    return info


def write_bundle(dest, entries: Iterable[Entry | Member], *, manifest: dict | None = None,
                 extra: dict[str, str | bytes] | None = None,
                 on_member: Callable[[int, int, Member], None] | None = None) -> dict:
    """Write ``entries`` (each path once: the first entry wins), ``extra`` files, MANIFEST.json and SHA256SUMS.

    Args:
        dest: a path or a writable binary file object.
        entries: :class:`Entry` rows, or :class:`Member` rows already resolved by :func:`members`.
        manifest: fields of MANIFEST.json besides ``files`` (what the bundle is, when it was made).
        extra: further members written verbatim (e.g. ``results.json``), not listed in the checksums.
        on_member: called as ``on_member(i, n, member)`` before member ``i`` of ``n`` is written (progress).
    Returns:
        The MANIFEST.json document; its ``files`` rows are ``{path, size, sha256, **info}``.
    """
    entries = list(entries)
    rows = entries if all(isinstance(e, Member) for e in entries) else members(entries)
    doc = dict(manifest or {})
    built = timezone.localtime(timezone.now(), UTC).timetuple()[:6]  # every member's date: the build time
    # Deflate level 1, not the default 6: a 2019-size round's attack material (86 files, 881 MB of CSV),
    # built while the judge attacks run, takes 11.8 s for a 283 MB zip instead of 43.7 s for 240 MB.
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL) as zf:
        for i, member in enumerate(rows):
            if on_member is not None:
                on_member(i, len(rows), member)
            stored = StoredFile.objects.get(pk=member.file_id)  # its content streams from its chunks
            with zf.open(member_info(member.path, built), "w", force_zip64=True) as out:
                for chunk in storage.iter_bytes(stored):
                    out.write(chunk)
        for name, content in (extra or {}).items():
            zf.writestr(member_info(name, built), content)
        doc["files"] = [m.row() for m in rows]
        zf.writestr(member_info("MANIFEST.json", built), json.dumps(doc, indent=2, default=str))
        zf.writestr(member_info("SHA256SUMS", built), "".join(f"{m.sha256}  {m.path}\n" for m in rows))
    return doc


# ---------------------------------------------------------------- bundles built once
@dataclass
class Plan:
    """What a bundle of ``kind`` holds now: its members, manifest fields and extra files.

    ``inputs`` (SHA-256 of all of it) keys the built :class:`~contest.models.Bundle`.
    """

    kind: str
    contest: Contest
    round: Round | None
    members: list[Member]
    manifest: dict
    extra: dict[str, str] = field(default_factory=dict)

    @functools.cached_property
    def inputs(self) -> str:  # read by current(), build_job(), request_build() and file_name: hashed once
        doc = {"kind": self.kind, "manifest": self.manifest, "files": [m.row() for m in self.members],
               "extra": {k: hashlib.sha256(v.encode()).hexdigest() for k, v in self.extra.items()}}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()

    @property
    def file_name(self) -> str:
        """The zip's name in a download and in storage (the inputs' first 12 hex digits keep versions apart)."""
        where = f"_round{self.round.number}" if self.round is not None else ""
        stem = "attack_material" if self.kind == Bundle.ATTACK_MATERIAL else "everything"
        return f"{stem}_{self.contest.slug}{where}_{self.inputs[:12]}.zip"

    @property
    def job_args(self) -> dict:
        return {"bundle": self.kind, "round_id": self.round.pk if self.round is not None else None}


def attack_material_plan(round_: Round) -> Plan:
    """A round's attack material: every public set's pubtraces and the matching reference traces (the
    benchmark's too), and the round's info_region / info_time; never an ID table or original traces."""
    public_sets = (PublicSet.objects.filter(dataset__round=round_).select_related("dataset")
                   .order_by("dataset__number", "dataset__challenge"))
    entries = []
    for ps in public_sets:
        ds = ps.dataset
        info = {"team": ds.number, "challenge": ds.challenge, "benchmark": ds.kind == Dataset.BENCHMARK}
        entries.append(Entry(ps.pubtraces_id, info={"content": "pubtraces", **info}))
        entries.append(Entry(ds.reference_id, info={"content": "reference", **info}))
    for file_id, label in ((round_.info_region_id, "info_region"), (round_.info_time_id, "info_time")):
        if file_id is not None:
            entries.append(Entry(file_id, info={"content": label, "team": None, "challenge": None,
                                                "benchmark": False}))
    return Plan(Bundle.ATTACK_MATERIAL, round_.contest, round_, members(entries),
                {"contest": round_.contest.slug, "round": round_.number, "round_name": round_.name})


def export_plan(contest: Contest) -> Plan:
    """Every stored file of ``contest`` (data, uploads, public sets, ID tables, judge outputs) and the
    latest results snapshot as ``results.json``: the organizer's archive of the contest."""
    items: list[Entry] = []

    def add(folder, stored_id, **info):
        if stored_id:
            items.append(Entry(stored_id, folder, info))

    for r in contest.rounds.all():
        add(f"round{r.number}", r.info_region_id, what="info_region")
        add(f"round{r.number}", r.info_time_id, what="info_time")
    for ds in Dataset.objects.filter(round__contest=contest).select_related("round"):
        folder = f"round{ds.round.number}/data"
        add(folder, ds.reference_id, what="reference", kind=ds.kind, team=ds.number, challenge=ds.challenge)
        add(folder, ds.original_id, what="original", kind=ds.kind, team=ds.number, challenge=ds.challenge)
    for a in AnonymizedSet.objects.filter(dataset__round__contest=contest).select_related("dataset__round"):
        add(f"round{a.dataset.round.number}/anonymized/{a.dataset.label}_{a.seq:02d}", a.file_id, what="anotraces",
            team=a.dataset.number, challenge=a.dataset.challenge, seq=a.seq, status=a.status, s_u=a.s_u,
            final=a.final)
    for ps in PublicSet.objects.filter(dataset__round__contest=contest).select_related("dataset__round"):
        folder = f"round{ps.dataset.round.number}/public"
        add(folder, ps.pubtraces_id, what="pubtraces", team=ps.dataset.number, challenge=ps.dataset.challenge)
        add(folder, ps.ptable_id, what="ptable", team=ps.dataset.number, challenge=ps.dataset.challenge,
            commitment=ps.commitment, commitment_nonce=ps.commitment_nonce)
    for at in Attack.objects.filter(target__dataset__round__contest=contest).select_related(
            "attacker", "target__dataset__round"):
        add(f"round{at.target.dataset.round.number}/attacks/"
            f"team{at.attacker.number:03d}_{at.target.dataset.label}_{at.kind}{at.seq}",
            at.file_id, what=at.kind, attacker=at.attacker.number, target=at.target.dataset.label,
            status=at.status, score=at.score)
    for jr in (JudgeAttackResult.objects.filter(public_set__dataset__round__contest=contest)
               .select_related("public_set__dataset__round")):
        add(f"round{jr.public_set.dataset.round.number}/judge/{jr.public_set.dataset.label}_{jr.algorithm}_{jr.pk}",
            jr.output_id, what="judge_attack", algorithm=jr.algorithm, score=jr.score, current=jr.current)
    snap = contest.snapshots.order_by("-created_at", "-id").first()
    extra = {"results.json": json.dumps(snap.data, indent=2, default=str)} if snap is not None else {}
    return Plan(Bundle.EXPORT, contest, None, members(items), {"contest": contest.slug}, extra)


def plan(contest: Contest, kind: str, round_: Round | None = None) -> Plan:
    """The plan of the bundle ``kind`` (``round_`` for the attack material)."""
    if kind == Bundle.ATTACK_MATERIAL:
        return attack_material_plan(round_)
    if kind == Bundle.EXPORT:
        return export_plan(contest)
    raise ValueError(f"unknown bundle kind {kind!r}")


def current(p: Plan) -> Bundle | None:
    """The built bundle holding exactly what ``p`` says (its zip stored), if there is one."""
    return (Bundle.objects.filter(contest=p.contest, kind=p.kind, inputs=p.inputs, file__isnull=False)
            .select_related("file").first())


def build_job(p: Plan) -> Job | None:
    """The queued or running job that builds ``p`` (its inputs), if there is one."""
    for job in Job.objects.filter(contest=p.contest, kind=job_kinds.BUILD_BUNDLE, status__in=(Job.QUEUED, Job.RUNNING),
                                  args__bundle=p.kind):
        if job.args.get("round_id") == p.job_args["round_id"] and job.args.get("inputs") == p.inputs:
            return job
    return None


def request_build(p: Plan, *, user=None) -> Job | None:
    """Queue the job that builds ``p``, unless it is built or a job building it is queued or running.

    Returns that job, or None when the bundle is built already.
    """
    if current(p) is not None:
        return None
    with transaction.atomic():
        Contest.objects.select_for_update().filter(pk=p.contest.pk).first()  # one request queues it
        return build_job(p) or jobs.create_job(job_kinds.BUILD_BUNDLE, contest=p.contest, user=user, inputs=p.inputs,
                                               **p.job_args)


def build(p: Plan, *, job=None) -> Bundle:
    """Write ``p``'s zip into storage as it is built (one stored file, recorded only once complete, so
    a half-written zip is never served) and record it; older bundles of the same kind are forgotten."""
    found = current(p)
    if found is not None:
        return found
    with storage.Packer() as out:
        write_bundle(out, p.members, extra=p.extra,
                     manifest={**p.manifest, "created_at": timezone.now().isoformat(), "inputs": p.inputs},
                     on_member=lambda i, n, m: jobs.progress(job, 0.95 * i / max(n, 1), say("adding %(path)s", path=m.path)))
        jobs.progress(job, 0.96, say("storing the zip"))
        stored = out.store(p.file_name, content_type="application/zip")
    fields = {"round": p.round, "file_name": p.file_name, "file": stored, "size": stored.size,
              "sha256": stored.sha256, "files": len(p.members), "created_at": timezone.now()}
    try:
        with transaction.atomic():
            bundle, _created = Bundle.objects.update_or_create(contest=p.contest, kind=p.kind, inputs=p.inputs,
                                                               defaults=fields)
    except IntegrityError:  # another worker recorded the same bundle first
        bundle = Bundle.objects.get(contest=p.contest, kind=p.kind, inputs=p.inputs)
    _remove_older(bundle)
    return bundle


def _remove_older(bundle: Bundle) -> None:
    """Forget the older bundles of ``bundle``'s kind (and round): their contents are outdated. Their zips
    stay stored (stored files are append-only), so a download already streaming one reads it to the end."""
    Bundle.objects.filter(contest=bundle.contest, kind=bundle.kind, round=bundle.round).exclude(pk=bundle.pk).delete()


@jobs.handles(job_kinds.BUILD_BUNDLE)
def build_bundle_job(job, bundle: str, round_id: int | None = None, inputs: str = "") -> str:
    """Build the bundle as it is now (``inputs``, the key seen when it was queued, may be outdated by then:
    the newer contents win)."""
    contest = job.contest
    round_ = Round.objects.get(pk=round_id) if round_id is not None else None
    built = build(plan(contest, bundle, round_), job=job)
    return say("%(file)s: %(files)s files, %(size)s bytes, SHA-256 %(sha256)s", file=built.file_name,
               files=built.files, size=built.size, sha256=built.sha256)
