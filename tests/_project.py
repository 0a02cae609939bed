"""A user's project on disk for CLI tests: a docs folder, a gold set, a store and a cache."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml


def write_project(
    root: Path,
    docs: Mapping[str, str],
    gold: Sequence[Mapping[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """``docs`` under ``root/docs``, ``gold`` as ``root/gold.yaml``; the store and cache in
    ``root``, which becomes the working directory."""
    for name, text in docs.items():
        path = root / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    text = yaml.safe_dump(list(gold), sort_keys=False, allow_unicode=True)
    (root / "gold.yaml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("RAGMETER_STORE", f"sqlite:///{root / 'runs.db'}")
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(root / "cache"))
    return root
