"""Write changed judgments into a YAML gold file's own text, keeping everything else.

``apply-edits --in-place`` used to dump the whole gold set again: every comment was lost
(18 of 18 in the red-team file, issue 27.10). Gold edits change only the ``relevant`` lists
of some items, so :func:`splice_relevant` rewrites only those entries: a kept judgment keeps
its text and the comments around it, a new or changed one is written in the list's style
(block or flow) at the list's indentation, the rest of the file is untouched. The result is
parsed again and must equal the edited gold set; when it cannot be done (the item names its
judgments under an alias key, or is written in flow style) it returns ``None`` and the
caller rewrites the file whole, saying so.

>>> from ragmeter.gold.goldset import GoldSet
>>> text = "# my gold set\\n- id: q1  # refunds\\n  question: Refunds?\\n  relevant:\\n  - faq.md  # old\\n"
>>> before = GoldSet.from_records([{"id": "q1", "question": "Refunds?", "relevant": ["faq.md"]}])
>>> after = GoldSet.from_records([{"id": "q1", "question": "Refunds?",
...                                "relevant": ["faq.md", {"doc": "r.md", "grade": 2}]}])
>>> print(splice_relevant(text, before, after), end="")
# my gold set
- id: q1  # refunds
  question: Refunds?
  relevant:
  - faq.md  # old
  - doc: r.md
    grade: 2
"""

from __future__ import annotations

from typing import Any

from ragmeter.errors import GoldSetError
from ragmeter.gold.goldset import GoldItem, GoldSet

__all__ = ["splice_relevant"]

_RELEVANCE_KEYS = ("relevant", "relevance", "relevantDocs", "relevant_docs", "relevant_chunks")


def _end(node: Any) -> int:
    """Where ``node``'s own text ends (a block collection's end mark lies past any comments
    that follow it, so it ends where its last value does)."""
    import yaml

    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _end(node.value[-1])
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _end(node.value[-1][1])
    return int(node.end_mark.index)


def _eol(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


def _dump(value: Any, flow: bool) -> str:
    import yaml

    dumped = yaml.safe_dump(
        value, default_flow_style=flow, sort_keys=False, allow_unicode=True, width=10**9
    )
    return str(dumped).removesuffix("\n").removesuffix("...").rstrip("\n")


def _entries(item: GoldItem) -> list[Any]:
    return list(GoldSet([item]).to_records()[0].get("relevant", []))


def _block_list(text: str, node: Any, old: GoldItem, new: GoldItem) -> tuple[int, int, str]:
    """The span of a block list's entries and what replaces it (kept entries keep their text)."""
    dashes = [text.rindex("-", 0, child.start_mark.index) for child in node.value]
    ends = [_eol(text, _end(child)) for child in node.value]
    column = dashes[0] - (text.rfind("\n", 0, dashes[0]) + 1)
    indent = "\n" + " " * column
    olds = list(old.relevant)
    pieces: list[str] = []
    previous: int | None = None
    position = 0
    records = _entries(new)
    for judgment, record in zip(new.relevant, records, strict=True):
        kept = next((j for j in range(position, len(olds)) if olds[j] == judgment), None)
        if pieces:
            joined = kept is not None and previous is not None and kept == previous + 1
            pieces.append(text[ends[previous] : dashes[kept]] if joined else indent)  # type: ignore[index]
        if kept is not None:
            pieces.append(text[dashes[kept] : ends[kept]])
            position = kept + 1
        else:
            pieces.append(_dump([record], flow=False).replace("\n", indent))
        previous = kept
    return dashes[0], ends[-1], "".join(pieces)


def _item_span(
    text: str, mapping: Any, old: GoldItem, new: GoldItem
) -> tuple[int, int, str] | None:
    import yaml

    if not isinstance(mapping, yaml.MappingNode) or mapping.flow_style:
        return None
    keys = [k.value for k, _ in mapping.value if isinstance(k, yaml.ScalarNode)]
    if [k for k in keys if k in _RELEVANCE_KEYS] != ["relevant"]:
        return None
    value = next(v for k, v in mapping.value if getattr(k, "value", None) == "relevant")
    if not isinstance(value, yaml.SequenceNode) or len(value.value) != len(old.relevant):
        return None
    if value.flow_style or not value.value:
        flow = _dump(_entries(new), flow=True)
        return int(value.start_mark.index), int(value.end_mark.index), flow
    return _block_list(text, value, old, new)


def splice_relevant(text: str, before: GoldSet, after: GoldSet) -> str | None:
    """``text`` (the YAML that parses to ``before``) with the judgments of ``after``, or
    ``None`` when only a whole rewrite can say it (see module doc)."""
    from ragmeter.formats.strict_yaml import load_yaml

    try:
        _, root = load_yaml(text, "gold set", "gold set", GoldSetError)
    except GoldSetError:
        return None
    import yaml

    if isinstance(root, yaml.MappingNode):
        root = next((v for k, v in root.value if getattr(k, "value", None) == "items"), None)
    olds, news = list(before), list(after)
    if (
        not isinstance(root, yaml.SequenceNode)
        or len(root.value) != len(olds)
        or [i.id for i in olds] != [i.id for i in news]
    ):
        return None
    spans: list[tuple[int, int, str]] = []
    for node, old, new in zip(root.value, olds, news, strict=True):
        if old == new:
            continue
        if old.model_copy(update={"relevant": new.relevant}) != new:
            return None  # something besides the judgments changed
        span = _item_span(text, node, old, new)
        if span is None:
            return None
        spans.append(span)
    out = text
    for start, end, replacement in sorted(spans, reverse=True):
        out = out[:start] + replacement + out[end:]
    return out if _same(out, after) else None


def _same(text: str, after: GoldSet) -> bool:
    """The spliced text parses to exactly the edited gold set."""
    from ragmeter.formats.strict_yaml import load_yaml

    try:
        data, _ = load_yaml(text, "gold set", "gold set", GoldSetError)
        records = data["items"] if isinstance(data, dict) else data
        again = GoldSet.from_records(records)
    except (GoldSetError, KeyError, TypeError):
        return False
    return [i.model_dump() for i in again] == [i.model_dump() for i in after]
