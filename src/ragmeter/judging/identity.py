"""Who produced a verdict: the judge's identity (issue 17.6).

Two judge numbers are comparable only when the same judge produced them: the same
model, the same prompt (its version *and* a hash of its text, so an edit that forgot to
bump the version still shows), the same sampling parameters and the same number of
repeats (the prompt hash is :func:`ragmeter.judge.prompts.prompt_hash`, computed on the
model side). Every judge run and every stored verdict carries this identity;
``ragmeter diff`` refuses to subtract judge metrics whose identities differ.

>>> a = JudgeIdentity(model="judge", prompt_version="faithfulness/1", prompt_hash="ab12")
>>> b = JudgeIdentity.from_config({**a.to_dict(), "model": "bigger"})
>>> a.differences(b)
["model 'judge' vs 'bigger'"]
>>> a.differences(a)
[]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["JudgeIdentity"]


@dataclass(frozen=True, slots=True)
class JudgeIdentity:
    """Model, prompt version and hash, sampling parameters and repeats of one judge.

    ``None`` means "not recorded" (runs judged before issue 17.6): an unknown field
    never matches a known one, so such runs are not compared silently.
    """

    model: str | None
    prompt_version: str | None
    prompt_hash: str | None = None
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    repeats: int | None = 1

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> JudgeIdentity:
        """The identity recorded in a judge run's config (missing fields are ``None``)."""
        return cls(**{f.name: config.get(f.name) for f in fields(cls)})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One line for a person.

        >>> JudgeIdentity("judge", "faithfulness/1", "ab12", 0.0, 7, 512, 3).describe()
        'judge, prompt faithfulness/1 #ab12, temperature 0.0, seed 7, max tokens 512, repeats 3'
        """
        return (
            f"{self.model}, prompt {self.prompt_version} #{self.prompt_hash}, "
            f"temperature {self.temperature}, seed {self.seed}, "
            f"max tokens {self.max_tokens}, repeats {self.repeats}"
        )

    def differences(self, other: JudgeIdentity) -> list[str]:
        """What differs, one ``"field a vs b"`` per field; empty when the judges are the same."""
        out: list[str] = []
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if mine is None or theirs is None or mine != theirs:
                if mine is None and theirs is None and f.name in _OPTIONAL:
                    continue
                out.append(f"{f.name.replace('_', ' ')} {_show(mine)} vs {_show(theirs)}")
        return out


# Fields that may legitimately be unset on both sides (a seed nobody chose, a judge
# without a completion budget such as the lexical one).
_OPTIONAL = frozenset({"temperature", "seed", "max_tokens"})


def _show(value: Any) -> str:
    return "unrecorded" if value is None else repr(value)
