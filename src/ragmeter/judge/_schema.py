"""A strict checker for the small JSON Schema subset our prompts use.

Objects with ``properties``/``required``, and ``string`` (``maxLength``),
``boolean``, ``integer`` (``minimum``/``maximum``) and ``array`` of those. Enough
to hold a model's reply to the schema we sent, without a dependency.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.errors import SchemaError

__all__ = ["SchemaError", "validate"]


def validate(value: Any, schema: Mapping[str, Any], where: str = "reply") -> Any:
    """Return ``value`` checked against ``schema`` (strings over ``maxLength`` are cut).

    >>> validate({"ok": True}, {"type": "object", "properties": {"ok": {"type": "boolean"}},
    ...                         "required": ["ok"]})
    {'ok': True}
    >>> validate({"grade": 5}, {"type": "object", "properties": {"grade": {"type": "integer",
    ...           "minimum": 0, "maximum": 3}}, "required": ["grade"]})
    Traceback (most recent call last):
    ...
    ragmeter.errors.SchemaError: reply.grade: 5 is above the maximum 3
    """
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            raise SchemaError(f"{where}: expected an object, got {type(value).__name__}")
        props: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                raise SchemaError(f'{where}: missing "{name}"')
        # Unknown keys are dropped, not fatal: chatty models add them.
        return {
            name: validate(value[name], sub, f"{where}.{name}")
            for name, sub in props.items()
            if name in value
        }
    if kind == "array":
        if not isinstance(value, list):
            raise SchemaError(f"{where}: expected a list, got {type(value).__name__}")
        items = schema.get("items", {})
        return [validate(v, items, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "string":
        if not isinstance(value, str):
            raise SchemaError(f"{where}: expected a string, got {type(value).__name__}")
        limit = schema.get("maxLength")
        return value[:limit] if isinstance(limit, int) else value
    if kind == "boolean":
        if not isinstance(value, bool):
            raise SchemaError(f"{where}: expected true or false, got {value!r}")
        return value
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(f"{where}: expected an integer, got {value!r}")
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and value < low:
            raise SchemaError(f"{where}: {value} is below the minimum {low}")
        if high is not None and value > high:
            raise SchemaError(f"{where}: {value} is above the maximum {high}")
        return value
    return value
