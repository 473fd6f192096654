"""No page outlives its test (tests/browser/conftest.py ``_close_the_tests_pages``). Two tests in file
order, which pytest-xdist keeps within one process (``--dist loadfile``): the first leaves a page open, the
second finds its context closed."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

LEFT_OPEN: list = []


def test_a_test_leaves_a_page_open(browser):
    page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    page.set_content("<p>left open</p>")
    LEFT_OPEN.append(page.context)
    assert page.context in browser.contexts


def test_the_next_test_finds_it_closed(browser):
    assert LEFT_OPEN, "the first test did not run before this one"
    assert LEFT_OPEN[0] not in browser.contexts
