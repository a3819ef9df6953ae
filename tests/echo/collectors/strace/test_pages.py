"""strace's section of a rank's page, read in a real headless Chromium from a real `mpiecho serve`: the system
calls of each traced copy side by side, every count checked against the copy's trace file, the copies that ran
without strace said so."""

from __future__ import annotations

from echo.collectors import strace as st
from tests.conftest import echorun, server_with


def test_a_ranks_page_sets_its_traced_copies_system_calls_side_by_side(browser, programs, tmp_path):
    from selenium.webdriver.common.by import By

    run_dir = tmp_path / "run"
    r = echorun(["--no-store", "-n", "2", "--clones", "3", "--strace", "1,2", *programs["partial_sums"]], run_dir)
    assert r.returncode == 0, r.stderr
    run_id = (run_dir / "run.json").read_text().split('"run_id": "')[1].split('"')[0]
    counted = {copy: st.count_calls(st.trace_file(run_dir, 1, copy)) for copy in (1, 2)}
    with server_with(tmp_path / "served", [(run_dir, run_id)]) as (url, _):
        browser.get(f"{url}/runs/{run_id}/ranks/1")
        rows = {tr.get_attribute("data-syscall"): {
                    int(td.get_attribute("data-copy")): td.find_element(By.CSS_SELECTOR, ".v").text
                    for td in tr.find_elements(By.CSS_SELECTOR, "td[data-copy]")}
                for tr in browser.find_elements(By.CSS_SELECTOR, "#syscalls tr[data-syscall]")}
    assert rows["all system calls"] == {0: "not traced", 1: f"{sum(counted[1][0].values()):,}",
                                        2: f"{sum(counted[2][0].values()):,}"}
    assert rows["failed (returned -1)"] == {0: "not traced", 1: f"{counted[1][1]:,}", 2: f"{counted[2][1]:,}"}
    for name in ("write", "openat"):  # the line each copy printed, the file it kept its partial sum in
        assert rows[name] == {0: "not traced", 1: f"{counted[1][0][name]:,}", 2: f"{counted[2][0][name]:,}"}
    # the most made first, 20 by name, the rest summed in one row
    listed = [name for name in rows if name not in ("all system calls", "failed (returned -1)")]
    both = counted[1][0] + counted[2][0]
    named = [n for n in listed if not n.startswith("the ")]
    assert named == sorted(both, key=lambda n: (-both[n], n))[:20]
    if len(both) > 20:
        assert listed[-1] == f"the {len(both) - 20} other system calls"
