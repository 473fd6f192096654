"""Accounts: the API token's rotation and revocation, and deletion by the account's owner.

An API token acts as its user without the password, so whoever learnt a password and made a token with
it would keep the account after its owner changed the password. A new password therefore replaces the
token (whatever set it: the password-change page, a reset by e-mail, the admin, ``changepassword``); the
owner can also revoke it from the account page. Every change is audited.

Deleting an account erases what is personal and keeps what the contest needs. The user row stays (the
audit log, the uploads and the jobs point at it) under an anonymized username that no sign-up can take
(:data:`DELETED_PREFIX` holds a character that usernames may not), without e-mail, name, password, tokens,
second-factor devices, sessions or login records; its memberships stay, so its team's uploads, scores and results stay under the
team's name (a team's name is not personal) and the member shows as "deleted user".
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.db import transaction
from django.db.models.signals import pre_save
from django.dispatch import receiver
from django.utils.translation import gettext_noop
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.authtoken.models import Token

from contest import permissions
from contest.services import audit
from contest.services.errors import ServiceError

#: The start of a deleted account's username; ``~`` is not among the characters a username may have
#: (Django's validator: letters, digits and @.+-_), so no one can sign up as a deleted account.
#: The longest password a login form takes (characters): a longer one is refused before it is hashed, and
#: the longest user name it takes is the accounts' own (:func:`username_max_length`). Both logins check
#: them as field errors, since the login lockout records a failed user name in a 255-character column:
#: a longer one failed that insert, and the login answered 500.
LOGIN_PASSWORD_MAX_LENGTH = 4096


def username_max_length() -> int:
    """The longest user name an account can have (characters): the user model's own column."""
    return get_user_model()._meta.get_field("username").max_length


DELETED_PREFIX = "deleted~"

#: How pages name a deleted account (translated by them: ``contest/templatetags/accounts.py``).
DELETED_NAME = gettext_noop("deleted user")


class AccountError(ServiceError):
    """A refused account operation; the text is the reason, for the user."""

    code = "account_refused"
    status = 409


def rotate_token(user, *, reason: str) -> Token | None:
    """Replace ``user``'s API token by a new one, if there was one (None otherwise: the account page makes
    one when asked). ``reason`` is audited (``"password"``, ``"requested"``)."""
    if not Token.objects.filter(user=user).delete()[0]:
        return None
    token = Token.objects.create(user=user)
    audit.record("rotate_token", actor=user, obj=user, reason=reason)
    return token


def new_token(user) -> Token:
    """A new API token for ``user`` (the old one, if any, stops working), as asked on the account page."""
    Token.objects.filter(user=user).delete()
    token = Token.objects.create(user=user)
    audit.record("rotate_token", actor=user, obj=user, reason="requested")
    return token


def token_of(user) -> Token:
    """``user``'s API token, made now if they have none (a script's login by password: the same token on
    every login until it is rotated or revoked)."""
    return Token.objects.get_or_create(user=user)[0]


def change_email(user, email: str) -> bool:
    """Set ``user``'s e-mail address to ``email`` (audited); False, and nothing written, if it is the same."""
    if email == user.email:
        return False
    get_user_model().objects.filter(pk=user.pk).update(email=email)
    audit.record("update_account", actor=user, obj=user, field="email")
    return True


def revoke_token(user) -> bool:
    """Delete ``user``'s API token without a new one: scripts using it are refused until the owner makes
    another. False when there was none."""
    if not Token.objects.filter(user=user).delete()[0]:
        return False
    audit.record("revoke_token", actor=user, obj=user)
    return True


@receiver(pre_save, sender=get_user_model(), dispatch_uid="tracecup-rotate-token-on-new-password")
def _rotate_on_new_password(sender, instance, raw=False, update_fields=None, **kwargs):
    """A saved user whose password was just set (``set_password`` keeps the raw text until the save) and
    differs from the stored one gets a new token. A hash that Django upgrades at login is the same
    password, so a Django upgrade does not replace everybody's token."""
    new_password = getattr(instance, "_password", None)  # Django's own marker of set_password before save
    if raw or instance.pk is None or new_password is None:
        return
    if update_fields is not None and "password" not in update_fields:
        return
    stored = sender.objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if stored is not None and not check_password(new_password, stored):
        rotate_token(instance, reason="password")


def is_deleted(user) -> bool:
    """Whether ``user`` is an account deleted by its owner (pages show it as "deleted user")."""
    return user is not None and (getattr(user, "username", "") or "").startswith(DELETED_PREFIX)


def delete_account(user) -> None:
    """Erase ``user``'s personal fields and keep its memberships (module docstring), if
    :func:`contest.permissions.can_delete_account` allows it (:class:`AccountError` otherwise). The caller
    has checked the password. Audited before the erasure, with the teams whose results stay."""
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.select_for_update().get(pk=user.pk)
        decision = permissions.can_delete_account(user)
        if not decision:
            raise AccountError(decision.reason)
        old_username = user.username
        audit.record("delete_account", actor=user, obj=user,
                     teams=sorted(user.memberships.values_list("team_id", flat=True)))
        Token.objects.filter(user=user).delete()
        TOTPDevice.objects.filter(user=user).delete()
        user.organized_contests.clear()
        user.username = f"{DELETED_PREFIX}{user.pk}"
        user.email = user.first_name = user.last_name = ""
        user.set_unusable_password()
        user.is_active = user.is_staff = user.is_superuser = False
        user.save()
        _forget_logins(old_username)


def _forget_logins(old_username: str) -> None:
    """The login records that name the account (django-axes keeps usernames with client addresses). Its
    sessions elsewhere end by themselves: an inactive user, or one whose password changed, is signed out
    at its next request."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog  # local: only deletion reads them

    for model in (AccessAttempt, AccessFailureLog, AccessLog):
        model.objects.filter(username=old_username).delete()
