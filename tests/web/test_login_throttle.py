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


@pytest.mark.django_db
def test_behind_the_trusted_proxy_the_lockout_is_per_client_address_not_per_proxy(settings):
    """Behind nginx every login comes from the proxy's socket: the lockout must key on the client's address
    (X-Real-IP, which nginx overwrites) or five wrong passwords lock the user out for everyone."""
    settings.TRACECUP_TRUSTED_PROXY = True
    user("gamma1")
    attacker = Client(REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="203.0.113.7")  # the proxy's socket, the client
    answers = [attacker.post("/api/auth/token/", {"username": "gamma1", "password": f"x{i}"}).status_code
               for i in range(6)]
    assert answers[-1] == 429
    owner = Client(REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="198.51.100.2")  # same proxy, another client
    assert owner.post("/api/auth/token/", {"username": "gamma1", "password": "pw"}).status_code == 200


@pytest.mark.django_db
def test_without_the_trusted_proxy_a_forged_client_header_does_not_escape_the_lockout(settings):
    settings.TRACECUP_TRUSTED_PROXY = False
    user("delta1")
    answers = [Client(REMOTE_ADDR="203.0.113.9", HTTP_X_REAL_IP=f"10.9.9.{i}").post(
        "/api/auth/token/", {"username": "delta1", "password": f"x{i}"}).status_code for i in range(6)]
    assert answers[-1] == 429  # a new header each try did not reset the count


@pytest.mark.django_db
def test_behind_the_trusted_proxy_a_strangers_reset_requests_do_not_block_the_owners_reset(settings):
    """Behind nginx every request comes from the proxy's socket: keyed on it, a stranger's requests for an
    account's reset blocked its owner's for the cool-off. The count is per client (X-Real-IP) and account."""
    from django.contrib.auth import get_user_model
    from django.core import mail
    settings.TRACECUP_TRUSTED_PROXY = True
    get_user_model().objects.create_user("eps1", email="eps1@example.org", password="pw")
    stranger = Client(REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="203.0.113.7")
    answers = [stranger.post("/password-reset/", {"email": "eps1@example.org"}).status_code for _ in range(8)]
    assert answers[-1] == 429                              # the stranger is throttled
    sent = len(mail.outbox)
    owner = Client(REMOTE_ADDR="172.18.0.5", HTTP_X_REAL_IP="198.51.100.2")  # same proxy, the account's owner
    assert owner.post("/password-reset/", {"email": "eps1@example.org"}).status_code == 302
    assert len(mail.outbox) == sent + 1 and mail.outbox[-1].to == ["eps1@example.org"]
    # and the stranger's count for this account does not throttle its own requests for another account
    assert stranger.post("/password-reset/", {"email": "someone@example.org"}).status_code == 302


@pytest.mark.django_db
def test_a_user_name_or_password_longer_than_any_account_is_refused_by_name_not_answered_500():
    """A hostile login: the lockout records a failed user name in a 255-character column, so a longer one
    failed its insert and the token endpoint answered 500. Both logins refuse it as a field error, and the
    right password still works after it."""
    user("gamma1")
    c = Client()
    for username, password in (("g" * 300, "pw"), ("g" * 1_100_000, "pw"), ("gamma1", "p" * 5000)):
        api = c.post("/api/auth/token/", {"username": username, "password": password})
        assert api.status_code == 400, api.content[:300]
        field = "username" if len(username) > 150 else "password"
        assert [i["field"] for i in api.json()["error"]["issues"]] == [field], api.json()
        web = c.post("/login/", {"username": username, "password": password})
        assert web.status_code == 200 and "_auth_user_id" not in c.session
    assert c.post("/api/auth/token/", {"username": "gamma1", "password": "pw"}).status_code == 200
