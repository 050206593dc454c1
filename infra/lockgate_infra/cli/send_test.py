"""`lockgate inbox send-test SOURCE` and `lockgate inbox send SOURCE --event TYPE BODY`: one signed
delivery to a stack's webhook URL, and what became of it.

The delivery is signed with the secret the stack stores for the source, exactly as its provider
would sign it. A test delivery carries the event type ``lockgate.test``: the receiver verifies and
stores it like any other, and the worker marks it done without running a task
(``lockgate.inbox.routing``). ``send`` delivers your event, so its task runs (on `lockgate local`
with your scripted model, say), and prints the outcome.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lockgate.config import SourceConfig
from lockgate.errors import ConfigError, DeliveryNotFound
from lockgate.inbox.routing import TEST_EVENT
from lockgate.secrets import secret_values
from lockgate.webhooks.schemes import scheme_for
from lockgate.webhooks.signing import sign
from lockgate_infra.cli.targets import Target, TargetError

WAIT_SECONDS = 30  # for the worker to process it; the receipt itself is synchronous


def add_send_test_parser(inbox_commands: Any, run: Any) -> argparse.ArgumentParser:
    """``lockgate inbox send-test SOURCE [--no-wait]``."""
    send = inbox_commands.add_parser(
        "send-test",
        help="send SOURCE one delivery signed with the stack's stored secret; show that it was stored "
        "and processed (no task runs for it)",
    )
    send.add_argument("source", help="a [sources.NAME] in lockgate.toml")
    return _source_options(send, run)


def add_send_parser(inbox_commands: Any, run: Any) -> argparse.ArgumentParser:
    """``lockgate inbox send SOURCE --event TYPE BODY [--id ID] [--no-wait]``."""
    send = inbox_commands.add_parser(
        "send",
        help="send SOURCE an event (a JSON body and its type) signed with the stack's stored secret, "
        "as its provider would; show what the worker made of it",
    )
    send.add_argument("source", help="a [sources.NAME] in lockgate.toml")
    send.add_argument("body", help="the event's JSON body, or @FILE to read it from a file")
    send.add_argument("--event", required=True, help="the provider's event type (GitHub: issues)")
    send.add_argument("--id", help="the delivery id (default: a new one each time)")
    return _source_options(send, run)


def _source_options(send: argparse.ArgumentParser, run: Any) -> argparse.ArgumentParser:
    """What both commands take besides the source: --no-wait and --config."""
    send.add_argument("--no-wait", action="store_true", help="do not wait for the worker to process it")
    send.add_argument("--config", type=Path, help="lockgate.toml naming the source (default: the stack's)")
    send.set_defaults(run=run)
    return send


def event_body(text: str) -> bytes:
    """The body given on the command line (``@FILE`` reads a file), checked to be JSON."""
    raw = Path(text[1:]).read_bytes() if text.startswith("@") else text.encode()
    try:
        json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"the body is not JSON ({exc}); give a JSON object, or @FILE") from exc
    return raw


def test_request(source: SourceConfig, secret: str, now: int, nonce: str) -> tuple[bytes, dict[str, str]]:
    """The body and headers of a test delivery, as ``source``'s provider would sign them."""
    ident = f"lockgate-test-{nonce}"
    document: dict[str, Any] = {"lockgate": "test delivery"}
    if source.scheme == "stripe":
        document = {"id": f"evt_{ident}", "object": "event", "type": TEST_EVENT, "created": now}
    elif source.scheme == "slack":
        document = {"type": "event_callback", "event_id": f"Ev{nonce}", "event_time": now,
                    "event": {"type": TEST_EVENT}}  # fmt: skip
    elif source.scheme == "standard":
        document = {"type": TEST_EVENT, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}
    elif source.scheme == "hmac":
        for path, value in ((source.id_field, ident), (source.event_type_field, TEST_EVENT)):
            if path:
                _put(document, path, value)
    if source.scheme == "standard":
        ident = f"msg_{nonce}"
    body = json.dumps(document).encode()
    return body, sign(source, secret, body, now, delivery_id=ident, event_type=TEST_EVENT)


def send_test(args: argparse.Namespace, target: Target, root: Path) -> int:
    """Sign, send, then show the inbox row; 1 if the stack did not accept it."""
    return _send(args, target, root, test_request)


def send_event(args: argparse.Namespace, target: Target, root: Path) -> int:
    """Sign and send your event, then show the inbox row and its outcome; 1 if refused or failed."""
    body = event_body(args.body)

    def request(source: SourceConfig, secret: str, now: int, nonce: str) -> tuple[bytes, dict[str, str]]:
        ident = args.id or (f"msg_{nonce}" if source.scheme == "standard" else f"lockgate-{nonce}")
        return body, sign(source, secret, body, now, delivery_id=ident, event_type=args.event)

    return _send(args, target, root, request)


def _send(
    args: argparse.Namespace,
    target: Target,
    root: Path,
    make: Callable[[SourceConfig, str, int, str], tuple[bytes, dict[str, str]]],
) -> int:
    from lockgate.inbox.store import InboxStore
    from lockgate_infra.cli.secrets import stack_secrets

    stored = stack_secrets(args, target, root)
    entry = stored.entry(args.source)
    if entry.source is None:
        raise ConfigError(f"{args.source} is not a webhook source")
    value = stored.read(entry)
    if not value:
        raise TargetError(
            f"no secret stored for {args.source}: run `lockgate secrets set {args.source}` first"
        )
    now = int(time.time())
    body, headers = make(entry.source, secret_values(value)[-1], now, secrets.token_hex(8))
    pk = f"{entry.source.name}#{scheme_for(entry.source).identify(body, headers).delivery_id}"
    url = webhook_url(args, target, entry.source.name)
    status, reply = _post(url, body, headers)
    print(f"POST {url} -> {status} {reply[:200]}")
    if status != 200:
        hint = (
            "the stored secret differs from what the stack reads"
            if status == 401
            else "see the receiver's log"
        )
        print(f"lockgate: the stack did not accept the delivery ({status}): {hint}", file=sys.stderr)
        return 1
    inbox = InboxStore(target.client("dynamodb"), target.name("InboxTable"))
    deadline = time.monotonic() + (0 if args.no_wait else WAIT_SECONDS)
    while True:
        try:
            delivery = inbox.get(pk)
        except DeliveryNotFound:
            print(f"lockgate: {pk} was acknowledged but is not in the inbox table", file=sys.stderr)
            return 1
        if delivery.status.value in ("done", "failed") or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    print(f"stored {pk}: {delivery.status.value}" + (f" ({delivery.outcome})" if delivery.outcome else ""))
    return 0 if delivery.status.value != "failed" else 1


def webhook_url(args: argparse.Namespace, target: Target, source: str) -> str:
    """``<WebhookBaseUrl><source>``: the local gateway's, or the deployed stack's output."""
    if target.state is not None:
        return f"{target.state['gateway_url']}/webhooks/{source}"
    outputs = (
        target.client("cloudformation").describe_stacks(StackName=args.stack)["Stacks"][0].get("Outputs", [])
    )
    base = next((o["OutputValue"] for o in outputs if o["OutputKey"] == "WebhookBaseUrl"), None)
    if not base:
        raise TargetError(f"stack {args.stack} has no WebhookBaseUrl output")
    return f"{str(base).rstrip('/')}/{source}"


def _put(document: dict[str, Any], dotted: str, value: str) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        document = document.setdefault(part, {})
    document[last] = value


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 - https or loopback
    try:
        with urllib.request.urlopen(request, timeout=15) as response:  # noqa: S310
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode(errors="replace")
