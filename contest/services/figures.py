"""Figures computed once by jobs and stored, so that pages only read them (DESIGN "Pages read; jobs compute").

The team's population map needs the population of its original traces O and of each anonymized
upload. Parsing an upload (up to the contest's size limit, 200 MB by default) inside a page
request is what this module exists to avoid: the generation job stores O's population with the
dataset, the scoring job stores each upload's with the upload. Each figure is a
``scoring.analyses.population_counts`` array, (S, M), saved as float32 ``.npy`` in a
:class:`~contest.models.StoredFile` (about 80 kB before compression for the 2019 sizes).
"""
from __future__ import annotations

import io

import numpy as np

from contest.models import AnonymizedSet, Dataset, StoredFile
from contest.services import data, storage
from scoring.analyses import population_counts


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array, dtype=np.float32), allow_pickle=False)
    return buf.getvalue()


def read_population(stored: StoredFile) -> np.ndarray:
    """(S, M) float64 population mass per slot of the day and region, as stored."""
    return np.load(io.BytesIO(storage.read_bytes(stored)), allow_pickle=False).astype(np.float64)


def store_dataset_population(dataset: Dataset, truth=None) -> StoredFile:
    """Store the population of ``dataset``'s original traces (idempotent); ``truth`` if already parsed."""
    if dataset.population_id is not None:
        return dataset.population
    contest = dataset.round.contest
    grid = contest.grid()
    truth = truth if truth is not None else data.traces(dataset.original, grid)
    stored = storage.store_bytes(_npy(population_counts(grid, truth, contest.slots_per_day)),
                                 f"population_{dataset.label}_{dataset.round.number:03d}.npy",
                                 content_type="application/octet-stream")
    Dataset.objects.filter(pk=dataset.pk, population__isnull=True).update(population=stored)
    dataset.population = stored
    return stored


def store_set_population(aset: AnonymizedSet, anon) -> StoredFile:
    """Store the population of one scored upload (``anon``: its parsed AnonymizedTraces)."""
    contest = aset.dataset.round.contest
    stored = storage.store_bytes(_npy(population_counts(contest.grid(), anon, contest.slots_per_day)),
                                 f"population_{aset.dataset.label}_upload{aset.seq}.npy",
                                 content_type="application/octet-stream")
    AnonymizedSet.objects.filter(pk=aset.pk).update(population=stored)
    aset.population = stored
    return stored
