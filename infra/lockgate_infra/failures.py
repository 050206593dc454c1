"""What `lockgate` says when a command cannot run: one line per failure, chosen by the error's type.

Exit codes (the README's "Exit codes" lists them): 0 ok; 1 the check or gate failed; 2 the command
could not run (bad input, unknown id, no stack, no credentials, an AWS or model API error);
130 interrupted.
"""

from __future__ import annotations

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ProfileNotFound,
)
from botocore.exceptions import ConnectionError as AwsConnectionError

from lockgate.errors import DeliveryNotFound, LockgateError

OK, FAILED, COULD_NOT_RUN, INTERRUPTED = 0, 1, 2, 130
MAX_CHARS = 400
LOCAL = "the local stack"  # what ``where`` says for a `lockgate local` target


class CommandError(Exception):
    """A command cannot run for a reason its message already says in one line (e.g. no such stack)."""


def explain(exc: Exception, where: str) -> str:
    """One line saying what went wrong and what to do; ``where`` names the target (e.g. "stack dev")."""
    return one_line(_explain(exc, where))


def one_line(text: str) -> str:
    """``text`` with its lines joined, clipped: a message never spans lines or fills a screen."""
    joined = "; ".join(line.strip() for line in str(text).splitlines() if line.strip())
    return joined if len(joined) <= MAX_CHARS else joined[: MAX_CHARS - 1] + "…"


def _explain(exc: Exception, where: str) -> str:
    if isinstance(exc, DeliveryNotFound):
        return f"no delivery {exc} in {where}; list them with `lockgate inbox status`"
    if isinstance(exc, CommandError | LockgateError):
        return str(exc)
    if isinstance(exc, BotoCoreError | ClientError):
        return _aws(exc, where)
    if isinstance(exc, OSError):
        return _file(exc)
    if isinstance(exc, ValueError):
        return str(exc) or f"bad input ({type(exc).__name__})"
    return (
        f"unexpected {type(exc).__name__}: {exc}; re-run with `lockgate --debug ...` "
        "for the traceback, and please report it"
    )


def _aws(exc: BotoCoreError | ClientError, where: str) -> str:
    if isinstance(exc, NoRegionError):
        return "no AWS region: pass --region, set AWS_REGION, or set region in samconfig.toml"
    if isinstance(exc, NoCredentialsError):
        return (
            "no AWS credentials: run `aws configure` (or `aws sso login`), set AWS_PROFILE, or pass --profile"
        )
    if isinstance(exc, ProfileNotFound):
        return f"{exc}: check --profile or AWS_PROFILE"
    if isinstance(exc, AwsConnectionError | HTTPClientError):
        hint = "is `lockgate local` still running?" if where == LOCAL else "check the region and your network"
        return f"cannot reach AWS for {where} ({exc}); {hint}"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return (
            f"AWS refused {exc.operation_name} on {where}: {error.get('Code', '?')}: "
            f"{error.get('Message', '')}; check the stack name, region and your permissions"
        )
    return f"AWS client error for {where}: {exc}"


def _file(exc: OSError) -> str:
    if exc.filename is None:
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"{exc.filename}: no such file; check the path"
    return f"cannot use {exc.filename}: {exc.strerror or exc}"
