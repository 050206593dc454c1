"""API Gateway's HTTP API payload 2.0, both ways: a request as the event a function receives, and
the function's reply as the HTTP response the client gets."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from lockgate_infra.local.functions import Route
from lockgate_infra.local.intrinsics import ACCOUNT_ID


def _joined_headers(headers: Sequence[tuple[str, str]], source_ip: str) -> tuple[dict[str, str], list[str]]:
    """Headers as payload 2.0 has them: lower-case, repeats comma-joined, cookies taken out."""
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":  # 2.0 moves cookies out of the headers
            cookies += [c.strip() for c in value.split(";") if c.strip()]
        else:
            joined[key] = f"{joined[key]},{value}" if key in joined else value
    joined.setdefault("x-forwarded-for", source_ip)
    joined.setdefault("x-forwarded-proto", "http")
    return joined, cookies


def _joined_query(raw: str) -> dict[str, str]:
    """Query parameters as payload 2.0 has them: repeats comma-joined."""
    query: dict[str, str] = {}
    for key, value in parse_qsl(raw, keep_blank_values=True):
        query[key] = f"{query[key]},{value}" if key in query else value
    return query


def build_event(
    *,
    method: str,
    target: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    route: Route,
    path_parameters: dict[str, str],
    source_ip: str,
    always_base64: bool = False,
    api_id: str = "local",
    request_id: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The payload-2.0 event API Gateway would send for this request."""
    now = time.time() if now is None else now
    split = urlsplit(target)
    joined, cookies = _joined_headers(headers, source_ip)
    query = _joined_query(split.query)
    domain = joined.get("host", "localhost").split(":")[0]
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.route_key,
        "rawPath": split.path or "/",
        "rawQueryString": split.query,
        "headers": joined,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": api_id,
            "domainName": domain,
            "domainPrefix": domain.split(".")[0],
            "http": {
                "method": method.upper(),
                "path": split.path or "/",
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": request_id or str(uuid.uuid4()),
            "routeKey": route.route_key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = path_parameters
    if body:
        text = None if always_base64 else _utf8(body)
        if text is None:
            event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode("ascii"), True
        else:
            event["body"] = text
    return event


def _utf8(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def http_response(result: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body from a handler's 2.0 response; ValueError if API Gateway would refuse it."""
    if not (isinstance(result, dict) and "statusCode" in result):
        # 2.0 infers a response from any other JSON value.
        return 200, [("content-type", "application/json")], json.dumps(result).encode()
    status = result["statusCode"]
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise ValueError(f"statusCode must be an HTTP status, got {status!r}")
    headers = [(str(k), str(v)) for k, v in (result.get("headers") or {}).items()]
    headers += [("set-cookie", str(c)) for c in result.get("cookies") or []]
    body = result.get("body")
    if body is None:
        return status, headers, b""
    if not isinstance(body, str):
        raise ValueError(f"body must be a string, got {type(body).__name__}")
    return status, headers, base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
