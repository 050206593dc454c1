"""An invocation that adds no metric (a page opened, a version checked) warns nothing; other warnings do."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from aws_lambda_powertools import Metrics

from lockgate.telemetry import expect_empty_metrics

ROOT = Path(__file__).resolve().parents[2]


def test_given_a_handler_that_adds_no_metric_then_powertools_warns_nothing() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expect_empty_metrics()  # as every handler does at import
        metrics = Metrics(namespace="Lockgate", service="test")

        @metrics.log_metrics
        def handler(event: dict[str, str], context: object) -> dict[str, str]:
            warnings.warn("something else", UserWarning, stacklevel=1)
            return {}

        handler({}, None)
    assert [str(w.message) for w in caught] == ["something else"]


def test_every_handler_expects_empty_metrics_at_import() -> None:
    for app in sorted((ROOT / "functions").glob("*/app.py")):
        text = app.read_text(encoding="utf-8")
        if "log_metrics" in text:
            assert re.search(r"^expect_empty_metrics\(\)", text, re.M), app
