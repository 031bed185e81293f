"""Screenshots of an audit report's main views for docs/ (Debian chromium via Playwright, as
the browser test drives it).

    .venv/bin/python scripts/report_screenshots.py runs/demo-.../report.html docs/

writes report-verdict.png, report-charts.png, report-evidence.png, report-recap.png (and
report-redacted.png when report-redacted.html sits beside the report).
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def shoot(report: Path, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    done = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(report.resolve().as_uri())
        page.wait_for_load_state("load")
        for name, sel in (("verdict", "#verdict"), ("charts", "#charts")):
            path = out / f"report-{name}.png"
            page.locator(sel).screenshot(path=str(path))
            done.append(path)
        page.locator("#provenance").scroll_into_view_if_needed()
        path = out / "report-provenance.png"
        page.screenshot(path=str(path))
        done.append(path)
        ev = page.locator("details.evidence:has(mark.span)").first
        ev.locator("summary").click()
        path = out / "report-evidence.png"
        ev.screenshot(path=str(path))
        done.append(path)
        recap = page.locator("details.evidence.recap").first
        if recap.count():
            recap.locator("summary").click()
            path = out / "report-recap.png"
            recap.screenshot(path=str(path))
            done.append(path)
        redacted = report.with_name("report-redacted.html")
        if redacted.exists():
            page.goto(redacted.resolve().as_uri())
            page.locator("details.evidence").first.locator("summary").click()
            path = out / "report-redacted.png"
            page.locator("details.evidence").first.scroll_into_view_if_needed()
            page.screenshot(path=str(path))
            done.append(path)
        browser.close()
    return done


if __name__ == "__main__":
    for p in shoot(Path(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else "docs")):
        print(p)
