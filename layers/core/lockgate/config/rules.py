"""Approval rules as data: who must approve a call, decided by the call's own arguments.

A tool's approval settings (``[approvals.tools.NAME]``) say who may decide its proposals and how
many must agree. Its ``rules`` ask for more when a number argument passes a threshold (over $100:
two reviewers with the refunds role), or refuse the call outright (over $1,000); a tool's Python
hook (``Tool.approval_rules``) returns ``ApprovalRule``s for anything else. Rules only ever ask
for more: more reviewers, fewer roles, or a refusal; so a hook can never loosen what
``lockgate.toml`` says, and the approval side, which evaluates the file's rules itself, never
accepts less than they demand.

What one exact version of a call needs is a ``Requirement``: computed when the call is proposed,
again for every edited version, stored with it, shown on every screen, and enforced where
decisions are counted and once more before the call runs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

OPERATORS = {"over": ">", "at_least": ">=", "under": "<", "at_most": "<="}
MAX_REVIEWERS = 5  # distinct people one call may need; more is a typo, not a policy
MAX_NAME_CHARS = 120
# A number as a person or a JSON document writes it: ASCII digits, an optional sign and decimals.
# No exponent, no other script's digits, no spaces inside: what is compared is what is shown.
PLAIN_NUMBER = re.compile(r"^-?[0-9]{1,30}(\.[0-9]{1,30})?$")


def plain_number(value: Any) -> Decimal | None:
    """``value`` as a Decimal if it is a plain number (an int, a float or a string of ASCII digits)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, str) and PLAIN_NUMBER.match(value.strip()):
        try:
            return Decimal(value.strip())
        except InvalidOperation:  # pragma: no cover - the pattern admits only what Decimal reads
            return None
    return None


