"""A small HTTP client for a Geofabric gateway (standard library only): signs compute requests
(docs/protocol.md §10.3), submits them, reads jobs and their receipts (§15)."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Optional

from .crypto import public_key_of, sign
from .receipt import Verdict, signing_message, verify_receipt


class GeofabricError(Exception):
    """An error answer: ``{error, detail}`` with its HTTP status (and the whole body, e.g. a failed job)."""

    def __init__(self, status: int, code: str, detail: str, body: Any):
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail, self.body = status, code, detail, body


class GeofabricClient:
    def __init__(self, base_url: str, secret_key: Optional[str] = None, timeout: float = 60.0):
        self.base_url = base_url.rstrip("/")
        self._secret_key = secret_key
        self.public_key = public_key_of(secret_key) if secret_key else None
        self.timeout = timeout

    def sign_request(self, body: dict) -> tuple[dict, str]:
        """The body with ``requester_pk`` and ``signature``, and the ``X-Idn-Signature`` value."""
        if not self._secret_key:
            raise ValueError("no secret_key to sign with")
        if body.get("requester_pk", self.public_key) != self.public_key:
            raise ValueError("requester_pk in the body is not this client key")
        with_key = {**body, "requester_pk": self.public_key}
        signature = sign(self._secret_key, signing_message(with_key))
        return {**with_key, "signature": signature}, signature

    def submit_job(self, request: dict, wait: "bool | float" = False, delegation: Any = None) -> dict:
        """Signs and POSTs ``/v1/compute``; ``wait`` (True or seconds) polls after a 504 ``job_timeout``."""
        body, signature = self.sign_request(request)
        headers = {"content-type": "application/json", "x-idn-signature": signature}
        if delegation is not None:
            headers["x-svc-delegation-cert"] = (
                delegation if isinstance(delegation, str) else base64.b64encode(json.dumps(delegation).encode()).decode()
            )
        status, answer = self._request("POST", "/v1/compute", body, headers)
        if 200 <= status < 300:
            return answer
        if status == 504 and answer.get("error") == "job_timeout" and wait:
            return self._wait_for_job(answer["job_id"], 600.0 if wait is True else float(wait))
        raise GeofabricError(status, str(answer.get("error", "http_error")), str(answer.get("detail", "")), answer)

    def get_job(self, job_id: str) -> dict:
        return self._get(f"/v1/compute/{urllib.parse.quote(job_id)}")

    def get_receipt(self, job_id: str, wait_sealed: float = 0.0) -> dict:
        """The job's receipt; with ``wait_sealed`` seconds, asks again while it is pending."""
        deadline = time.monotonic() + wait_sealed
        while True:
            receipt = self._get(f"/v1/compute/{urllib.parse.quote(job_id)}/receipt")
            if receipt.get("status") != "pending" or time.monotonic() >= deadline:
                return receipt
            time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))

    def verify_receipt(self, receipt: Any, sealer_pk: Optional[str] = None, allow_pending: bool = False) -> Verdict:
        return verify_receipt(receipt, sealer_pk=sealer_pk, allow_pending=allow_pending)

    def _wait_for_job(self, job_id: str, seconds: float) -> dict:
        deadline = time.monotonic() + seconds
        while True:
            job = self.get_job(job_id)
            if job.get("status") == "complete":
                return job
            if job.get("status") == "failed":
                error = job.get("error") or {}
                raise GeofabricError(502, error.get("code", "step_failed"), error.get("detail", ""), {"job": job})
            if time.monotonic() >= deadline:
                raise GeofabricError(504, "job_timeout", f"job {job_id} still running", job)
            time.sleep(1.0)

    def _get(self, path: str) -> dict:
        status, body = self._request("GET", path)
        if not 200 <= status < 300:
            raise GeofabricError(status, str(body.get("error", "http_error")), str(body.get("detail", "")), body)
        return body

    def _request(self, method: str, path: str, body: Any = None, headers: Optional[dict] = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                return res.status, _json(res.read())
        except urllib.error.HTTPError as error:
            return error.code, _json(error.read())


def _json(raw: bytes) -> dict:
    try:
        value = json.loads(raw)
    except ValueError:
        return {"error": "invalid_response", "detail": raw[:200].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {"value": value}
