"""Every ``lockgate`` command's ``--help`` works: a user's first command must never crash."""

from __future__ import annotations

import argparse

import pytest

from lockgate_infra.cli.main import _parser, main


def commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the parser, sub-commands included, e.g. ("inbox", "retry")."""
    found = [prefix]
    for action in parser._actions:  # noqa: SLF001 - argparse exposes sub-parsers only here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                found.extend(commands(sub, (*prefix, name)))
    return found


@pytest.mark.parametrize("path", commands(_parser()), ids=lambda p: " ".join(p) or "lockgate")
def test_given_any_command_when_asked_for_help_then_it_prints_usage_and_exits_0(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*path, "--help"])
    assert exited.value.code == 0
    assert "usage: lockgate" in capsys.readouterr().out
