"""What the Chromium tests share: the browser, a `ragmeter serve` subprocess, a watched page.

``ragmeter serve`` runs as a subprocess on a free loopback port (the click command itself,
as the console script runs it); Playwright drives Debian's Chromium
(``/usr/bin/chromium``; no browser download). :func:`require_browser` skips a module when
Chromium or playwright is missing, except under ``CI=true``, where it fails. Screenshots
are copied to :data:`SCREENS` for a person to look at.

The fixtures are in ``tests/web/conftest.py`` (issue 25.4: written once): ``browser`` (one
Chromium per module, skipped without one) and ``page`` (a :func:`watched_page` on the
module's ``served`` dashboard, which a module builds with :func:`served_dashboard`)::

    @pytest.fixture(scope="module")
    def served(browser, tmp_path_factory):
        ...
        with served_dashboard(root, store, candidates, "--user", "ana") as dashboard:
            yield dashboard

    def test_x(page, served): page.goto(served.base + "/"); served.shot(page, "01-runs")
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from _net import free_port, wait_until

CHROMIUM = Path("/usr/bin/chromium")
SCREENS = Path("/tmp/ragmeter-screens")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT_S = 30.0
VIEWPORT = {"width": 1400, "height": 1000}


def unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import fastapi  # noqa: F401
        import playwright.sync_api  # noqa: F401
    except ImportError as error:
        return f"playwright or the [web] extra is not installed ({error})"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    return None


def require_browser() -> None:
    """Skip (or, under CI=true, fail) when :func:`unavailable` gives a reason."""
    reason = unavailable()
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests must run in CI: {reason}")
    pytest.skip(reason)


def start(store: Path, candidates: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``ragmeter serve`` over ``store``; the process and its base URL."""
    port = free_port()
    code = "from ragmeter.cli.serve import serve; serve()"
    args = ["--store", str(store), "--port", str(port), "--candidates", str(candidates), *extra]
    proc = subprocess.Popen([sys.executable, "-c", code, *args], env={**os.environ, "CI": ""})
    return proc, f"http://127.0.0.1:{port}"


def wait(base: str, proc: subprocess.Popen[bytes], headers: Mapping[str, str]) -> None:
    """Until ``/api/runs`` answers 200 (or the process exits, or the start timeout)."""

    def answers() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"ragmeter serve exited with {proc.returncode}")
        try:
            return (
                httpx.get(f"{base}/api/runs", headers=dict(headers), timeout=2).status_code == 200
            )
        except httpx.HTTPError:
            return False

    wait_until(answers, timeout=START_TIMEOUT_S, what=f"ragmeter serve to answer on {base}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        proc.kill()
        proc.wait()


@contextmanager
def serving(
    store: Path, candidates: Path, *extra: str, headers: Mapping[str, str] | None = None
) -> Iterator[str]:
    """``ragmeter serve`` for the ``with`` block, ready to answer; yields its base URL."""
    proc, base = start(store, candidates, *extra)
    try:
        wait(base, proc, headers or {})
        yield base
    finally:
        stop(proc)


def keep_screens(folder: Path) -> None:
    """Copy the screenshots in ``folder`` to :data:`SCREENS`."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    for png in folder.glob("*.png"):
        shutil.copy(png, SCREENS / png.name)


@dataclass
class Served:
    """A ``ragmeter serve`` process a browser module drives: its URL, files, screenshots."""

    base: str
    store: Path
    candidates: Path
    shots: Path

    def shot(self, page: Any, name: str, *, full: bool = True) -> None:
        """Screenshot ``page`` as ``name``.png (copied to :data:`SCREENS` at the end)."""
        page.screenshot(path=str(self.shots / f"{name}.png"), full_page=full)


@contextmanager
def served_dashboard(root: Path, store: Path, candidates: Path, *extra: str) -> Iterator[Served]:
    """``ragmeter serve`` over ``store`` for a browser module; screenshots taken in the
    ``with`` block are kept in :data:`SCREENS` afterwards. Skips without a browser."""
    require_browser()
    shots = root / "screens"
    shots.mkdir()
    try:
        with serving(store, candidates, *extra) as base:
            yield Served(base, store, candidates, shots)
    finally:
        keep_screens(shots)


@contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless Chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield launched
        launched.close()


@contextmanager
def watched_page(browser: Any, base: str, *, dialogs_are_errors: bool = True) -> Iterator[Any]:
    """A page that fails the test, once closed, on a script error, a dialog (unless
    ``dialogs_are_errors`` is off) or a request to anywhere but ``base``."""
    context = browser.new_context(viewport=VIEWPORT)
    opened = context.new_page()
    errors: list[str] = []
    outside: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    if dialogs_are_errors:
        opened.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))

    def watch(request: Any) -> None:
        if not request.url.startswith((base, "data:")):
            outside.append(request.url)

    opened.on("request", watch)
    yield opened
    context.close()
    assert errors == [], errors
    assert outside == [], f"requests left the server: {outside}"
