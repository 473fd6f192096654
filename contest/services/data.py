"""Bridge between stored files and the pure ``scoring`` library: parse, write, cache.

The stored (exact) bytes are decompressed by ``storage`` and handed to the
``scoring.io`` readers, which validate them and return numpy containers.
Parsed trace files of a dataset are cached per process (keyed by the file's
SHA-256, which never changes for a stored file), because a phase close or a
batch of attacks re-reads the same original traces many times. Across
processes, the first job that parses a reference, original or pubtraces file
stores the arrays as its :class:`~contest.models.ParsedCopy`; every later job,
in whichever worker, loads those (about 35 ms for a 2019-size set) instead of
parsing the CSV again (0.4-0.7 s): a round reads each set's files in a dozen
jobs (generation, previews, close, figures, analyses, scoring).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections import OrderedDict

from django.db import IntegrityError, transaction

from contest.models import ParsedCopy, StoredFile
from contest.services import storage
from scoring import io as sio
from scoring import uncertainty
from scoring.io import arrays
from scoring.traces import AnonymizedTraces, Traces
from scoring.vocabulary import AttackKind

log = logging.getLogger(__name__)

_CACHE: OrderedDict[tuple, object] = OrderedDict()
_CACHE_SIZE = 16


def _cached(key, build):
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = build()
    _CACHE[key] = value
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def traces(stored: StoredFile, grid):
    """Reference/original traces of a generated dataset file -> ``scoring.traces.Traces``."""
    return _cached(("traces", stored.sha256, grid), lambda: _parsed(stored, grid, Traces, sio.read_traces))


def pubtraces(stored: StoredFile, grid):
    return _cached(("pub", stored.sha256, grid), lambda: _parsed(stored, grid, AnonymizedTraces, sio.read_pubtraces))


def _grid_key(grid) -> str:
    """SHA-256 of the grid's parameters (a file is validated against its grid)."""
    return hashlib.sha256(json.dumps(dataclasses.asdict(grid), sort_keys=True, default=str).encode()).hexdigest()


def _parsed(stored: StoredFile, grid, kind: type, read):
    """``read(csv bytes, grid)`` of ``stored`` (a ``kind``), from its parsed copy if one is stored; else
    parsed now and its copy stored for the next job. The copy's ``reader`` is the arrays' layout and
    version (``scoring.io.arrays.LAYOUT``). A copy that does not load (its own SHA-256 check) is logged
    and the CSV parsed: the copy is a cache, the CSV the truth."""
    key, reader = _grid_key(grid), arrays.LAYOUT[kind]
    copy = (ParsedCopy.objects.filter(source=stored, reader=reader, grid=key)
            .select_related("arrays").first())
    if copy is not None:
        try:
            return arrays.from_bytes(storage.read_bytes(copy.arrays), kind)
        except (OSError, ValueError) as exc:
            log.warning("parsed copy %s of stored file %s does not load (%s): parsing the CSV", copy.pk,
                        stored.pk, exc)
    value = read(storage.read_csv_bytes(stored), grid)
    if copy is None:
        try:
            with transaction.atomic():
                ParsedCopy.objects.create(source=stored, reader=reader, grid=key, arrays=storage.store_bytes(
                    arrays.to_bytes(value), f"{stored.name}.npy", content_type="application/octet-stream"))
        except IntegrityError:
            pass  # another job stored the same copy first
    return value


def ptable(stored: StoredFile):
    """(pse_ids, user_ids) of an ID table, sorted by pseudonym."""
    return sio.read_ptable(storage.read_csv_bytes(stored))


def _limit(max_bytes):
    return max(int(max_bytes), sio.DEFAULT_MAX_BYTES) if max_bytes else sio.DEFAULT_MAX_BYTES


def anotraces(csv_bytes: bytes, grid, truth, max_bytes: int | None = None):
    return sio.read_anotraces(csv_bytes, grid, truth, max_bytes=_limit(max_bytes))


def etable(csv_bytes: bytes, n_pseudonyms: int, m: int, max_bytes: int | None = None):
    return sio.read_etable(csv_bytes, n_pseudonyms, m, max_bytes=_limit(max_bytes))


def etraces(csv_bytes: bytes, grid, truth, max_bytes: int | None = None):
    return sio.read_etraces(csv_bytes, grid, truth, max_bytes=_limit(max_bytes))


def traces_csv(tr) -> bytes:
    return sio.to_bytes(sio.write_traces, tr)


def anotraces_csv(anon) -> bytes:
    return sio.to_bytes(sio.write_anotraces, anon)


def pubtraces_csv(anon) -> bytes:
    return sio.to_bytes(sio.write_pubtraces, anon)


def etable_csv(user_ids) -> bytes:
    return sio.to_bytes(sio.write_etable, user_ids)


def etraces_csv(tr) -> bytes:
    return sio.to_bytes(sio.write_etraces, tr)


def secret_truth(public_set, kind: AttackKind) -> dict:
    """What scoring an attack of ``kind`` on ``public_set`` needs of the secrets, read only if needed:
    ``true_users`` (the ID table, re-identification) or ``truth`` (the original traces O, trace inference)."""
    if AttackKind(kind) is AttackKind.REIDENTIFICATION:
        return {"true_users": ptable(public_set.ptable)[1]}
    dataset = public_set.dataset
    return {"truth": traces(dataset.original, dataset.round.contest.grid())}


def scored_attack(contest, kind: AttackKind, estimate, secret: dict) -> tuple[float, dict]:
    """(s_I or s_T, its per-user parts) of an attack's output under the contest's parameters, in one pass
    (``scoring.uncertainty.scored_attack``; ``secret``: see :func:`secret_truth`)."""
    return uncertainty.scored_attack(kind, contest.grid(), estimate, true_users=secret.get("true_users"),
                                     truth=secret.get("truth"), lambda_t=contest.lambda_t,
                                     hospital_weight=contest.hospital_weight)


def per_user_json(parts: dict) -> dict:
    """A score's per-user parts (``scoring.uncertainty.per_user_*``: name -> (m,) array) as JSON lists."""
    return {k: [float(x) for x in v] for k, v in parts.items()}


def validation_issues(exc) -> tuple[list[dict], int]:
    """The structured issues of a ``scoring.errors.ValidationError`` as JSON-able dicts, and the total."""
    issues = [{"line": i.line, "column": i.column, "value": i.value, "message": i.message,
               "code": getattr(i, "code", ""), "params": dict(getattr(i, "params", {}) or {})}
              for i in getattr(exc, "issues", [])]
    if not issues:
        issues = [{"line": None, "column": None, "value": None, "message": str(exc)}]
    return issues, int(getattr(exc, "total", len(issues)) or len(issues))
