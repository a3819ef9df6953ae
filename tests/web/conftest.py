"""Real headless Chromium (Debian's, driven by Selenium) for the web pages' tests."""

import pytest

from bench.chromium import headless


@pytest.fixture(scope="module")
def browser():
    driver = headless()
    if driver is None:
        pytest.skip("Chromium is not installed (apt-get install chromium chromium-driver; scripts/setup.sh does it)")
    yield driver
    driver.quit()
