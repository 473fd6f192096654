"""HTML forms of the pages. Validation messages are participant-readable and translated."""
from __future__ import annotations

import zoneinfo

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.validators import MaxLengthValidator
from django.utils.translation import gettext_lazy as _

from contest.models import Contest, Team
from contest.services import parameters
from contest.services.accounts import LOGIN_PASSWORD_MAX_LENGTH, username_max_length
from contest.services.setup import MAX_ROUND_DAYS
from synth.methods import METHODS


class SignUpForm(UserCreationForm):
    email = forms.EmailField(label=_("E-mail"), required=False,
                             help_text=_("Optional, but a forgotten password can be reset only by a link "
                                         "sent to this address; the organizers' announcements go here too."))

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")


class LoginForm(AuthenticationForm):
    """Django's login form, its lengths checked: Django sets the user name's ``max_length`` after the field
    is built, so it shows in the page but is never validated, and an over-long name reached the login
    lockout's record (a 255-character column) and the page answered 500."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, limit in (("username", username_max_length()), ("password", LOGIN_PASSWORD_MAX_LENGTH)):
            field = self.fields[name]
            field.max_length = limit
            field.widget.attrs["maxlength"] = str(limit)
            field.validators.append(MaxLengthValidator(limit))


class JoinTeamForm(forms.Form):
    invitation_code = forms.CharField(
        label=_("Invitation code"), max_length=64,
        help_text=_("Your team captain or the organizers give you this code."))

    def clean_invitation_code(self):
        code = self.cleaned_data["invitation_code"].strip()
        team = Team.objects.select_related("contest").filter(invitation_code=code).first()
        if team is None:
            raise forms.ValidationError(_("No team has this invitation code. Check it for typing mistakes."))
        self.team = team
        return code


class UploadForm(forms.Form):
    """One anotraces, etable or etraces file (.csv, .csv.gz or .zip holding one CSV)."""

    file = forms.FileField(label=_("File"), help_text=_("CSV, or .gz / .zip holding one CSV."), error_messages={
        "required": _("Choose a file to upload."),
        # the widget shows "Chosen: name (0 B)": say that the chosen file is empty, not that none was chosen
        "empty": _("The chosen file is empty (0 bytes): an upload is a CSV file with its header and rows."),
    })

    def problem(self) -> str:
        """The form's errors as one sentence for the page (the first error of each field)."""
        return " ".join(str(errors[0]) for errors in self.errors.values())


class AttackUploadForm(UploadForm):
    kind = forms.ChoiceField(label=_("Kind"), error_messages={"required": _("Choose the attack kind.")}, choices=(
        ("etable", _("etable (re-identification)")), ("etraces", _("etraces (trace inference)"))))


class ContestYamlForm(forms.Form):
    yaml_file = forms.FileField(label=_("Contest YAML file"), required=False,
                                help_text=_("The versioned contest file (parameters, rounds, phases, teams)."))
    yaml_text = forms.CharField(label=_("…or paste the YAML"), required=False, widget=forms.Textarea(attrs={"rows": 12}))

    def clean(self):
        data = super().clean()
        if not data.get("yaml_file") and not (data.get("yaml_text") or "").strip():
            raise forms.ValidationError(_("Give a YAML file or paste its text."))
        return data

    def yaml_source(self) -> str:
        f = self.cleaned_data.get("yaml_file")
        if f:
            return f.read().decode("utf-8-sig")
        return self.cleaned_data["yaml_text"]


#: The synthesizers' names in the pages' words (translated); a method with none here is offered under its
#: registry title (``synth.methods.METHODS``). Which methods are offered, and in what order, is the registry's.
SYNTHESIZER_LABELS = {
    "ppmtf": _("PPMTF+ (per-user features; the 2019 contest's)"),
    "sglt": _("Semantic fake traces with privacy tests (Bindschaedler and Shokri)"),
    "coloc": _("Co-location-aware traces with differential privacy (Narita et al.)"),
    "city": _("Built-in city model, no training (rehearsals)"),
}


