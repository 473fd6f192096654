"""The contest form offers synth's registry: its synthesizer list is the registry's methods (in the
registry's order) and the city, never a list of its own, so these tests fail when the two differ."""
from __future__ import annotations

from contest.web.forms import SYNTHESIZER_LABELS, ContestForm
from synth import methods, registry
from tests.synth.test_registry import STAY, stay  # noqa: F401 - the fixture registers a test method


def _offered() -> tuple[str, ...]:
    return tuple(name for name, _label in ContestForm().fields["synthesizer"].choices)


def test_the_form_offers_every_registered_method_and_the_city_in_the_registrys_order():
    assert _offered() == (*methods.METHODS, "city") == methods.CONTEST_SYNTHESIZERS
    assert set(_offered()) == set(registry.names()) | {"city"}


def test_every_page_label_names_a_synthesizer_the_registry_has():
    assert set(SYNTHESIZER_LABELS) <= {*registry.names(), "city"}, set(SYNTHESIZER_LABELS)


def test_a_method_registered_later_is_offered_under_its_registry_title(stay):  # noqa: F811
    choices = dict(ContestForm().fields["synthesizer"].choices)
    assert choices["stay"] == STAY.title
    assert _offered() == (*methods.METHODS, "city") and "stay" in _offered()
