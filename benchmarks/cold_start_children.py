"""The fresh processes ``cold_start`` samples: the child scripts, their environment and config,
and running one child to read back the figures it prints."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RECEIVER_DIR = ROOT / "functions" / "webhook_receiver"
LAYER_DIR = ROOT / "layers" / "core"  # /opt/python in Lambda
AGENT_DEPENDENCIES = ("anthropic", "pydantic")
MARKER = "COLD-START-RESULT "

BARE_HANDLER = '''"""A bare handler: boto3 and the receiver's import-time clients."""
import boto3

session = boto3.session.Session()
dynamodb = session.client("dynamodb")
sqs = session.client("sqs")
s3 = session.client("s3")


def handler(event, context):
    return {"statusCode": 200, "body": "ok"}
'''

# Runs in the child: put the function's folder and the layer first on sys.path, time the import.
CHILD = f"""
import importlib, json, sys, time
sys.path[:0] = sys.argv[1:]
started = time.perf_counter()
importlib.import_module("app")
seconds = time.perf_counter() - started
print({MARKER!r} + json.dumps({{"seconds": seconds, "modules": len(sys.modules),
      "loaded": [m for m in {AGENT_DEPENDENCIES!r} if m in sys.modules]}}))
"""


# Runs in the child: moto in-process, the shipped config's secrets created, every call counted.
CALLS_CHILD = f"""
import base64, importlib, json, os, sys, tomllib
import boto3, botocore.handlers
from moto import mock_aws
sys.path[:0] = sys.argv[1:]
calls = {{}}
def count(event_name, **_):
    _, service, operation = event_name.split(".", 2)
    calls[service + "." + operation] = calls.get(service + "." + operation, 0) + 1
botocore.handlers.BUILTIN_HANDLERS.append(("before-send", count))
with mock_aws():
    with open(os.environ["LOCKGATE_CONFIG"], "rb") as handle:
        refs = [r for s in tomllib.load(handle)["sources"].values() for r in s["secrets"]]
    manager = boto3.client("secretsmanager")
    for ref in refs:
        if ref.startswith("secretsmanager:"):
            value = base64.b64encode(os.urandom(24)).decode()
            manager.create_secret(Name=ref.partition(":")[2], SecretString=value)
    calls.clear()
    importlib.import_module("app")
print({MARKER!r} + json.dumps(calls))
"""


@dataclass(frozen=True)
class Sample:
    """One child process's figures."""

    seconds: float
    modules: int
    loaded: tuple[str, ...]


def child_environment(config_path: Path) -> dict[str, str]:
    """What Lambda would set for the receiver (template Globals + function env), with fake AWS."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "LOCKGATE_"))}
    keep.pop("PYTHONPATH", None)
    return {
        **keep,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # nowhere: the import must not call AWS
        "AWS_LAMBDA_FUNCTION_NAME": "lockgate-webhook-receiver",
        "POWERTOOLS_SERVICE_NAME": "lockgate",
        "POWERTOOLS_METRICS_NAMESPACE": "Lockgate",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "LOCKGATE_CONFIG": str(config_path),
        "LOCKGATE_STAGE": "dev",
        "INBOX_TABLE": "lockgate-inbox",
        "BODY_BUCKET": "lockgate-bodies",
        "INBOX_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/lockgate-inbox",
    }


def env_secrets_config(workdir: Path) -> tuple[Path, dict[str, str]]:
    """The shipped lockgate.toml with each ``secretsmanager:NAME`` turned into ``env:VAR``."""
    values: dict[str, str] = {}

    def to_env(match: re.Match[str]) -> str:
        var = "BENCH_SECRET_" + re.sub(r"\W", "_", match.group(1)).upper()
        values[var] = base64.b64encode(secrets.token_bytes(24)).decode()  # valid for every scheme
        return f'"env:{var}"'

    text = re.sub(r'"secretsmanager:([^"]+)"', to_env, (ROOT / "lockgate.toml").read_text())
    path = workdir / "lockgate.toml"
    path.write_text(text)
    return path, values


def compile_project(*folders: Path) -> None:
    """Write .pyc files, as a built layer ships them (PYTHONDONTWRITEBYTECODE=1 stops the children)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, folders)], check=True)


def changed_since(since: float, folders: Iterable[Path]) -> list[str]:
    """Sources modified after ``since``: their .pyc went stale mid-run, so those samples compiled them."""
    return sorted(
        str(p.relative_to(ROOT))
        for folder in folders
        for p in folder.rglob("*.py")
        if p.stat().st_mtime > since
    )


def calls_at_import(env: dict[str, str]) -> dict[str, int]:
    """AWS calls made while importing the receiver with the shipped lockgate.toml, under moto."""
    env = {k: v for k, v in env.items() if not k.startswith("AWS_ENDPOINT_URL")}
    env["LOCKGATE_CONFIG"] = str(ROOT / "lockgate.toml")
    done = subprocess.run(
        [sys.executable, "-c", CALLS_CHILD, str(RECEIVER_DIR), str(LAYER_DIR)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=RECEIVER_DIR,
    )
    counts: dict[str, int] = _reported(done, "counting the receiver's import calls failed")
    return counts


def run_child(function_dir: Path, env: dict[str, str], importtime: bool = False) -> tuple[Sample, str]:
    """Import ``function_dir``'s ``app`` in a fresh process: its figures, and its stderr (importtime)."""
    args = [
        sys.executable,
        *(["-X", "importtime"] if importtime else []),
        "-c",
        CHILD,
        str(function_dir),
        str(LAYER_DIR),
    ]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False, cwd=function_dir)
    data = _reported(done, f"import of {function_dir / 'app.py'} failed")
    sample = Sample(data["seconds"], data["modules"], tuple(data["loaded"]))
    return sample, done.stderr


def _reported(done: subprocess.CompletedProcess[str], failure: str) -> Any:
    """The JSON the child printed after ``MARKER`` (its last such line); ``failure`` if it printed none."""
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{failure}:\n{done.stderr[-3000:]}")
    return json.loads(lines[-1].removeprefix(MARKER))
