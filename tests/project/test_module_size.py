"""Every module under ``src/`` stays under the 500-line budget of STYLE.md (issue 13.6)."""

from __future__ import annotations

from _paths import ROOT

SRC = ROOT / "src"
MAX_LINES = 500
# Modules allowed past the budget for now (judge/client.py was, until its split landed).
KNOWN_OVER: set[str] = set()


def test_no_module_over_500_lines() -> None:
    """Issue 13.6: store/store.py (606 lines) and judge/client.py (674) were past the
    budget; no module may pass 500."""
    sizes = {
        path.relative_to(SRC).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in SRC.rglob("*.py")
    }
    assert sizes, f"no modules found under {SRC}"
    over = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in KNOWN_OVER}
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"