def synthesizer_choices() -> list[tuple[str, str]]:
    """The synthesizers an organizer picks from: every method of synth's registry, in its order, then the
    city's people without training; asked when a form is built, so a method registered later is offered."""
    return [(name, SYNTHESIZER_LABELS.get(name) or METHODS.get(name, name)) for name in (*METHODS, "city")]


class ContestForm(forms.ModelForm):
    """Create a contest by form: the rules §12 parameters most often changed; the rest keep their defaults."""

    synthesizer = forms.ChoiceField(label=_("Synthesizer"), choices=synthesizer_choices, initial="ppmtf")
    synthesizer_params = forms.JSONField(
        label=_("Synthesizer parameters (JSON)"), required=False, initial=dict,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_('For example {"eps1": 1, "eps2": 1, "options": {"theta": 200}} for the co-location '
                    'synthesizer; see synth/README.md for each method\'s parameters and bounds.'))

    class Meta:
        model = Contest
        fields = ["name", "slug", "description", "users_per_set", "slots_per_day", "s_req", "lambda_u", "lambda_t",
                  "utility_convention", "hospital_weight", "anonymized_upload_limit", "etable_limit", "etraces_limit",
                  "time_zone", "award_variant", "tie_break", "judge_attack_mode", "synthesizer",
                  "synthesizer_params", "seed"]
        labels = {
            "users_per_set": _("Users per set (m)"), "slots_per_day": _("Slots per day (S)"),
            "s_req": _("Required utility s_req"), "lambda_u": _("λ_U (km)"), "lambda_t": _("λ_T (km)"),
            "utility_convention": _("Generalization utility"), "hospital_weight": _("Hospital weight"),
            "anonymized_upload_limit": _("Anonymized uploads per challenge"),
            "etable_limit": _("etables per (attacker, target)"), "etraces_limit": _("etraces per (attacker, target)"),
            "time_zone": _("Time zone"), "award_variant": _("Award rule"), "tie_break": _("Tie-break"),
            "judge_attack_mode": _("Judge attack mode"),
            "name": _("Name"), "slug": _("Slug"), "description": _("Description"), "seed": _("Seed"),
        }
        # The model's help texts and choice labels in the page's language (the model keeps the English).
        help_texts = {
            "users_per_set": "m", "slots_per_day": "S", "lambda_u": "km", "lambda_t": "km",
            "anonymized_upload_limit": _("per challenge per round"),
            "etable_limit": _("per (attacker, target set)"), "etraces_limit": _("per (attacker, target set)"),
            "seed": _("master seed of generation and judge attacks"),
        }

    #: field -> {stored value: label in the page's language}
    CHOICE_LABELS = {
        "utility_convention": {Contest.CONVENTIONS[0][0]: _("mean distance (paper)"),
                               Contest.CONVENTIONS[1][0]: _("mean loss (2019 program)")},
        "award_variant": {Contest.AWARD_VARIANTS[0][0]: _("2019 rule v1.4"),
                          Contest.AWARD_VARIANTS[1][0]: _("paper's simpler variant")},
        "tie_break": {Contest.TIE_BREAKS[0][0]: _("earlier final submission wins"),
                      Contest.TIE_BREAKS[1][0]: _("lower team number wins")},
        "judge_attack_mode": {"exact": _("exact (every event)"),
                              # xgettext:no-python-format
                              "sample_2019": _("2019 sampling (10% of events, at most 10 regions of a generalized set)")},
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, labels in self.CHOICE_LABELS.items():
            field = self.fields[name]
            field.choices = [(value, labels.get(value, label)) for value, label in field.choices]

    def clean_time_zone(self):
        tz = self.cleaned_data["time_zone"].strip()
        try:
            zoneinfo.ZoneInfo(tz)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
            raise forms.ValidationError(
                _("Unknown time zone %(tz)s; use an IANA name such as Asia/Tokyo.") % {"tz": tz}) from e
        return tz

    def clean(self):
        data = super().clean()
        params = data.get("synthesizer_params")
        if params is None:
            params = data["synthesizer_params"] = {}
        # The contest file's and the API's check (contest.services.parameters), on what the form parsed.
        given = {k: v for k, v in data.items() if k in parameters.PARAMETERS and k not in self.errors}
        for field, value, expected in parameters.problems(given):
            target = field.split(".")[0] if field.split(".")[0] in self.fields else None
            if target and target in self.errors:
                continue
            self.add_error(target, _("%(key)s: expected %(expected)s, got %(value)s")
                           % {"key": field, "expected": expected, "value": repr(value)})
        return data


class RoundForm(forms.Form):
    name = forms.CharField(label=_("Round name"), max_length=100)
    weight = forms.FloatField(label=_("Weight"), min_value=0.0, max_value=1.0, required=False,
                              help_text=_("2019 rule: preliminary round 0.1, final round 0.9 (left empty: by the "
                                          "round's number)"))
    ref_days = forms.IntegerField(label=_("Reference days"), min_value=1, max_value=MAX_ROUND_DAYS, initial=20)
    org_days = forms.IntegerField(label=_("Original days"), min_value=1, max_value=MAX_ROUND_DAYS, initial=20)
    anonymization_opens = forms.DateTimeField(label=_("Anonymization opens"),
                                              widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    anonymization_closes = forms.DateTimeField(label=_("Anonymization closes"),
                                               widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    attack_opens = forms.DateTimeField(label=_("Attack opens"), widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    attack_closes = forms.DateTimeField(label=_("Attack closes"), widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))

    def clean(self):
        d = super().clean()
        keys = ["anonymization_opens", "anonymization_closes", "attack_opens", "attack_closes"]
        given = [(i, d[k]) for i, k in enumerate(keys) if d.get(k)]
        # every pair of the times given, so that a missing or wrong time elsewhere in the form does not hide a
        # wrong order of the others (all problems in one pass); only anonymization closes = attack opens is allowed
        if any(b < a or b == a and (i, j) != (1, 2) for n, (i, a) in enumerate(given) for j, b in given[n + 1:]):
            raise forms.ValidationError(_("Phases must be in order: anonymization opens < closes <= attack opens < closes."))
        return d


class PhaseScheduleForm(forms.Form):
    """A phase's new window, in the contest's time zone (the service checks the order against the other phase)."""

    opens_at = forms.DateTimeField(label=_("Opens"), widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))
    closes_at = forms.DateTimeField(label=_("Closes"), widget=forms.DateTimeInput(attrs={"type": "datetime-local"}))


class AnnouncementForm(forms.Form):
    title = forms.CharField(label=_("Title"), max_length=200)
    body = forms.CharField(label=_("Text"), max_length=5000, widget=forms.Textarea(attrs={"rows": 4}))
    email = forms.BooleanField(label=_("Also send it by e-mail to every member"), required=False, initial=True)


class TeamForm(forms.Form):
    name = forms.CharField(label=_("Team name"), max_length=100)


class AccountForm(forms.Form):
    """The account page: e-mail (password resets go there) and the page language."""

    email = forms.EmailField(label=_("E-mail"), required=False,
                             help_text=_("Password resets and the organizers' announcements go to this address."))
    language = forms.ChoiceField(label=_("Language"), choices=(("en", "English"), ("ja", "日本語")))


class SecondFactorCodeForm(forms.Form):
    """The six digits an authenticator app shows (TOTP); spaces a user types between them are dropped."""

    code = forms.CharField(label=_("Code from your authenticator app"), max_length=12,
                           widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}))

    def clean_code(self):
        code = "".join(self.cleaned_data["code"].split())
        if not code.isdigit() or len(code) not in (6, 8):
            raise forms.ValidationError(_("A code is the 6 digits your authenticator app shows."))
        return code


class DeleteAccountForm(forms.Form):
    """Deleting one's account is confirmed with the password, so an open session left behind cannot."""

    password = forms.CharField(label=_("Your password"), strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}))


class TeamNameForm(forms.Form):
    name = forms.CharField(label=_("Team name"), max_length=100)
