"""Debian's headless Chromium driven by Selenium, as the web tests and bench/run_pages.py load the pages (never a
browser a tool downloads): None when Chromium or its driver is not installed."""

from __future__ import annotations

import shutil


def headless() -> object | None:
    """A new Selenium driver of headless Chromium, 1300 x 1800 pixels (the caller quits it), or None."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--window-size=1300,1800"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
