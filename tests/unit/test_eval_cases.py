"""Case files: the shipped ones load, and every kind of mistake gets an error naming where it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lockgate.evals import CaseFileError, load_calibration, load_questions, load_suite, parse_suite

EVALS = Path(__file__).resolve().parents[2] / "workflows" / "shop" / "evals"


def suite(**case: Any) -> dict[str, Any]:
    base = {
        "name": "c1",
        "events": [{"from": "ada@example.com", "text": "hi"}],
        "checks": [{"kind": "contains", "text": "hi"}],
    }
    return {"task": "support-inbox", "cases": [{**base, **case}]}


def test_the_shipped_shop_files_load() -> None:
    shop = load_suite(EVALS / "support_inbox.toml")
    assert shop.task == "support-inbox" and shop.gate == 0.8 and shop.id_field == "message_id"
    assert len(shop.cases) >= 10
    assert {"benign", "attack"} <= {t for c in shop.cases for t in c.tags}
    assert len(load_questions(EVALS / "retrieval.toml")) >= 30
    single = load_calibration(EVALS / "calibrate_refund_reply.toml")
    assert single.checks[""].kind == "judge" and len(single.answers) >= 5


def _lines(rubric: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in rubric.strip().splitlines())


def test_the_judge_is_calibrated_on_the_suites_own_rubrics_with_a_held_out_set_of_40_or_more() -> None:
    # Given the shop's judge checks, and its development and held-out labelled answers
    shop = load_suite(EVALS / "support_inbox.toml")
    rubrics = {_lines(c.get("rubric")) for case in shop.cases for c in case.checks if c.kind == "judge"}
    development = load_calibration(EVALS / "judge_development.toml")
    held_out = load_calibration(EVALS / "judge_heldout.toml")
    # Then each set grades exactly the suite's rubrics, every one of them, and says which split it is
    for labelled, split in ((development, "development"), (held_out, "held-out")):
        assert {_lines(c.get("rubric")) for c in labelled.checks.values()} == rubrics
        assert labelled.split == split and labelled.task == "support-inbox"
        assert {a.check for a in labelled.answers} == set(labelled.checks)
        assert {a.label for a in labelled.answers} == {True, False}
    # And the held-out set is big enough to mean something, and states the judge's minimum
    assert len(held_out.answers) >= 40 and held_out.min_agreement == 0.75
    # And no answer is in both sets (the held-out set is never tuned on)
    texts = {a.transcript.final_text for a in development.answers}
    assert not texts & {a.transcript.final_text for a in held_out.answers}


def test_a_good_suite_parses_with_defaults() -> None:
    parsed = parse_suite(suite())
    assert parsed.gate == 0.8 and parsed.event_type == "message" and parsed.id_field is None
    (case,) = parsed.cases
    assert case.checks[0].subject == "final"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cases": []}, "'task' is required"),
        ({"task": "t"}, "no cases"),
        ({**suite(), "gate": 1.5}, "'gate' must be a number from 0 to 1"),
        ({**suite(), "gates": 0.5}, "unknown field 'gates'"),
        (suite(name=""), "every case needs a 'name'"),
        (suite(events=[]), "cases[0] ('c1'): needs at least one [[cases.events]]"),
        (suite(checks=[]), "needs at least one [[cases.checks]]"),
        (
            suite(checks=[{"kind": "contain", "text": "x"}]),
            "unknown kind 'contain'; expected one of contains",
        ),
        (suite(checks=[{"kind": "contains"}]), "checks[0]: a contains check needs 'text'"),
        (suite(checks=[{"kind": "contains", "text": "x", "txt": "y"}]), "unknown field 'txt'"),
        (suite(checks=[{"kind": "contains", "text": 3}]), "'text' must be a str or list, got 3"),
        (suite(checks=[{"kind": "contains", "text": []}]), "non-empty string or list"),
        (suite(checks=[{"kind": "regex", "pattern": "("}]), "not a valid regular expression"),
        (suite(checks=[{"kind": "word_count"}]), "needs 'min', 'max' or both"),
        (suite(checks=[{"kind": "word_count", "min": 9, "max": 2}]), "'min' (9) is more than 'max' (2)"),
        (suite(checks=[{"kind": "word_count", "min": True}]), "'min' must be a int"),
        (suite(checks=[{"kind": "json_keys", "keys": []}]), "'keys' must be a non-empty list"),
        (suite(checks=[{"kind": "judge", "rubric": "  "}]), "'rubric' is empty"),
        (suite(checks=[{"kind": "no_call", "tool": "x", "status": "tried"}]), "'status' must be one of made"),
        (
            suite(checks=[{"kind": "call", "tool": "x", "status": ["made", "x"]}]),
            "'status' must be one of made",
        ),
        (suite(checks=[{"kind": "call", "tool": "x", "status": []}]), "'status' must be one of made"),
        (suite(checks=[{"kind": "contains", "text": "x", "status": ["made"]}]), "'status' must be a str"),
        (suite(checks=[{"kind": "call", "tool": "x", "args": "A-1"}]), "'args' must be a table"),
        (suite(checks=[{"kind": "contains", "text": "x", "in": "send email"}]), "'in' must be \"final\""),
        ({"task": "t", "cases": [suite()["cases"][0]] * 2}, "two cases are called 'c1'"),
    ],
)
def test_mistakes_get_clear_errors(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(CaseFileError) as caught:
        parse_suite(raw, "evals/x.toml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("evals/x.toml")


def test_a_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text('task = "t"\n[[cases]\n', encoding="utf-8")
    with pytest.raises(CaseFileError, match=r"broken.toml: not valid TOML"):
        load_suite(path)


def test_json_case_files_work_too(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(suite()), encoding="utf-8")
    assert load_suite(path).cases[0].name == "c1"


def test_a_missing_file_is_a_case_file_error(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError, match="cannot read"):
        load_suite(tmp_path / "nope.toml")


def test_choosing_cases_by_name_or_tag() -> None:
    shop = load_suite(EVALS / "support_inbox.toml")
    attacks = shop.only(["attack"])
    assert attacks.cases and all("attack" in c.tags for c in attacks.cases)
    assert [c.name for c in shop.only(["where is my order"]).cases] == ["where is my order"]
    with pytest.raises(CaseFileError, match="no case or tag called 'nope'"):
        shop.only(["nope"])


NAMED = '[checks.a]\nkind = "contains"\ntext = "x"\n'
ANSWER = '[[answers]]\ntext = "a"\nlabel = "pass"\n'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[check]\nkind = "contains"\ntext = "x"\n', r"no \[\[answers\]\]"),
        (
            '[check]\nkind = "contains"\ntext = "x"\n[[answers]]\ntext = "a"\nlabel = "ok"\n',
            "'label' must be",
        ),
        ('[check]\nkind = "nope"\n[[answers]]\ntext = "a"\nlabel = "pass"\n', "unknown kind 'nope'"),
        ('[[answers]]\ntext = "a"\nlabel = "pass"\n', r"either one \[check\] or named"),
        (f'{NAMED}[check]\nkind = "contains"\ntext = "x"\n{ANSWER}check = "a"\n', "either one"),
        (f"{NAMED}{ANSWER}", "'check' must name one of the file's checks \\('a'\\), got ''"),
        (f'{NAMED}{ANSWER}check = "b"\n', "got 'b'"),
        (f'{ANSWER}[check]\nkind = "contains"\ntext = "x"\n', "yes"),
        (f'split = "test"\n{NAMED}{ANSWER}check = "a"\n', "'split' must be one of development, held-out"),
        (f'min_agreement = 2\n{NAMED}{ANSWER}check = "a"\n', "'min_agreement' must be a number from 0 to 1"),
        (f'task = 3\n{NAMED}{ANSWER}check = "a"\n', "'task' must be"),
    ],
)
def test_calibration_files_are_validated(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "cal.toml"
    path.write_text(body, encoding="utf-8")
    if message == "yes":  # the single-check form: answers name no check
        assert load_calibration(path).answers[0].check == ""
        return
    with pytest.raises(CaseFileError, match=message):
        load_calibration(path)


def test_question_files_are_validated(tmp_path: Path) -> None:
    path = tmp_path / "q.toml"
    path.write_text('[[questions]]\ntext = "where is it"\n', encoding="utf-8")
    with pytest.raises(CaseFileError, match="'text' and 'expected' must be non-empty strings"):
        load_questions(path)


@pytest.mark.parametrize(
    ("status", "matches"),
    [("made", True), ("proposed", True), ("blocked", False)],
)
def test_a_call_check_may_accept_several_statuses(status: str, matches: bool) -> None:
    # Given a check that the customer was answered: sent, or held for a person
    from lockgate.evals.cases import parse_check
    from lockgate.evals.checks import call_matches
    from lockgate.evals.evidence import ToolCall

    check = parse_check(
        {"kind": "call", "tool": "send_email", "status": ["made", "proposed"], "args": {"to": "a@x"}}, "c"
    )
    # Then a reply made or proposed meets it, a blocked one does not
    assert call_matches(ToolCall("send_email", {"to": "a@x"}, status), check) is matches
    assert check.describe() == 'call made|proposed send_email({"to": "a@x"})'
