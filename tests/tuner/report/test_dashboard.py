"""optuna-dashboard on a study the tuner made, checked in a real headless Chromium (Debian's
chromium + chromium-driver, driven by selenium; no browser is downloaded)."""

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import urllib.request

import pytest

from tests.tuner.conftest import NO_REEVAL, REPO, TINY, run_app
from tests.tuner.postgres import postgres_server, server_binaries

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# without the networking flags Chromium's background connections are refused by the closed network
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
         "--no-first-run", "--disable-component-update", "--disable-sync", "--window-size=1400,1000"]


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError("the dashboard printed no URL") from None


@pytest.fixture
def dashboard(tmp_path):
    """A real dashboard process (port 0: a free port), started with no storage argument, on the
    journal two studies made by the tuner share (``studies/journal.log``)."""
    # a one-run re-evaluation: its note is on the study page
    run_app(["tuner=optuna", "tuner.reevaluate.top_k=1", "tuner.reevaluate.seeds=1", "tuner.reevaluate.episodes=1",
             "tuner.study_name=dash_study", "tuner.n_trials=2", *TINY], cwd=str(tmp_path))
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=dash_other", "tuner.n_trials=1", *TINY], cwd=str(tmp_path))
    assert sorted(p.name for p in (tmp_path / "studies").iterdir()) == ["dash_other", "dash_study", "journal.log",
                                                                         "journal.log.driver-lock"]
    proc = _serve(["port=0"], tmp_path)
    try:
        line = _first_line(proc, timeout=60)
        assert line.startswith("optuna-dashboard: http://127.0.0.1:"), line + proc.stderr.read()
        yield line.split()[1]
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture
def browser(tmp_path):
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _wait_for_text(driver, *texts: str, timeout: float = 60) -> str:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: all(t in d.find_element(By.TAG_NAME, "body").text for t in texts))
    return driver.find_element(By.TAG_NAME, "body").text


def test_dashboard_shows_the_study_and_its_trials(dashboard, browser, tmp_path) -> None:
    url = dashboard
    assert url.startswith("http://127.0.0.1:") and url.endswith("/dashboard/")
    studies = json.loads(urllib.request.urlopen(url.replace("/dashboard/", "/api/studies"), timeout=30).read())
    summary, other = studies["study_summaries"]
    assert (summary["study_name"], other["study_name"]) == ("dash_study", "dash_other")
    browser.get(url)
    _wait_for_text(browser, "dash_study", "dash_other")
    browser.save_screenshot(str(tmp_path / "dashboard_home.png"))
    browser.get(f"{url}studies/{summary['study_id']}")
    _wait_for_text(browser, "Study User Attributes", "heldout_winner", "heldout:0")  # per-config results
    browser.get(f"{url}studies/{summary['study_id']}/note")
    _wait_for_text(browser, "Held-out re-evaluation", "held-out winner: trial")  # the study's note
    browser.get(f"{url}studies/{summary['study_id']}/trials")
    text = _wait_for_text(browser, "dash_study", "Trial 0", "Trial 1")
    assert "2 Trials" in text and "Complete" in text
    shot = tmp_path / "dashboard_trials.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_dashboard_compares_the_studies_that_share_the_journal(dashboard, browser, tmp_path) -> None:
    """optuna-dashboard's compare view on the two studies of ``studies/journal.log``: both histories."""
    studies = json.loads(urllib.request.urlopen(dashboard.replace("/dashboard/", "/api/studies"), timeout=30).read())
    ids = ",".join(str(s["study_id"]) for s in studies["study_summaries"])
    browser.get(f"{dashboard}compare-studies?ids={ids}")
    _wait_for_text(browser, "dash_study", "dash_other", "History")
    assert browser.save_screenshot(str(tmp_path / "dashboard_compare.png"))


def test_dashboard_on_a_missing_journal_fails_with_one_line(tmp_path) -> None:
    out = run_app(["dashboard", "storage=missing/journal.log"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    assert out.stderr.strip() == f"error: storage: no Optuna journal file {tmp_path}/missing/journal.log"
    out = run_app(["dashboard", "study_dir=.", "port=http"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: port: 'http' is not a port number")


def _serve(args: list[str], cwd) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.Popen([sys.executable, "-m", "tuner", "dashboard", *args], cwd=str(cwd), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.skipif(server_binaries() is None, reason="Debian's postgresql package is not installed")
def test_report_and_dashboard_on_a_postgresql_storage(tmp_path) -> None:
    import optuna

    with postgres_server() as url:
        study = optuna.create_study(study_name="pg_study", storage=url, direction="maximize")
        study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0) + t.suggest_int("n", 1, 3), n_trials=4)
        out = run_app(["report", f"storage={url}", "study_name=pg_study", "wandb=none"], cwd=str(tmp_path))
        assert "report of study 'pg_study'" in out.stdout
        assert "| `x` |" in (tmp_path / "studies" / "pg_study" / "report" / "report.md").read_text()
        proc = _serve([f"storage={url}", "port=0"], tmp_path)
        try:
            line = _first_line(proc, timeout=60)
            assert line.startswith("optuna-dashboard: http://127.0.0.1:")
            api = line.split()[1].replace("/dashboard/", "/api/studies")
            names = [s["study_name"] for s in json.loads(urllib.request.urlopen(api, timeout=30).read())["study_summaries"]]
            assert names == ["pg_study"]
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    # nothing listens there any more: one line naming the storage, exit 2
    out = run_app(["report", f"storage={url}", "study_name=pg_study"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.startswith("error: storage: cannot open postgresql")


def test_requests_naming_another_host_are_refused(tmp_path) -> None:
    """DNS rebinding: a page on another name pointed at 127.0.0.1 sends its own Host header."""
    import http.client

    import optuna

    from tuner.report.dashboard import make_dashboard_server

    storage = optuna.storages.InMemoryStorage()
    optuna.create_study(study_name="guarded", storage=storage)
    server = make_dashboard_server(storage, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port

    def get(host: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/api/studies", headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read()

    try:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
            status, body = get(host)
            assert status == 200 and b"guarded" in body
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}", "127.0.0.1:1"):
            status, body = get(host)
            assert status == 403 and b"is not this dashboard" in body and b"guarded" not in body
    finally:
        server.shutdown()
        server.server_close()
