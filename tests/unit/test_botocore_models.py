"""One botocore loader per process that runs many stacks: each service's model is parsed once."""

from __future__ import annotations

import boto3

from lockgate_infra.local.botocore_models import share_botocore_models


def test_every_new_session_reads_models_through_one_loader_that_lists_each_path_once() -> None:
    # Given the loader shared (a stack's start does it; so does this test process), asked twice
    share_botocore_models()
    share_botocore_models()
    # When sessions are made, as each function's composition root makes its own
    first, second = (boto3.session.Session(region_name="us-east-1") for _ in range(2))
    loader = first._loader  # noqa: SLF001
    # Then they read through the same loader, so a model parsed for one is there for the other
    assert second._loader is loader  # noqa: SLF001
    first.client("dynamodb", aws_access_key_id="x", aws_secret_access_key="y")
    assert any(key[1] == "dynamodb" for key in loader._cache)  # noqa: SLF001
    # And each boto3 session's own data path is listed once, not once per session
    assert len(loader.search_paths) == len(set(loader.search_paths))
