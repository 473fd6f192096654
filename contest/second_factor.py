"""A second factor (TOTP, django-otp) for the accounts that can change a contest or the whole site.

A stolen organizer password is a stolen contest (its secrets, its results), and a stolen superuser
password the whole site, so ``TRACECUP_REQUIRE_2FA_FOR`` (:func:`contest.permissions.needs_second_factor`)
asks them for a code from an authenticator app:

- a session that signed in with the password of an account that has a confirmed device is *pending*
  until a code is given at ``/account/two-factor/verify/``: every page but that one, the sign-out and
  the static files sends it there (whoever has the password alone reads nothing, the API included);
- an account the setting requires it of, with no device yet, is sent to the enrolment page
  (``/account/two-factor/``) from the organizer console, the System page and the Django admin.

The pending mark is kept in the session when the password is accepted (a ``user_logged_in`` signal),
so a page of a user without a device costs no query; django-otp's middleware marks the session verified
(``request.user.is_verified()``) once a code was accepted. The API's token is another credential: it is
made by a password at ``/api/auth/token/`` or shown on the account page (which needs the second factor),
and the token endpoint refuses an account that has a device (``contest.api.views.ObtainToken``).
"""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.shortcuts import redirect
from django_otp.plugins.otp_totp.models import TOTPDevice

from contest import permissions

#: Session key: the password was accepted and a code is still owed.
PENDING = "tracecup_2fa_pending"

#: Paths a pending session may still open: the code's page, the sign-out, and what pages load.
OPEN_WHILE_PENDING = ("/account/two-factor/verify/", "/logout/", "/static/", "/i18n/setlang/", "/favicon.ico")

#: Pages refused to an account the setting requires a second factor of, until it has one.
GUARDED = ("/console/", "/system/", "/admin/")

VERIFY_URL = "/account/two-factor/verify/"
ENROL_URL = "/account/two-factor/"


def has_device(user) -> bool:
    """Whether ``user`` has a confirmed TOTP device (one whose first code was accepted)."""
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def unconfirmed_device(user) -> TOTPDevice:
    """``user``'s authenticator app being added: its unconfirmed TOTP device, made now if there is none (the
    enrolment page shows its key until the app's first code confirms it)."""
    return (TOTPDevice.objects.filter(user=user, confirmed=False).first()
            or TOTPDevice.objects.create(user=user, name="authenticator", confirmed=False))


@receiver(user_logged_in, dispatch_uid="tracecup-second-factor-pending")
def _mark_pending(sender, request, user, **kwargs):
    """A password accepted for an account with a device: the session owes a code."""
    if request is not None and hasattr(request, "session") and has_device(user):
        request.session[PENDING] = True


def _verified(user) -> bool:
    is_verified = getattr(user, "is_verified", None)
    return bool(is_verified and is_verified())


def _to(url: str, request):
    return redirect(f"{url}?{urlencode({'next': request.get_full_path()})}")


class SecondFactorMiddleware:
    """Sends a pending session to the code's page, and an account that must have a second factor and has
    none from the guarded pages to the enrolment page (module docstring). After django-otp's middleware."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            path = request.path
            if request.session.get(PENDING) and not path.startswith(OPEN_WHILE_PENDING):
                if not _verified(user):
                    return _to(VERIFY_URL, request)
                del request.session[PENDING]
            elif (path.startswith(GUARDED) and permissions.needs_second_factor(user)
                  and not _verified(user)):
                return _to(VERIFY_URL if has_device(user) else ENROL_URL, request)
        return self.get_response(request)
