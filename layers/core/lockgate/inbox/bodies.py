"""Bodies too large for a DynamoDB item live in S3; the item keeps a pointer."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from lockgate.errors import StoreUnavailable

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

PREFIX = "bodies/"


class BodyStore:
    """Puts and gets delivery bodies in the body bucket."""

    def __init__(self, s3: S3Client, bucket: str) -> None:
        self._s3 = s3
        self._bucket = bucket

    def put(self, pk: str, body: bytes) -> str:
        """Store a body under a key derived from the delivery key; return its reference."""
        # Hash the key: provider ids are not trusted to be safe S3 key material.
        key = PREFIX + hashlib.sha256(pk.encode()).hexdigest()
        try:
            self._s3.put_object(Bucket=self._bucket, Key=key, Body=body)
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
        return f"s3://{self._bucket}/{key}"

    def get(self, ref: str) -> bytes:
        """Read a body back by its reference."""
        bucket, _, key = ref.removeprefix("s3://").partition("/")
        try:
            response = self._s3.get_object(Bucket=bucket, Key=key)
            return bytes(response["Body"].read())
        except (ClientError, BotoCoreError) as exc:
            raise StoreUnavailable(type(exc).__name__) from exc