@dataclass(frozen=True)
class ApprovalRule:
    """One rule that applies to a call: more reviewers, narrower roles or a refusal, and its name.

    ``lockgate.toml``'s threshold rules are these, and so is what ``Tool.approval_rules`` returns.
    """

    name: str
    """What the rule is called on every screen, e.g. "refunds over $100"."""

    reviewers_required: int = 1
    """At least this many distinct reviewers must approve (the largest of every rule that applies)."""

    roles: tuple[str, ...] = ()
    """Only reviewers with one of these roles may decide; every rule that applies must be satisfied,
    so roles narrow, never widen. (): no narrowing."""

    refuse: bool = False
    """Refused outright: the model is told, nothing is proposed, and an edit to such a value is refused."""

    why: str = ""
    """Why, in words for reviewers and the model (default: the name)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > MAX_NAME_CHARS:
            raise ValueError(f"an approval rule's name is 1 to {MAX_NAME_CHARS} characters")
        reviewers = self.reviewers_required
        if (
            isinstance(reviewers, bool)
            or not isinstance(reviewers, int)
            or not 1 <= reviewers <= MAX_REVIEWERS
        ):
            raise ValueError(f"approval rule {self.name!r}: reviewers_required is 1 to {MAX_REVIEWERS}")
        if isinstance(self.roles, str) or not all(isinstance(r, str) and r for r in self.roles):
            raise ValueError(f"approval rule {self.name!r}: roles is a tuple of role names")
        object.__setattr__(self, "roles", tuple(self.roles))

    @property
    def reason(self) -> str:
        """Why it applies, in words."""
        return self.why or self.name


@dataclass(frozen=True)
class Threshold:
    """``argument`` compared with ``value``: the condition of a ``lockgate.toml`` rule."""

    argument: str
    operator: str  # one of OPERATORS: over, at_least, under, at_most
    value: Decimal

    def matches(self, args: Mapping[str, Any]) -> bool:
        """Whether the call's canonical arguments pass the threshold.

        A missing (or null) argument does not; one that is not a plain number does, so a value
        that cannot be compared asks for more, never less.
        """
        raw = args.get(self.argument)
        if raw is None:
            return False
        number = plain_number(raw)
        if number is None:
            return True
        if self.operator == "over":
            return number > self.value
        if self.operator == "at_least":
            return number >= self.value
        if self.operator == "under":
            return number < self.value
        return number <= self.value

    def describe(self) -> str:
        """E.g. "amount over 100"."""
        return f"{self.argument} {self.operator.replace('_', ' ')} {self.value}"


@dataclass(frozen=True)
class ThresholdRule:
    """``[[approvals.tools.NAME.rules]]``: a rule that applies when its threshold is passed."""

    when: Threshold
    rule: ApprovalRule


@dataclass(frozen=True)
class Requirement:
    """What one exact version of a call needs before it may run: who, how many, and which rules said so."""

    reviewers_required: int = 1
    roles: tuple[str, ...] = ()  # reviewers with any of these may decide; (): any reviewer
    applied: tuple[str, ...] = ()  # the names of the rules that applied, in order
    refused: str = ""  # not empty: a rule refuses this version outright, and why
    reasons: tuple[str, ...] = field(default=(), compare=False)  # each applied rule's why, in order

    def with_rule(self, rule: ApprovalRule) -> Requirement:
        """This requirement with ``rule`` applied on top: it only ever asks for more."""
        if rule.name in self.applied:
            return self
        applied, reasons = (*self.applied, rule.name), (*self.reasons, rule.reason)
        refused = self.refused
        if rule.refuse and not refused:
            refused = rule.name if rule.reason == rule.name else f"{rule.name}: {rule.reason}"
        roles = _narrowed(self.roles, rule.roles)
        if roles == () and not refused:
            refused = (
                f"no reviewer role satisfies every rule that applies ({', '.join(applied)}): "
                "nobody may approve it"
            )
        reviewers = max(self.reviewers_required, rule.reviewers_required)
        return Requirement(reviewers, roles or self.roles, applied, refused, reasons)

    def with_rules(self, rules: Iterable[ApprovalRule]) -> Requirement:
        """Every rule in ``rules`` applied in order."""
        requirement = self
        for rule in rules:
            requirement = requirement.with_rule(rule)
        return requirement

    def stricter(self, other: Requirement) -> Requirement:
        """What both ask for: the larger count, the roles both allow, every rule, any refusal."""
        roles = _narrowed(self.roles, other.roles)
        refused = self.refused or other.refused
        if roles == () and not refused:
            refused = "the rules that apply allow no common reviewer role: nobody may approve it"
        pairs = dict.fromkeys((*self.rules(), *other.rules()))
        applied, reasons = tuple(name for name, _ in pairs), tuple(reason for _, reason in pairs)
        reviewers = max(self.reviewers_required, other.reviewers_required)
        return Requirement(reviewers, roles or self.roles, applied, refused, reasons)

    def rules(self) -> list[tuple[str, str]]:
        """Each applied rule's (name, why)."""
        reasons = self.reasons if len(self.reasons) == len(self.applied) else self.applied
        return list(zip(self.applied, reasons, strict=True))

    @property
    def needs_person(self) -> bool:
        """Whether a rule applied that makes a person decide (any rule that does not refuse)."""
        return bool(self.applied) and not self.refused

    def who(self) -> str:
        """E.g. "2 reviewers with the role refunds", "1 reviewer (any)"."""
        count = f"{self.reviewers_required} reviewer{'s' if self.reviewers_required != 1 else ''}"
        if not self.roles:
            return f"{count} (any)"
        if len(self.roles) == 1:
            return f"{count} with the role {self.roles[0]}"
        return f"{count} with one of the roles {', '.join(self.roles)}"

    def describe(self) -> str:
        """Which rule applied and what it asks, in one line for every screen."""
        if self.refused:
            return f"refused by rule: {self.refused}"
        rules = "; ".join(self.applied) if self.applied else "the tool's default"
        return f"{self.who()} (rule: {rules})"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready, for the proposal and version items."""
        return {
            "reviewers_required": self.reviewers_required,
            "roles": list(self.roles),
            "applied": list(self.applied),
            "reasons": list(self.reasons),
            **({"refused": self.refused} if self.refused else {}),
        }

    @classmethod
    def from_json(cls, data: Any) -> Requirement | None:
        """From ``to_json``'s output; None for anything else (an older item has none)."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                reviewers_required=max(1, int(data.get("reviewers_required", 1))),
                roles=tuple(str(r) for r in data.get("roles", [])),
                applied=tuple(str(a) for a in data.get("applied", [])),
                refused=str(data.get("refused", "")),
                reasons=tuple(str(r) for r in data.get("reasons", [])),
            )
        except (TypeError, ValueError):
            return None

    def dumps(self) -> str:
        """Canonical JSON text."""
        return json.dumps(self.to_json(), sort_keys=True)


def _narrowed(roles: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...] | None:
    """The roles both allow ((): empty intersection); None: neither narrows (any reviewer)."""
    if not roles and not more:
        return None
    if not roles:
        return more
    if not more:
        return roles
    return tuple(r for r in roles if r in more)


def threshold_rules(rules: Iterable[ThresholdRule], args: Mapping[str, Any]) -> list[ApprovalRule]:
    """The rules whose threshold the canonical arguments pass, in the order they are written."""
    return [r.rule for r in rules if r.when.matches(args)]
