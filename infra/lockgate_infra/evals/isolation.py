"""An eval's AWS: moto in this process, and nothing that could send a call anywhere else."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def isolated_aws(region: str) -> Iterator[Any]:
    """moto for everything inside, and a boto3 session made under it (so no client can reach AWS).

    An endpoint override in the environment (``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT_URL_<SERVICE>``:
    a local stack, LocalStack) would send boto3 past moto's interception to that endpoint, so
    they are cleared for as long as the eval runs.
    """
    from lockgate_infra.local.fidelity import embedded_aws

    saved = {
        k: v for k, v in os.environ.items() if k == "AWS_ENDPOINT_URL" or k.startswith("AWS_ENDPOINT_URL_")
    }
    for key in saved:
        del os.environ[key]
    try:
        with embedded_aws():
            import boto3

            # One session for every world: botocore then loads each service model once.
            yield boto3.session.Session(region_name=region)
    finally:
        os.environ.update(saved)
