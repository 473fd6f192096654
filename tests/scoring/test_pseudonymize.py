"""Pseudonymization (rules §6): permutation, pubtraces, ID table, commitment."""
from __future__ import annotations

import gzip
import hashlib
from collections import Counter

import numpy as np
import pytest

from scoring import io as sio
from scoring.grid import Grid
from scoring.pseudonymize import commitment_of, pseudonymize, ptable_bytes, secure_permutation, verify_commitment
from scoring.traces import AnonymizedTraces, SetTable

GRID = Grid()


def anon_of(m=6, L=5, seed=0):
    rng = np.random.default_rng(seed)
    sets = SetTable.from_sets(GRID.M, [[0, 1], [2, 3, 4]])
    events = rng.integers(0, GRID.M + 3, (m, L)).astype(np.int32)
    return AnonymizedTraces(np.arange(1, m + 1), np.arange(11, 11 + L), events, sets)


def test_pseudonyms_follow_the_permutation_and_keep_the_events():
    anon = anon_of()
    p = pseudonymize(anon, seed=7)
    assert list(p.pse_ids) == [7, 8, 9, 10, 11, 12]                       # m+1..2m
    assert np.array_equal(p.pubtraces.user_ids, p.pse_ids)
    assert sorted(p.user_ids) == [1, 2, 3, 4, 5, 6]                      # a permutation
    assert np.array_equal(p.pubtraces.time_ids, anon.time_ids)
    # Pseudonym p_k carries exactly the events of user f(p_k).
    assert np.array_equal(p.pubtraces.events, anon.events[p.user_ids - 1])
    assert p.pubtraces.sets is anon.sets


def test_seed_makes_it_reproducible_and_no_seed_is_random():
    anon = anon_of(m=50)
    assert np.array_equal(pseudonymize(anon, seed=1).user_ids, pseudonymize(anon, seed=1).user_ids)
    assert not np.array_equal(pseudonymize(anon, seed=1).user_ids, pseudonymize(anon, seed=2).user_ids)
    secure = {tuple(pseudonymize(anon).user_ids) for _ in range(5)}
    assert len(secure) == 5                                              # 50! outcomes


def test_secure_permutation_is_uniform_on_three_users():
    counts = Counter(tuple(secure_permutation(3)) for _ in range(6000))
    assert len(counts) == 6
    expected = 1000.0
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 30.0                       # 5 degrees of freedom: P(chi2 > 30) ~ 1.5e-5
    assert list(secure_permutation(1)) == [0]


def test_commitment_is_the_sha256_of_a_secret_nonce_and_the_ptable_file(tmp_path):
    import subprocess
    p = pseudonymize(anon_of(), seed=3)
    data = ptable_bytes(p.pse_ids, p.user_ids)
    assert data.startswith(b"pse_id,user_id\n7,") and data.endswith(b"\n") and b"\r" not in data
    assert len(p.nonce) == 32 and int(p.nonce, 16) >= 0
    assert p.commitment == hashlib.sha256(p.nonce.encode() + b"\n" + data).hexdigest()
    assert p.commitment == commitment_of(p.pse_ids, p.user_ids, p.nonce)
    assert p.commitment != hashlib.sha256(data).hexdigest()             # not the table's own hash: no oracle
    path = tmp_path / "ptable.csv"
    sio.write_ptable(p.pse_ids, p.user_ids, path)
    shell = subprocess.run(f"(echo {p.nonce}; cat {path}) | sha256sum", shell=True, capture_output=True, text=True)  # noqa: S602 - the organizer's documented shell pipeline is what is tested; the path is tmp_path
    assert shell.stdout.split()[0] == p.commitment                     # the organizer's check after the reveal
    assert verify_commitment(p.commitment, path, p.nonce)
    assert verify_commitment(p.commitment.upper(), data.replace(b"\n", b"\r\n"), p.nonce.upper())  # CRLF copy
    assert verify_commitment(p.commitment, gzip.compress(data), p.nonce)
    assert verify_commitment(p.commitment, (p.pse_ids, p.user_ids), p.nonce)
    assert not verify_commitment(p.commitment, (p.pse_ids, p.user_ids), "0" * 32)
    swapped = p.user_ids.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    assert not verify_commitment(p.commitment, (p.pse_ids, swapped), p.nonce)
    assert pseudonymize(anon_of()).nonce != pseudonymize(anon_of()).nonce   # os.urandom without a seed


def test_pubtraces_and_ptable_files_read_back():
    anon = anon_of(m=4, L=3)
    p = pseudonymize(anon, seed=11)
    pub = sio.read_pubtraces(sio.to_bytes(sio.write_pubtraces, p.pubtraces), GRID)
    assert np.array_equal(pub.user_ids, [5, 6, 7, 8])
    texts = np.array(sio.set_texts(pub.sets), dtype=object)[pub.events]
    assert np.array_equal(texts, np.array(sio.set_texts(anon.sets), dtype=object)[anon.events[p.user_ids - 1]])
    pse, usr = sio.read_ptable(p.ptable_bytes())
    assert np.array_equal(pse, p.pse_ids) and np.array_equal(usr, p.user_ids)


def test_empty_set_is_refused():
    with pytest.raises(ValueError):
        pseudonymize(AnonymizedTraces(np.zeros(0, int), np.arange(1, 3), np.zeros((0, 2), np.int32),
                                      SetTable.singletons(GRID.M)))
