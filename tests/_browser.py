"""Headless Chromium for the tests that open pages: the HTML report (`test_report.py`) and the
built manual (`test_docs.py`).

Debian's ``chromium`` and ``chromium-driver`` are installed when they are missing (as root, with
apt-get; a fresh CI machine has neither); where that is impossible the tests skip, saying why.
The `browser` fixture in `conftest.py` starts one Chromium per test session (per xdist worker).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]


def install_chromium() -> str:
    """Install Debian's chromium + chromium-driver; return how it went, or skip saying why."""
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("headless Chromium is not installed and this test can install it only as root "
                    "with apt-get (Debian/Ubuntu); install the `chromium` and `chromium-driver` "
                    "packages to run it")
    command = ["apt-get", "install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300",
               "chromium", "chromium-driver"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    start = time.perf_counter()
    done = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=1200)
    if done.returncode != 0:  # a fresh machine may have no (or stale) package lists
        subprocess.run(["apt-get", "update"], check=False, capture_output=True, text=True, env=env,
                       timeout=600)
        done = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=1200)
    if done.returncode != 0:
        pytest.skip(f"headless Chromium is missing and `{' '.join(command)}` failed "
                    f"(exit {done.returncode}): {done.stderr.strip()[-500:]}")
    return f"installed chromium and chromium-driver in {time.perf_counter() - start:.0f} s"


def start_chromium(profile_dir):
    """A headless Chromium (selenium driver) that records the browser console, 1280 x 1000."""
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="the browser tests drive Chromium through selenium: "
        "`pip install -e '.[dev]'`")
    setup = "chromium was already installed"
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        setup = install_chromium()
    print(f"\n[browser test] {setup}")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile_dir}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options,
                              service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")))
    driver.set_window_size(1280, 1000)
    return driver


def severe_errors(driver) -> list[str]:
    """The console's errors since the last call (reading the log empties it)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
