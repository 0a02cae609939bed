"""Where things are, for tests in any folder under tests/ (issue 25.4: the tree mirrors src/)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The checkout: README.md, docs/, src/, benchmarks/."""

SHARED = ROOT.parent / "shared"
"""``../shared`` beside the checkout: datasets and reference tools (tests skip without it)."""
