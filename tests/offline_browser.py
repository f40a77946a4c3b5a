"""A written report opened in Debian's headless Chromium with the network off, as a reader opens it from file://.

Both report.html tests (harness diff's and harness run's) open their page this
way: the browser's own network is emulated offline, every other connection
goes to a proxy that does not exist, and the page must have loaded completely
without fetching a single resource before any test looks at it.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


@contextmanager
def offline_page(page: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """A selenium driver showing `page`; fails (never skips) when the browser is missing."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not found: run `make test`, which installs Debian's chromium and "
                    "chromium-driver (or `make browser`)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager never looks anything up
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--disable-quic", "--window-size=1280,1000", f"--user-data-dir={scratch / 'chromium-profile'}",
                     "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        driver.set_page_load_timeout(15)
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions",
                               {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
        driver.get(page.as_uri())
        assert driver.execute_script("return navigator.onLine") is False
        assert driver.execute_script("return document.readyState") == "complete"
        assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
        yield driver
    finally:
        driver.quit()
