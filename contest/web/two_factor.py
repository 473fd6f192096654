"""The second factor's pages (``contest.second_factor``): adding an authenticator app, and the code a
session owes after the password. Both are audited; wrong codes are counted like failed logins, on top of
django-otp's own growing delay per device."""
from __future__ import annotations

import base64
import io
from base64 import b32encode

import django_otp
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django_otp.qr import write_qrcode_image

from contest import permissions
from contest.lockout import throttled, throttled_response
from contest.second_factor import PENDING, has_device, unconfirmed_device
from contest.services import audit

from .common import page
from .forms import SecondFactorCodeForm


def _next(request, default: str = "/account/") -> str:
    """The page asked for before the code (``?next=``), if it is on this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return default


def _accepted(request, device) -> None:
    """The session is verified by ``device``: the code is no longer owed."""
    django_otp.login(request, device)
    request.session.pop(PENDING, None)


def _qr_data_uri(text: str) -> str:
    """``text`` as a QR code, an SVG in a ``data:`` address (the site's policy allows data: images)."""
    out = io.BytesIO()
    write_qrcode_image(text, out)
    return "data:image/svg+xml;base64," + base64.b64encode(out.getvalue()).decode()


@login_required
def enrol(request):
    """Add an authenticator app: its key as a QR code, an ``otpauth://`` address and text; the first code
    it shows confirms it (an unconfirmed device verifies nothing)."""
    user = request.user
    if has_device(user):
        ctx = {"enabled": True, "required": permissions.needs_second_factor(user)}
        return page(request, "web/two_factor_enrol.html", ctx, nav="account")
    device = unconfirmed_device(user)
    form = SecondFactorCodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if device.verify_token(form.cleaned_data["code"]):
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            _accepted(request, device)
            audit.record("enable_second_factor", actor=user, obj=user)
            messages.success(request, _("Two-factor authentication is on: signing in now asks for a code."))
            return redirect(_next(request))
        form.add_error("code", _("This code is not right. Check that your phone's clock is right and try again."))
    uri = device.config_url
    ctx = {"form": form, "enabled": False, "qr": _qr_data_uri(uri), "uri": uri,
           "secret": b32encode(device.bin_key).decode(), "next": _next(request, ""),
           "required": permissions.needs_second_factor(user)}
    return page(request, "web/two_factor_enrol.html", ctx, nav="account")


@login_required
def verify(request):
    """The code a session owes after the password (or before the console, for an account that must)."""
    user = request.user
    form = SecondFactorCodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        device = django_otp.match_token(user, form.cleaned_data["code"])
        if device is not None:
            _accepted(request, device)  # a sign-in, not audited (as the password's step is not)
            return redirect(_next(request, "/"))
        if throttled(request, "second_factor", user.get_username()):
            return throttled_response(request)
        form.add_error("code", _("This code is not right. Check that your phone's clock is right and try again."))
    return page(request, "web/two_factor_verify.html", {"form": form, "next": _next(request, "")}, nav="login")
