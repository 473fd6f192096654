"""Login throttling (django-axes) on the web login and the API token endpoint, and the CSP header."""
from __future__ import annotations

import pytest
from django.test import Client


def user(username):
    from django.contrib.auth import get_user_model
    return get_user_model().objects.create_user(username, password="pw")


@pytest.mark.django_db
def test_a_hundred_wrong_passwords_lock_the_web_login_even_for_the_right_one():
    user("alpha1")
    c = Client()
    answers = [c.post("/login/", {"username": "alpha1", "password": f"wrong{i}"}).status_code for i in range(100)]
    assert answers[:4] == [200] * 4 and set(answers[4:]) == {429}  # the form again; the 5th failure locks
    right = c.post("/login/", {"username": "alpha1", "password": "pw"})
    assert right.status_code == 429 and "Too many failed logins" in right.content.decode()
    assert "_auth_user_id" not in c.session
    other = Client(REMOTE_ADDR="10.0.0.9")                # the real user elsewhere is not locked out
    assert other.post("/login/", {"username": "alpha1", "password": "pw"}).status_code == 302


@pytest.mark.django_db
def test_a_hundred_wrong_passwords_lock_the_api_token_endpoint():
    user("beta1")
    c = Client()
    answers = [c.post("/api/auth/token/", {"username": "beta1", "password": f"x{i}"}).status_code for i in range(100)]
    assert set(answers[:4]) == {400} and set(answers[4:]) == {429}
    right = c.post("/api/auth/token/", {"username": "beta1", "password": "pw"})
    assert right.status_code == 429 and right.json()["error"]["code"] == "locked_out" and "token" not in right.json()


@pytest.mark.django_db
def test_pages_carry_a_content_security_policy_without_inline_scripts(client):
    policy = client.get("/").headers["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["script-src"] == "'self'" and "unsafe" not in directives["script-src"]
    assert directives["default-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
