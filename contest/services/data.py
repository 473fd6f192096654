"""Bridge between stored files and the pure ``scoring`` library: parse, write, cache.

The stored (exact) bytes are decompressed by ``storage`` and handed to the
``scoring.io`` readers, which validate them and return numpy containers.
Parsed trace files of a dataset are cached per process (keyed by the file's
SHA-256, which never changes for a stored file), because a phase close or a
batch of attacks re-reads the same original traces many times.
"""
from __future__ import annotations

from collections import OrderedDict

from contest.models import StoredFile
from contest.services import storage
from scoring import io as sio
from scoring import uncertainty
from scoring.vocabulary import AttackKind

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
    return _cached(("traces", stored.sha256, grid), lambda: sio.read_traces(storage.read_csv_bytes(stored), grid))


def pubtraces(stored: StoredFile, grid):
    return _cached(("pub", stored.sha256, grid), lambda: sio.read_pubtraces(storage.read_csv_bytes(stored), grid))


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
