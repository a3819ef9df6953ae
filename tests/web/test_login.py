"""A server whose reads need a token, in a real headless Chromium: the browser is sent to a login page (not shown
a raw 401), logs in, and lands where it was going; the API's docs (Swagger UI) come from the server itself."""

import pytest

from tests.conftest import server_with


@pytest.fixture(scope="module")
def guarded(real_runs, tmp_path_factory):
    """A read-token server with one real run uploaded: (url, token, run id)."""
    with server_with(tmp_path_factory.mktemp("guarded"), [real_runs["clean"]], "--read-token") as (url, token):
        yield url, token, real_runs["clean"][1]


def test_a_browser_logs_in_and_goes_where_it_was_going(browser, guarded):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    url, token, run_id = guarded
    browser.delete_all_cookies()
    browser.get(f"{url}/runs/{run_id}")
    assert browser.current_url == f"{url}/login?next=/runs/{run_id}"
    assert browser.find_element(By.TAG_NAME, "h1").text == "Log in"
    browser.find_element(By.ID, "token").send_keys("not-a-token")
    browser.find_element(By.CSS_SELECTOR, "#login button").click()
    error = WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "login-error")))
    assert error.text == "This token is not valid on this server."
    browser.find_element(By.ID, "token").send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "#login button").click()
    WebDriverWait(browser, 20).until(ec.url_to_be(f"{url}/runs/{run_id}"))
    assert run_id in browser.find_element(By.TAG_NAME, "body").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#matrix td[data-rank]")) == 4  # 2 ranks x 2 copies
    browser.get(url + "/")  # the other pages too, with the same login
    assert run_id in browser.find_element(By.TAG_NAME, "body").text
    cookie = browser.get_cookie("echo_token")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"


def test_api_docs_come_from_the_server(browser, guarded):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    url = guarded[0]
    browser.get(f"{url}/docs")
    WebDriverWait(browser, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".opblock")))
    paths = {e.text for e in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert {"/api/runs", "/api/runs/{run_id}", "/api/token"} <= {p.replace("\u200b", "") for p in paths}
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(name.startswith(url) for name in loaded), loaded  # nothing from another site
