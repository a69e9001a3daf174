"""What docs/SCHEMA.md says a result's digests are under schema 2, computed by hand (sorted
compact JSON, SHA-256), for the migration tests: independent of the project's own digest code."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests import expected


def sha(identity: dict) -> str:
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def stem_of(result: dict) -> str | None:
    return None if result["source"] == "gh-pages" else Path(result["source_key"]).stem


def expected_new(old: dict) -> dict[str, str]:
    """The digests of schema 2 for an upstream result, from the identities docs/SCHEMA.md gives."""
    stem, provider = stem_of(old), old["provider"]
    suite, backend = expected.harness(stem), expected.backend(stem, provider)
    protocol = sha(
        {
            "harness": suite,
            "timed_pass": old["_timed_pass"],
            "metric": old["metric"],
            "unit": old["unit"],
            "statistic": "median",
            "quantiles": [0.5, 0.2, 0.8],
        }
    )
    implementation = sha({"provider": provider, "liger_version": old["liger_version"], "backend": backend})
    series = sha(
        {
            "protocol_digest": protocol,
            "workload_digest": old["workload_digest"],
            "environment_digest": old["environment_digest"],
            "provider": provider,
            "backend": backend,
        }
    )
    return {"protocol": protocol, "implementation": implementation, "series": series}
