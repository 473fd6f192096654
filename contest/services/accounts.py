"""Accounts: the API token's rotation and revocation.

An API token acts as its user without the password, so whoever learnt a password and made a token with
it would keep the account after its owner changed the password. A new password therefore replaces the
token (whatever set it: the password-change page, a reset by e-mail, the admin, ``changepassword``); the
owner can also revoke it from the account page. Every change is audited.
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.db.models.signals import pre_save
from django.dispatch import receiver
from rest_framework.authtoken.models import Token

from contest.services import audit


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
