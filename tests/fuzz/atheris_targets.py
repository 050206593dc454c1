"""Coverage-guided fuzzing (atheris, libFuzzer) of the parsers that see attacker bytes first.

Run one target: ``python -m tests.fuzz.atheris_targets TARGET -runs=20000`` (omit -runs to fuzz
until stopped). Each target raises on anything but the clean rejection its contract allows, so
libFuzzer reports a crash with the input. ``tests/fuzz/test_atheris.py`` runs each briefly.

- ``webhook``: every signature scheme's verify + identify on fuzzed bodies and headers;
- ``link``: approval link verification and form tokens on fuzzed query strings;
- ``json``: structured output's tolerant JSON extraction on fuzzed model text;
- ``tool-args``: the guard deciding a shop tool call from fuzzed JSON arguments.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from urllib.parse import parse_qsl

import atheris

from lockgate.agent.structured import find_json
from lockgate.approvals.links import LinkInvalid, new_claims, sign_link, verify_link
from lockgate.config import SourceConfig
from lockgate.errors import BadDelivery, InvalidSignature
from lockgate.webhooks.schemes import scheme_for

SOURCES = [
    SourceConfig("gh", "github", ("env:X",)),
    SourceConfig("pay", "stripe", ("env:X",)),
    SourceConfig("svix", "standard", ("env:X",)),
    SourceConfig("chat", "slack", ("env:X",)),
    SourceConfig("shop", "shopify", ("env:X",)),
    SourceConfig("acme", "hmac", ("env:X",), header="X-Sig", prefix="sha256=", id_field="data.id"),
]
SECRETS = ["It's a Secret to Everybody", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
LINK_SECRET = b"fuzzing-link-secret-0123456789abcdef"
NOW = 1_700_000_000
SEED_APPROVAL = "ap_0123456789abcdef01234567"
SEED_QUERY = dict(
    parse_qsl(sign_link(LINK_SECRET, new_claims(SEED_APPROVAL, "alice", "ab" * 32, NOW, 3600, "n0nce-n0nce")))
)


def webhook(data: bytes) -> None:
    """Input: one byte choosing the source, then {"h": headers, "b": body} as JSON (or raw body bytes)."""
    if not data:
        return
    source = SOURCES[data[0] % len(SOURCES)]
    headers: dict[str, str] = {}
    body = data[1:]
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and isinstance(parsed.get("h"), dict):
            headers = {str(k): str(v) for k, v in parsed["h"].items()}
            body = str(parsed.get("b", "")).encode("utf-8", "surrogatepass")
    except (ValueError, UnicodeError):
        pass
    scheme = scheme_for(source)
    with contextlib.suppress(InvalidSignature):
        scheme.verify(body, headers, SECRETS, NOW)
    with contextlib.suppress(BadDelivery):
        scheme.identify(body, headers)


def link(data: bytes) -> None:
    """Input: ``approval_id&query-string``, as a reviewer's browser sends them."""
    approval_id, _, raw_query = data.decode("utf-8", "replace").partition("&")
    query = dict(parse_qsl(raw_query, keep_blank_values=True))
    if approval_id == SEED_APPROVAL and query == SEED_QUERY:
        return  # the one real link (a seed): it must verify, checked below
    try:
        claims = verify_link([LINK_SECRET], approval_id, query, NOW)
    except LinkInvalid:
        return
    raise AssertionError(f"an unsigned link verified: {claims}")  # no fuzzed input can carry our MAC


def json_text(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    found = find_json(text)
    if found is not None:
        json.dumps(found, default=str)  # plain JSON data (numbers come back as Decimal, exactly)


def tool_args(data: bytes) -> None:
    from lockgate.actions.guard import Allowed, rule_on
    from tests.unit.test_shop_guard_fuzz import TASK, run_state  # the shop task and facts the guard sees

    if not data:
        return
    name = TASK.tools[data[0] % len(TASK.tools)].name
    try:
        args = json.loads(data[1:])
    except (ValueError, UnicodeError):
        return
    ruling = rule_on(TASK.tools, name, args, run_state("ada@example.com", tainted=False))
    assert isinstance(ruling, Allowed) or ruling.reason


TASK_TOOLS = ("read_email", "lookup_order", "find_orders", "search_help", "send_email", "refund_order")
TARGETS: dict[str, Callable[[bytes], None]] = {
    "webhook": webhook,
    "link": link,
    "json": json_text,
    "tool-args": tool_args,
}


def seeds(target: str) -> list[bytes]:
    """Valid inputs to start from, so the fuzzer mutates real deliveries and links, not noise."""
    from lockgate.webhooks.signing import sign

    if target == "webhook":
        body = b'{"id": "evt_1", "type": "push", "data": {"id": "x1"}, "created": 1700000000}'
        out = []
        for n, source in enumerate(SOURCES):
            headers = sign(
                source, SECRETS[1] if source.scheme == "standard" else SECRETS[0], body, NOW, "d-1", "push"
            )
            out.append(bytes([n]) + json.dumps({"h": headers, "b": body.decode()}).encode())
        return out
    if target == "link":
        return [SEED_APPROVAL.encode() + b"&" + "&".join(f"{k}={v}" for k, v in SEED_QUERY.items()).encode()]
    if target == "json":
        return [
            b'Sure! ```json\n{"order_id": "A-1042", "amount": 25.0}\n``` done',
            b'{"a": [1, 2, {"b": null}]}',
        ]
    refund = next(n for n, tool in enumerate(TASK_TOOLS) if tool == "refund_order")
    email = next(n for n, tool in enumerate(TASK_TOOLS) if tool == "send_email")
    return [
        bytes([refund]) + b'{"order_id": "A-1043", "amount": "25.00", "reason": "damaged"}',
        bytes([email]) + b'{"to": "ada@example.com", "subject": "Your order", "body": "It ships today."}',
    ]


def main() -> None:
    """``TARGET [libFuzzer flags]``; seeds are written to a fresh corpus directory first."""
    import tempfile
    from pathlib import Path

    name = sys.argv[1]
    target = TARGETS[name]
    corpus = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))
    for n, seed in enumerate(seeds(name)):
        (corpus / f"seed-{n}").write_bytes(seed)
    sys.argv = [sys.argv[0], *sys.argv[2:], str(corpus)]
    if name == "tool-args":
        from tests.unit import test_shop_guard_fuzz  # noqa: F401 - imported before instrumenting
    atheris.instrument_all()  # every loaded module: the lockgate code behind the targets included
    atheris.Setup(sys.argv, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
