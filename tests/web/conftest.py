"""Fixtures of the page tests: the core's small contest (tests/contest/conftest.py), reused by import."""
from __future__ import annotations

import pytest

from tests.contest.conftest import (  # noqa: F401
    anonymize_csv,
    closed_unobfuscated,
    contest_spec,
    eager_celery,
    generated,
    make_contest,
    move_phase,
    user,
)


@pytest.fixture
def client_for(client, db):
    """A test client logged in as ``username`` (the contest spec's users have password ``pw``)."""
    from django.test import Client

    def make(username):
        c = Client()
        c.force_login(user(username))
        return c
    return make
