"""Structured output: the ``response_format`` modes we try, and the strict reply parser.

Servers differ: OpenAI takes ``json_schema``; llama.cpp's server enforces
``{"type": "json_object", "schema": ...}``; others only know ``json_object``. The
client tries them in :data:`MODES` order and keeps the first one a server accepts.

>>> response_format("json_object", {"type": "object"})
{'type': 'json_object'}
>>> parse_reply('```json\\n{"grade": 2}\\n```',
...             {"type": "object", "properties": {"grade": {"type": "integer"}}})
{'grade': 2}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragmeter.judge._schema import SchemaError, validate

__all__ = ["MODES", "REPAIR_PROMPT", "SchemaError", "parse_reply", "response_format"]

# Structured-output modes, most to least strict. A server that rejects one gets the next.
MODES = ("json_schema", "json_object_schema", "json_object")
#: Sent once when a reply does not parse, with the problem filled in.
REPAIR_PROMPT = (
    "Your previous reply was not a valid JSON object for the required schema ({problem}). "
    "Reply again with only the JSON object, no other text."
)


def response_format(mode: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response_format`` request field of ``mode`` (one of :data:`MODES`)."""
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": dict(schema), "strict": True},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": dict(schema)}
    return {"type": "json_object"}


def parse_reply(content: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """Strict parse: one JSON object (raw newlines in strings tolerated), then the schema.

    Raises :class:`SchemaError` saying what was wrong (the client shows it to the model
    in its one repair request).
    """
    text = content.strip()
    if text.startswith("```"):
        # Models without enforced output like to fence their JSON.
        text = text.strip("`")
        text = text[4:] if text.lower().startswith("json") else text
    try:
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as error:
        raise SchemaError(f"not JSON ({error.msg} at character {error.pos})") from None
    checked: dict[str, Any] = validate(value, schema)
    return checked
