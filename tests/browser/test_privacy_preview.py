"""In headless Chromium with the real worker: after an upload the team card gains its privacy preview
without a reload (the card's state.json poller), at 1280 and 390 px. Screenshot for the README."""
from __future__ import annotations

import re

import pytest

from tests.browser.layout import chart_problems, overflow_problems
from tests.browser.test_contest_flow import login
from tests.contest.conftest import anonymize_csv, contest_spec

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def test_the_preview_appears_after_an_upload_without_reload(live_server, celery_worker_process, browser, shot,
                                                            readme_shot, tmp_path):
    from contest.models import Dataset, PrivacyPreview
    from contest.services.generation import generate_round_data
    from contest.services.setup import create_contest

    contest = create_contest(contest_spec("pv"))
    generate_round_data(contest.rounds.get())
    ds = Dataset.objects.get(round__contest=contest, team__number=1, challenge=1)
    base = live_server.url
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    login(page, base, "alpha1", "pw", lands_on="/c/pv/team/")
    page.evaluate("window.__notReloaded = true")
    upload = tmp_path / "anotraces_team001_data01.csv"
    upload.write_bytes(anonymize_csv(ds, "A4-PL", seed=1))
    card = page.locator(f"#ds-{ds.pk}")
    card.locator("input[type=file]").set_input_files(str(upload))
    card.get_by_role("button", name="Upload").click()
    section = page.locator(f"#preview-ds-{ds.pk}")
    section.wait_for(timeout=180_000)
    assert page.evaluate("window.__notReloaded") is True  # it came by the poller, not by a reload
    p = PrivacyPreview.objects.get(anonymized_set__dataset=ds)
    section.locator("details.preview-command-part > summary").click()  # the card folds the command line
    text = section.inner_text()
    assert "preview: the judge's sample attacks only; other teams' attacks come later" in text
    for a in p.summary["attacks"]:
        assert a["name"] in text
    assert f"--seed {p.seed}" in text and "pip install ." in text
    # the side-by-side row of the upload carries its preview minima
    row = page.locator(f"#history-ds-{ds.pk} tr", has_text="#1").inner_text()
    assert f"{p.summary['s_i_min']:.4f}" in row and f"{p.summary['s_t_min']:.4f}" in row
    section.locator("details.preview-maps-part > summary").click()  # the card folds the leak map
    section.locator("figure[data-chart=gridmap] svg").first.wait_for()
    assert section.locator("figure[data-chart=gridmap] svg").count() == 2
    assert not overflow_problems(page, strict=False)
    assert not chart_problems(page)
    # the README's picture: the whole challenge card (uploads side by side, then the preview)
    height = card.bounding_box()["height"]
    page.set_viewport_size({"width": 1280, "height": int(height) + 120})
    card.scroll_into_view_if_needed()
    box = card.bounding_box()
    readme_shot(page, "privacy-preview", clip={"x": box["x"] - 8, "y": max(box["y"] - 8, 0),
                                               "width": box["width"] + 16, "height": box["height"] + 16})
    page.set_viewport_size({"width": 1280, "height": 900})
    shot(page, "team-privacy-preview-1280")
    # the phone layout: the same card, nothing wider than the screen
    phone = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    login(phone, base, "alpha1", "pw")
    phone.goto(f"{base}/c/pv/team/")
    phone.locator(f"#preview-ds-{ds.pk} details.preview-maps-part > summary").click()
    phone.locator(f"#preview-ds-{ds.pk} figure[data-chart=gridmap] svg").first.wait_for()
    assert not overflow_problems(phone, strict=False), overflow_problems(phone, strict=False)
    shot(phone, "team-privacy-preview-390")
    assert re.search(r"s_I,min", phone.locator(f"#preview-ds-{ds.pk}").inner_text())

    # ---- issue 22: a second upload; the team chooses #1 as final: the card shows #1's preview; each
    # upload's own page shows its own preview, per-user risk and map
    second = tmp_path / "anotraces_team001_data01_b.csv"
    second.write_bytes(anonymize_csv(ds, "A3-kRR", seed=2, eps=8.0))
    page.goto(f"{base}/c/pv/team/")
    card = page.locator(f"#ds-{ds.pk}")
    card.locator("input[type=file]").set_input_files(str(second))
    card.get_by_role("button", name="Upload").click()
    page.locator(f"#preview-title-{ds.pk}", has_text="upload #2").wait_for(timeout=180_000)
    assert "your final set" in page.locator(f"#preview-title-{ds.pk}").inner_text()  # #2 is the default final
    page.locator(f"#history-ds-{ds.pk} tr", has_text="#1").get_by_role("button", name=re.compile("Choose")).click()
    page.wait_for_load_state()
    title = page.locator(f"#preview-title-{ds.pk}")
    title.wait_for()
    assert "Privacy preview of upload #1" in title.inner_text() and "your final set" in title.inner_text()
    first = PrivacyPreview.objects.get(anonymized_set__dataset=ds, anonymized_set__seq=1)
    section = page.locator(f"#preview-ds-{ds.pk}")
    assert f"{first.summary['s_t_min']:.4f}" in section.inner_text()
    assert "95% prediction interval" in section.inner_text()
    shot(page, "team-preview-of-final-set")
    for seq in (1, 2):
        p = PrivacyPreview.objects.get(anonymized_set__dataset=ds, anonymized_set__seq=seq)
        page.goto(f"{base}/c/pv/team/uploads/{p.anonymized_set_id}/")
        section = page.locator(f"#preview-ds-{ds.pk}")
        section.locator("figure[data-chart=gridmap] svg").first.wait_for()
        assert section.locator("figure[data-chart=gridmap] svg").count() == 2  # the leak map
        text = section.inner_text()
        assert f"Privacy preview of upload #{seq}" in text
        assert f"{p.summary['s_i_min']:.4f} · {p.summary['s_t_min']:.4f}" in text
        assert section.locator("table.preview-users tbody tr").count() == len(p.summary["top_users"])
        assert not overflow_problems(page, strict=False) and not chart_problems(page)
        shot(page, f"upload-{seq}-preview")
