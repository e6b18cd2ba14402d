"""Check an AWS Signature Version 4 ``Authorization`` header, as boto3 signs a request.

A boto3 client pointed at the service (``endpoint_url``) signs each request with its secret
key; the service's API token is that secret, so ``verify`` recomputes the signature with
botocore's own signer over the headers the client says it signed and the body as received
(never a payload hash the client claims), and accepts it only within ``MAX_SKEW_SECONDS`` of
the signing time (AWS's own window), so a captured request cannot be replayed later.
botocore comes with the ``s3`` extra; without it ``verify`` raises ``MissingExtra``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from calendar import timegm
from collections.abc import Mapping
from dataclasses import dataclass

from tuner.extras import require

TIMESTAMP = "%Y%m%dT%H%M%SZ"  # X-Amz-Date
MAX_SKEW_SECONDS = 15 * 60
ALGORITHM = "AWS4-HMAC-SHA256"
_HEADER = re.compile(
    rf"^{ALGORITHM} Credential=(?P<key>[^/,\s]+)/(?P<date>\d{{8}})/(?P<region>[a-z0-9-]+)/"
    r"(?P<service>[a-z0-9-]+)/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;-]+), ?"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


_HOST = re.compile(r"[A-Za-z0-9.-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")


class SignatureRejected(Exception):
    """The request is not signed, or not with the expected secret (the message says which)."""


@dataclass(frozen=True)
class Signer:
    """Who signed a request that ``verify`` accepted: the access key id and the region."""

    access_key: str
    region: str


def verify(
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    secret: str,
    service: str,
    now: float | None = None,
) -> Signer:
    """The signer of a request whose ``Authorization`` header holds a valid SigV4 signature
    for ``service`` made with ``secret``; ``SignatureRejected`` otherwise (``MissingExtra``
    without botocore). ``headers``' names are matched case-insensitively."""
    lower = {k.lower(): v for k, v in headers.items()}
    match = _HEADER.match(lower.get("authorization", ""))
    if match is None:
        raise SignatureRejected(f"an {ALGORITHM} Authorization header is required")
    if match["service"] != service:
        raise SignatureRejected(f"the signature is for {match['service']!r}, not {service!r}")
    signed = match["signed"].split(";")
    stamp = lower.get("x-amz-date", "")
    if "host" not in signed or "x-amz-date" not in signed or not stamp.startswith(match["date"]):
        raise SignatureRejected("host and x-amz-date must be signed, on the credential's date")
    try:
        signed_at = timegm(time.strptime(stamp, TIMESTAMP))
    except ValueError:
        raise SignatureRejected(
            f"X-Amz-Date must read like 20261126T101500Z, got {stamp!r:.40}"
        ) from None
    if abs((time.time() if now is None else now) - signed_at) > MAX_SKEW_SECONDS:
        raise SignatureRejected("the request was signed more than 15 minutes from now")
    digest = hashlib.sha256(body).hexdigest()
    if lower.get("x-amz-content-sha256", digest) != digest:
        raise SignatureRejected("X-Amz-Content-SHA256 is not the body's hash")
    missing = [name for name in signed if name not in lower]
    if missing:
        raise SignatureRejected(f"signed headers missing from the request: {missing}")
    unsigned = [name for name in lower if name.startswith("x-amz-") and name not in signed]
    if unsigned:  # X-Amz-Target names the operation: never taken unsigned
        raise SignatureRejected(f"every x-amz- header must be signed, got {unsigned} unsigned")
    if not _HOST.fullmatch(lower["host"]):
        raise SignatureRejected(f"Host must be a host name or address, got {lower['host']!r:.80}")
    feature = "a SigV4-signed request (boto3's client)"
    auth = require("botocore.auth", "s3", feature)
    awsrequest = require("botocore.awsrequest", "s3", feature)
    credentials = require("botocore.credentials", "s3", feature)
    url = f"http://{lower['host']}{path}" + (f"?{query}" if query else "")
    request = awsrequest.AWSRequest(method, url, {n: lower[n] for n in signed}, body)
    request.context["timestamp"] = stamp
    signer = auth.SigV4Auth(credentials.Credentials(match["key"], secret), service, match["region"])
    try:
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
    except ValueError as exc:  # a URL botocore cannot split: never a 500
        raise SignatureRejected(f"the request cannot be signed as sent: {exc}") from None
    if not hmac.compare_digest(expected, match["signature"]):
        raise SignatureRejected("the signature does not match: sign with the service's token")
    return Signer(match["key"], match["region"])
