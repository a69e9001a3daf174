"""Settings of an object-store warehouse root (``s3://bucket/prefix``), read from the environment.

Credentials, region and profile come from the standard AWS chain (``AWS_ACCESS_KEY_ID``,
``AWS_PROFILE``, instance roles, ...); nothing here stores or logs them. The endpoint is
``LIGER_WAREHOUSE_S3_ENDPOINT`` when set, else botocore's own ``AWS_ENDPOINT_URL_S3`` /
``AWS_ENDPOINT_URL``, else AWS itself.
"""

from __future__ import annotations

from liger_warehouse import settings

S3_PROTOCOLS = ("s3", "s3a")


def protocol(url: str) -> str:
    return url.split("://", 1)[0] if "://" in url else "file"


def storage_options(url: str) -> dict:
    """fsspec options for the filesystem of ``url``; empty for anything but S3."""
    if protocol(url) not in S3_PROTOCOLS:
        return {}
    # No listing cache: another writer's new objects (a new CURRENT, new parts) must be seen at
    # once; a stale listing could make a content-addressed write skip or a reader miss a part.
    options: dict = {"use_listings_cache": False}
    endpoint = settings.current().s3_endpoint
    if endpoint:
        options["endpoint_url"] = endpoint
    return options
