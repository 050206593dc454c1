"""The hashed locks (`make lock`) agree with the lists they are compiled from, and with each other.

Offline: a lock that misses a requirement, pins a version its list excludes, has an entry without a
hash, or pins a package at a different version than the layer, fails here before `sam build` or
`make setup` would install it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "core"
FUNCTIONS = ("agent_worker", "scheduled_jobs", "eval_jobs")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")


def pins(lock: Path) -> dict[str, str]:
    """name → pinned version of a pip-compile lock; every entry must carry a hash."""
    entries = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text(encoding="utf-8"))
    pinned = {}
    for entry in entries:
        match = _PIN.match(entry)
        if match is None:
            continue
        assert "--hash=sha256:" in entry, f"{lock}: {match.group(1)} has no hash"
        pinned[str(canonicalize_name(match.group(1)))] = match.group(2)
    return pinned


def listed(source: Path) -> list[Requirement]:
    """The requirements of a requirements.in (constraint and comment lines aside)."""
    lines = (line.split("#", 1)[0].strip() for line in source.read_text(encoding="utf-8").splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def assert_locked(requirements: list[Requirement], locked: dict[str, str], where: str) -> None:
    for requirement in requirements:
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = str(canonicalize_name(requirement.name))
        assert name in locked, f"{where}: {requirement} is not in the lock: run make lock"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"{where}: {requirement} does not allow the locked {locked[name]}: run make lock"
        )


@pytest.mark.parametrize(
    "folder", [LAYER, *(ROOT / "functions" / f for f in FUNCTIONS)], ids=lambda p: p.name
)
def test_given_each_deployed_lock_then_it_pins_with_hashes_everything_its_list_asks_for(folder):
    locked = pins(folder / "requirements.txt")
    assert_locked(listed(folder / "requirements.in"), locked, str(folder.relative_to(ROOT)))


@pytest.mark.parametrize("function", FUNCTIONS)
def test_given_a_function_lock_then_what_it_shares_with_the_layer_is_the_layers_version(function):
    layer, own = pins(LAYER / "requirements.txt"), pins(ROOT / "functions" / function / "requirements.txt")
    shared = set(layer) & set(own)
    if function != "eval_jobs":  # anthropic brings pydantic: the same version as the layer's
        assert {"pydantic", "pydantic-core"} <= shared
    assert {name: own[name] for name in shared} == {name: layer[name] for name in shared}


def test_given_the_dev_lock_then_it_pins_every_dependency_of_both_projects_but_the_local_one():
    locked = pins(ROOT / "requirements-dev.txt")
    for pyproject in (ROOT / "pyproject.toml", LAYER / "pyproject.toml"):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        wanted = [Requirement(r) for r in project["dependencies"]]
        wanted += [Requirement(r) for r in project.get("optional-dependencies", {}).get("dev", [])]
        # lockgate is layers/core itself: installed editable, never from an index.
        assert_locked([r for r in wanted if r.name != "lockgate"], locked, pyproject.name)
    assert "lockgate" not in locked
    # The dev environment runs what the layer ships at the layer's versions.
    layer = pins(LAYER / "requirements.txt")
    assert {name: locked[name] for name in layer} == layer


def test_given_the_receiver_and_callback_then_they_install_nothing_of_their_own():
    for function in ("webhook_receiver", "approval_callback"):
        text = (ROOT / "functions" / function / "requirements.txt").read_text(encoding="utf-8")
        assert all(not line.strip() or line.startswith("#") for line in text.splitlines()), function


def test_given_a_function_allowed_to_read_mcp_credentials_then_its_lock_has_the_mcp_sdk_of_the_tests():
    # Given each function whose role reads [mcp.servers.*] credentials (it calls MCP tools: the worker
    # the model's calls, the jobs the reconcile tools), in template.yaml
    from lockgate_infra.local.template import load_template

    resources = load_template(ROOT / "template.yaml")["Resources"]
    functions = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Serverless::Function"]
    callers = sorted(
        function["CodeUri"].strip("/").removeprefix("functions/")
        for function in functions
        if "Role" in function and "ReadMcpCredentials" in str(resources[function["Role"]["Fn::GetAtt"][0]])
    )
    assert callers == ["agent_worker", "scheduled_jobs"]
    # Then each ships the mcp SDK (imported on the first call: without it the call fails deployed),
    # at the version the tests run
    tested = pins(ROOT / "requirements-dev.txt")["mcp"]
    for function in callers:
        assert pins(ROOT / "functions" / function / "requirements.txt").get("mcp") == tested, function
