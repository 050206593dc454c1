"""The API reference (docs/reference/api.md) is complete: every public name is on it, with a docstring.

The page is written out from the code (``python -m lockgate_infra.docsite``), read statically with
griffe: a public name without a docstring, a field of a public class without its sentence (a string
on the line after it), or a public name the page leaves out fails here, naming the object, the
field and the line. ``tests/unit/test_docs_reference.py`` fails when the page is stale.
"""

from __future__ import annotations

import re
from pathlib import Path

import griffe
import pytest

import lockgate
import lockgate_infra.testing

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "api.md"
SEARCH_PATHS = [ROOT / "layers" / "core", ROOT / "infra"]
# Each public package and its names (public name → the module that defines it).
PUBLIC = {
    "lockgate": lockgate._PUBLIC,  # noqa: SLF001
    "lockgate_infra.testing": lockgate_infra.testing._PUBLIC,  # noqa: SLF001
}
# Not imported by name, but used by every author: what ``when(...)`` returns, and the fixtures.
RETURNED = ("lockgate_infra.stub.scripted.When",)
PLUGIN = "lockgate_infra.testing.plugin"
# Each entry's second line: "class `lockgate.Task`, defined in `lockgate.agent.tasks`".
ENTRY = re.compile(r"^(?:class|function|attribute|fixture) `(\S+)`", re.MULTILINE)


def _loaded(search_paths: list[Path], *packages: str) -> griffe.ModulesCollection:
    loader = griffe.GriffeLoader(search_paths=search_paths)
    for package in packages:
        loader.load(package)
    return loader.modules_collection


@pytest.fixture(scope="module")
def code() -> griffe.ModulesCollection:
    return _loaded(SEARCH_PATHS, "lockgate", "lockgate_infra.testing", "lockgate_infra.stub.scripted")


def _has_docstring(obj: griffe.Object | griffe.Alias) -> bool:
    return obj.docstring is not None and bool(obj.docstring.value.strip())


def _where(obj: griffe.Object | griffe.Alias) -> str:
    return f"{obj.relative_filepath}:{obj.lineno}"


def undocumented(shown_as: str, obj: griffe.Object | griffe.Alias) -> list[str]:
    """What lacks a docstring: the object itself and, for a class, each public member it defines."""
    missing = []
    if not _has_docstring(obj):
        missing.append(f"{shown_as} ({_where(obj)}) has no docstring")
    if obj.is_class:
        for name, member in obj.members.items():
            if name.startswith("_") or member.is_alias or _has_docstring(member):
                continue
            if member.is_attribute:
                what = "field" if "property" not in member.labels else "property"
                advice = "write one sentence, as a string on the line after it"
            else:
                what, advice = "method", "give it a docstring"
            missing.append(f"{shown_as}.{name} ({_where(member)}): the {what} has no docstring; {advice}")
    return missing


def fixtures(code: griffe.ModulesCollection) -> list[str]:
    """The pytest plugin's fixtures, by path."""
    plugin = code.get_member(PLUGIN)
    return [
        f"{PLUGIN}.{name}"
        for name, member in plugin.members.items()
        if not member.is_alias  # its imports
        and member.is_function
        and any("fixture" in str(decorator.value) for decorator in member.decorators)
    ]


def _api(code: griffe.ModulesCollection) -> dict[str, griffe.Object | griffe.Alias]:
    """Every object the page must show, by the path it is shown under (the public import path)."""
    api: dict[str, griffe.Object | griffe.Alias] = {}
    for package, names in PUBLIC.items():
        for name, module in names.items():
            api[f"{package}.{name}"] = code.get_member(f"{module}.{name}")
    for path in (*RETURNED, *fixtures(code)):
        api[path] = code.get_member(path)
    return api


def test_every_public_name_and_each_of_its_fields_has_a_docstring(code: griffe.ModulesCollection) -> None:
    missing = [line for path, obj in _api(code).items() for line in undocumented(path, obj)]
    assert not missing, "the API reference would show these without a word:\n" + "\n".join(missing)


def test_every_public_name_is_on_the_reference_page(code: griffe.ModulesCollection) -> None:
    shown = set(ENTRY.findall(PAGE.read_text(encoding="utf-8")))
    absent = sorted(set(_api(code)) - shown)
    assert not absent, f"add each to a group in lockgate_infra/docsite/api_page.py (GROUPS): {absent}"


def test_each_entry_on_the_page_is_a_public_object(code: griffe.ModulesCollection) -> None:
    for path in ENTRY.findall(PAGE.read_text(encoding="utf-8")):
        assert path in _api(code), f"{PAGE.relative_to(ROOT)} shows {path}, which is not public API"


def test_the_page_states_what_a_scripted_models_rules_read_and_how_a_turn_combines_them() -> None:
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    for fact in (
        "A result is the tool's return value as JSON with sorted keys",
        "A result that is an error is its text instead",
        "The named groups of every rule that matches combine into one set of captures",
        "The delivery is done with the outcome `<task>: skipped: <reason>`",
    ):
        assert fact in page, fact


def test_the_fixtures_are_found(code: griffe.ModulesCollection) -> None:
    assert fixtures(code) == [
        f"{PLUGIN}.lockgate_model",
        f"{PLUGIN}.lockgate_environment",
        f"{PLUGIN}.lockgate_stack",
    ]


def test_setup_states_the_contract_of_a_workflows_package(code: griffe.ModulesCollection) -> None:
    setup = code.get_member("lockgate.workflows.Setup")
    for part in ("register(setup)", "RESOURCES", "seed_local(client, resources)"):
        assert part in setup.docstring.value


def test_a_field_without_its_sentence_is_named_with_its_class_and_line(tmp_path: Path) -> None:
    # Given a public dataclass with one field documented and one not, and a method without a docstring
    package = tmp_path / "authored"
    package.mkdir()
    (package / "__init__.py").write_text(
        '"""A package."""\n'
        "from dataclasses import dataclass\n\n\n"
        "@dataclass\n"
        "class Thing:\n"
        '    """A thing."""\n\n'
        "    said: int = 1\n"
        '    """What it said."""\n\n'
        "    bare: str = ''\n\n"
        "    def act(self) -> None:\n"
        "        pass\n",
        encoding="utf-8",
    )
    # When it is checked as the API reference's test checks every public class
    thing = _loaded([tmp_path], "authored").get_member("authored.Thing")
    missing = undocumented("authored.Thing", thing)
    # Then the field and the method are named, with their lines, and the documented field is not
    file = package / "__init__.py"
    assert missing == [
        f"authored.Thing.bare ({file}:12): the field has no docstring; "
        "write one sentence, as a string on the line after it",
        f"authored.Thing.act ({file}:14): the method has no docstring; give it a docstring",
    ]
