"""Every module under ``src/`` stays under the 500-line budget of STYLE.md (issue 13.6)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 500
# Being split by another engineer (issue 13.6); the lead removes this entry after the merge.
KNOWN_OVER = {"ragmeter/judge/client.py"}


def test_no_module_over_500_lines() -> None:
    """Issue 13.6: store/store.py was 606 lines; no module may pass 500 (judge/client.py
    is a known exception until its split lands)."""
    sizes = {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in SRC.rglob("*.py")
    }
    assert sizes, f"no modules found under {SRC}"
    over = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in KNOWN_OVER}
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"
