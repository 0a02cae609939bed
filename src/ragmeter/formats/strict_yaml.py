"""Strict, bounded YAML: aliases, duplicate keys, deep nesting, huge numbers refused.

PyYAML's safe loader still expands aliases (nine levels of ten aliases are 570
bytes that become a billion strings), keeps the last of two equal keys, and
turns ``.nan`` into a float. Here the composed node graph is checked *before*
anything is constructed, so every such file is one error naming its line.
Dates stay strings, so ``created: 2024-01-01`` means the same in YAML and JSON.

>>> from ragmeter.errors import ConfigError
>>> load_yaml("a: 1\\nb: [x, y]\\n", "p.yaml", "pipeline", ConfigError)[0]
{'a': 1, 'b': ['x', 'y']}
>>> load_yaml("a: &x 1\\nb: *x\\n", "p.yaml", "pipeline", ConfigError)
Traceback (most recent call last):
...
ragmeter.errors.ConfigError: pipeline p.yaml line 1: YAML anchors and aliases are not supported (an alias repeats the value here); write the value out
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from ragmeter.errors import located
from ragmeter.formats.text import MAX_INTEGER_DIGITS, MAX_NESTING_DEPTH

__all__ = ["check_nodes", "load_yaml", "yaml_loader"]


@functools.cache
def yaml_loader() -> Any:
    """The safe loader class (C-accelerated when available), dates left as strings."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._tags: dict[tuple[str, Any], str] = {}

        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            # Keys such as "id" and "grade" repeat on every item; resolving each
            # scalar through the regex list again was most of the load time.
            if kind is not yaml.ScalarNode:
                return str(super().resolve(kind, value, implicit))
            key = (value, implicit)
            tag = self._tags.get(key)
            if tag is None:
                tag = self._tags[key] = super().resolve(kind, value, implicit)
            return tag

    # Dates stay strings: `created: 2024-01-01` must mean the same in YAML and JSONL.
    timestamp = "tag:yaml.org,2002:timestamp"
    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != timestamp]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return Loader


_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


def check_nodes(root: Any, path: object, kind: str, error: type[Exception]) -> None:
    """Refuse what would make construction unbounded or silently lossy, before it runs.

    An alias makes one node appear twice in the graph: nine levels of ten aliases
    are 570 bytes that expand to a billion strings, so aliases are refused outright.
    Also refused: nesting deeper than MAX_NESTING_DEPTH, a key repeated in a mapping
    (YAML keeps the last silently), integers past MAX_INTEGER_DIGITS, .nan and .inf.
    """
    import yaml

    def fail(node: Any, message: str) -> Exception:
        return error(located(kind, path, node.start_mark.line + 1, message))

    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            message = (
                "YAML anchors and aliases are not supported "
                "(an alias repeats the value here); write the value out"
            )
            raise fail(node, message)
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            _check_number(node, fail)
            continue
        if depth > MAX_NESTING_DEPTH:
            raise fail(node, f"nested more than {MAX_NESTING_DEPTH} levels deep")
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
            continue
        keys: dict[tuple[str, str], int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                line = key.start_mark.line + 1
                first = keys.get((key.tag, key.value))
                if first is None:
                    keys[(key.tag, key.value)] = line
                else:
                    name = json.dumps(key.value, ensure_ascii=False)
                    message = f"duplicate key {name} (lines {first} and {line})"
                    raise error(located(kind, path, None, message))
            stack.extend(((key, depth + 1), (value, depth + 1)))


def _check_number(node: Any, fail: Any) -> None:
    if node.tag == _INT_TAG:
        digits = len(node.value.lstrip("+-"))
        if digits > MAX_INTEGER_DIGITS:
            raise fail(node, f"an integer of {digits} digits (at most {MAX_INTEGER_DIGITS})")
    elif node.tag == _FLOAT_TAG:
        text = node.value.replace("_", "").lower().lstrip("+-")
        try:
            finite = text not in (".inf", ".nan") and math.isfinite(float(text))
        except ValueError:  # YAML 1.1 sexagesimal floats such as 1:30.5
            finite = True
        if not finite:
            raise fail(node, f"{node.value} is not a number JSON allows")


def yaml_message(problem_error: Exception, text: str, path: object, kind: str) -> str:
    """One line for a PyYAML error: file, line and column when PyYAML knows them."""
    mark = getattr(problem_error, "problem_mark", None)
    problem = (
        getattr(problem_error, "problem", None)
        or getattr(problem_error, "reason", None)
        or str(problem_error)
    )
    if mark is not None:
        where = f"invalid YAML at column {mark.column + 1}: {problem}"
        return located(kind, path, mark.line + 1, where)
    position = getattr(problem_error, "position", None)
    if isinstance(position, int):
        return located(kind, path, text.count("\n", 0, position) + 1, f"invalid YAML: {problem}")
    return located(kind, path, None, f"invalid YAML: {problem}")


def load_yaml(text: str, path: object, kind: str, error: type[Exception]) -> tuple[Any, Any]:
    """``(value, root node)`` of one YAML document (``(None, None)`` when it is empty).

    The node (with ``start_mark`` line numbers) lets callers name where items start.
    Every problem is ``error`` with ``kind``, ``path`` and the line; a document
    nested too deeply for the C composer is reported too.
    """
    import yaml

    loader = yaml_loader()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        check_nodes(node, path, kind, error)
        return loader.construct_document(node), node
    except yaml.YAMLError as problem:
        raise error(yaml_message(problem, text, path, kind)) from None
    except RecursionError:
        raise error(located(kind, path, None, "nested too deeply to read")) from None
    finally:
        loader.dispose()
