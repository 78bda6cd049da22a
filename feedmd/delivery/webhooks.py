"""Signed webhooks, delivered at least once.

Each new kept item becomes one message per endpoint of its feed or org, queued in the
``deliveries`` table with its body frozen and a message id that every retry reuses (the
``webhook-id`` header), so a receiver deduplicates on it and a restart loses nothing.

An endpoint configured with ``batch = true`` gets one message per run instead
(``items.kept``, the run id and the run's items of its scope), queued, signed and retried
exactly like a per-item message. A batch is keyed on (endpoint, run that stored the items),
so a run that recovers a killed run's items finds that run's batch, with its id and body,
rather than sending the items again under a new id.

Signing follows Standard Webhooks (the ``standardwebhooks`` package): ``webhook-id``,
``webhook-timestamp`` (of the attempt) and ``webhook-signature: v1,<base64 HMAC-SHA256 of
"id.timestamp.body">``, keyed with the endpoint's ``whsec_<base64>`` secret, read from the
environment variable the configuration names. The secret lives only in a ``Webhook``
object: it is never stored, logged, exported or put in an error message.

Timeouts: ``timeout_seconds`` bounds a whole POST, connect to last byte of the answer (a
receiver trickling one byte a second cannot stretch it, as httpx's per-read timeout
would let it), and the claim on a message lasts ``claim_seconds`` (three times that plus
60 s) from the moment it is taken, so an attempt always ends before another pass may take
the message. The client ignores ``HTTP(S)_PROXY`` variables (``trust_env=False``): webhooks
go straight to the configured URL.

Retries: a network error, a timeout, a redirect (not followed: the spec's advice, and a
moved endpoint should be reconfigured, not silently chased) or a non-2xx answer is retried
after ``base * 2**(n-1)`` seconds, capped, with equal jitter, until the message is
``retry_hours`` old; then it is marked failed. A failure also pauses the endpoint (same
backoff, counted per endpoint), so a dead receiver gets one probe per pause however many
messages wait, and is disabled after ``disable_after_failures`` failed attempts in a row.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import secrets
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from standardwebhooks.webhooks import Webhook

from feedmd.delivery.render import json_item
from feedmd.delivery.webhook_transport import deadline, deadline_client
from feedmd.errors import ConfigError
from feedmd.settings import Settings
from feedmd.settings.config import Config
from feedmd.store import EndpointSpec, PendingDelivery, Store
from feedmd.timeutil import iso, utcnow

log = logging.getLogger(__name__)

DEFAULT_SECRET_ENV = "FEEDMD_WEBHOOK_SECRET"
SECRET_PREFIX = "whsec_"
EVENT_TYPE = "item.kept"
BATCH_EVENT_TYPE = "items.kept"
ERROR_BODY_BYTES = 200


@dataclass(frozen=True)
class WebhookPolicy:
    """Timeouts and the retry schedule (read from Settings by ``policy_from``)."""

    timeout_seconds: float = 10.0
    retry_base_seconds: float = 30.0
    retry_max_seconds: float = 4 * 3600.0
    retry_hours: float = 24.0
    disable_after_failures: int = 15
    user_agent: str = "feedmd/0.1 (+https://github.com/feedmd/feedmd)"


def policy_from(settings: Settings) -> WebhookPolicy:
    """The webhook policy of ``settings`` (defaults for settings not declared yet)."""
    default = WebhookPolicy()
    return WebhookPolicy(
        timeout_seconds=float(
            getattr(settings, "webhook_timeout_seconds", default.timeout_seconds)
        ),
        retry_base_seconds=float(
            getattr(settings, "webhook_retry_base_seconds", default.retry_base_seconds)
        ),
        retry_max_seconds=float(
            getattr(settings, "webhook_retry_max_seconds", default.retry_max_seconds)
        ),
        retry_hours=float(getattr(settings, "webhook_retry_hours", default.retry_hours)),
        disable_after_failures=int(
            getattr(settings, "webhook_disable_after_failures", default.disable_after_failures)
        ),
        user_agent=settings.user_agent,
    )


def claim_seconds(policy: WebhookPolicy) -> float:
    """How long a message stays claimed by the pass sending it: three whole-POST timeouts
    plus a minute, always longer than the attempt (bounded by ``post``'s deadline), so two
    passes never send one message at once."""
    return policy.timeout_seconds * 3 + 60


def webhook_client(policy: WebhookPolicy) -> httpx.Client:
    """The client deliveries use: redirects not followed, ``HTTP(S)_PROXY`` ignored, and a
    connection layer that holds each POST to ``post``'s whole-request deadline."""
    return deadline_client(policy.timeout_seconds, policy.user_agent)


def endpoint_specs(config: Config) -> list[EndpointSpec]:
    """The endpoints the configuration declares (``config.webhooks``: objects with ``url``,
    ``org``, optional ``feed``, ``secret_env`` and ``batch``); a feed endpoint gets its
    feed's items, an org endpoint every item of the org."""
    specs = []
    for hook in getattr(config, "webhooks", ()):
        feed = getattr(hook, "feed", "") or ""
        specs.append(
            EndpointSpec(
                url=hook.url,
                scope="feed" if feed else "org",
                scope_name=feed or hook.org,
                secret_env=getattr(hook, "secret_env", "") or DEFAULT_SECRET_ENV,
                batch=bool(getattr(hook, "batch", False)),
            )
        )
    return specs


def load_secret(variable: str, environ: Mapping[str, str] | None = None) -> Webhook:
    """The signer for the ``whsec_`` secret in ``variable``; ConfigError naming the
    variable (never its value) when it is unset or not ``whsec_<base64>``."""
    environ = os.environ if environ is None else environ
    raw = environ.get(variable, "").strip()
    if not raw:
        raise ConfigError(f"webhook secret variable {variable} is not set")
    body = raw.removeprefix(SECRET_PREFIX)
    try:
        if not raw.startswith(SECRET_PREFIX) or not body:
            raise ValueError
        key = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
        return Webhook(key)
    except Exception:  # binascii.Error, ValueError: never echo the value
        raise ConfigError(f"webhook secret in {variable} must look like whsec_<base64>") from None


def new_secret() -> str:
    """A fresh ``whsec_`` secret (24 random bytes, as Standard Webhooks suggests)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def sign(signer: Webhook, message_id: str, body: bytes, at: datetime) -> dict[str, str]:
    """The three Standard Webhooks headers for one attempt sent at ``at``."""
    stamp = int(at.timestamp())
    signature = signer.sign(message_id, datetime.fromtimestamp(stamp, UTC), body.decode())
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": signature,
    }


def retry_delay(attempt: int, policy: WebhookPolicy, rng: random.Random) -> timedelta:
    """Wait before retry ``attempt`` (1, 2, ...): exponential, capped, equal jitter, so
    receivers recovering from an outage are not hit by every sender at once."""
    raw = min(policy.retry_max_seconds, policy.retry_base_seconds * 2 ** (attempt - 1))
    return timedelta(seconds=raw / 2 + rng.uniform(0, raw / 2))


def redact(url: str) -> str:
    """The URL without query or credentials, for log lines (hook URLs often embed tokens)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _envelope(event: str, data: dict[str, Any], at: datetime) -> str:
    """The Standard Webhooks envelope (type, timestamp, data), compact JSON."""
    return json.dumps(
        {"type": event, "timestamp": iso(at), "data": data},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def payload(item_json: dict[str, Any], at: datetime) -> str:
    """The message body: the Standard Webhooks envelope around the JSON Feed item."""
    return _envelope(EVENT_TYPE, item_json, at)


def batch_payload(
    run_id: int,
    items_json: Sequence[dict[str, Any]],
    at: datetime,
    override_id: int | None = None,
) -> str:
    """A batch's body: the envelope around the run id and the JSON Feed items, in JSON Feed
    order (newest first), so a receiver can treat ``items`` as a feed page. A correction
    batch (a reviewer made an item kept again) also names the override."""
    data: dict[str, Any] = {"run_id": run_id, "items": list(items_json)}
    if override_id is not None:
        data["override_id"] = override_id
    return _envelope(BATCH_EVENT_TYPE, data, at)


def new_message_id() -> str:
    """A fresh webhook-id. Random, not derived from (endpoint, run): two feedmd stores
    sending to one receiver must never collide; the store keeps it for the retries."""
    return f"msg_{uuid.uuid4().hex}"


def enqueue_items(
    store: Store, item_ids: Sequence[int], policy: WebhookPolicy, now: datetime
) -> int:
    """Queue each kept item for every endpoint of its feed or org: one message per item
    for a per-item endpoint, one per run for a batch endpoint; return new messages.

    Queuing again is harmless: an item is queued once per endpoint and a run's batch once
    per endpoint, ever (the first queuing's id and body stay).
    """
    targets = store.endpoints_for_items(item_ids)
    messages = []
    for item in store.items_by_id(list(targets)):
        body = payload(json_item(item), now)
        for endpoint_id in targets[item.item_id]:
            messages.append((item.item_id, endpoint_id, new_message_id(), body))
    queued = store.enqueue(messages, now, policy.retry_hours) if messages else 0
    return queued + _enqueue_batches(store, item_ids, policy, now)


def _enqueue_batches(
    store: Store, item_ids: Sequence[int], policy: WebhookPolicy, now: datetime
) -> int:
    """Queue one message per (batch endpoint, run that stored the items) with those items;
    no items, no batch. Returns how many were new."""
    groups = store.batches_for_items(item_ids)
    if not groups:
        return 0
    wanted = sorted({item_id for members in groups.values() for item_id in members})
    items = {item.item_id: item for item in store.items_by_id(wanted)}
    rendered = {item_id: json_item(item) for item_id, item in items.items()}
    batches = []
    for (endpoint_id, run_id), members in sorted(groups.items()):
        newest_first = sorted(members, key=lambda n: (items[n].published, n), reverse=True)
        body = batch_payload(run_id, [rendered[n] for n in newest_first], now)
        batches.append((endpoint_id, run_id, new_message_id(), body, members))
    return store.enqueue_batches(batches, now, policy.retry_hours)


@dataclass
class PassResult:
    """What one delivery pass did."""

    delivered: int = 0
    failed_attempts: int = 0
    gave_up: int = 0
    disabled: int = 0


@dataclass(frozen=True)
class Outcome:
    """One attempt's result: ok, the HTTP status if any, and an error text."""

    ok: bool
    http_status: int | None
    error: str


def deliver_due(
    store: Store,
    policy: WebhookPolicy,
    *,
    now: datetime | None = None,
    client: httpx.Client | None = None,
    rng: random.Random | None = None,
    environ: Mapping[str, str] | None = None,
    batch: int = 100,
) -> PassResult:
    """One pass: send every due message of every ready endpoint, oldest first.

    An endpoint's first failure ends its turn in this pass (a hanging receiver costs one
    timeout, not one per message). ``now`` drives the schedule (tests move it forward);
    the signed timestamp is always the real clock.
    """
    now = now or utcnow()
    started = time.monotonic()
    rng = rng or random.Random()
    result = PassResult()
    own_client = client is None
    client = client or webhook_client(policy)
    try:
        for endpoint in store.ready_endpoints(now):
            try:
                signer = load_secret(endpoint.secret_env, environ)
            except ConfigError as exc:
                log.warning("webhook endpoint %s skipped: %s", redact(endpoint.url), exc)
                continue
            failures = endpoint.consecutive_failures
            for _ in range(batch):
                # The claim runs from when it is taken, not from the start of the pass: a
                # long pass must not hand out claims that have already run out.
                claimed = now + timedelta(seconds=time.monotonic() - started)
                lease = claimed + timedelta(seconds=claim_seconds(policy))
                message = store.claim_next_delivery(endpoint.id, now, lease)
                if message is None:
                    break  # none due, or every due one is another pass's (another worker)
                outcome = post(client, endpoint.url, message, signer, policy.timeout_seconds)
                if outcome.ok:
                    store.record_delivered(message.id, outcome.http_status or 0, now)
                    if failures:
                        store.record_endpoint_success(endpoint.id)
                        failures = 0
                    result.delivered += 1
                    continue
                _record_failure(store, endpoint.url, message, outcome, policy, rng, now, result)
                pause = now + retry_delay(failures + 1, policy, rng)
                if store.record_endpoint_failure(
                    endpoint.id, pause, policy.disable_after_failures, now
                ):
                    result.disabled += 1
                    log.error(
                        "webhook endpoint %s disabled after %d failed attempts in a row;"
                        " its messages wait: `feedmd deliveries enable %d` resumes them",
                        redact(endpoint.url),
                        failures + 1,
                        endpoint.id,
                    )
                break
    finally:
        if own_client:
            client.close()
    return result


def _record_failure(
    store: Store,
    url: str,
    message: PendingDelivery,
    outcome: Outcome,
    policy: WebhookPolicy,
    rng: random.Random,
    now: datetime,
    result: PassResult,
) -> None:
    attempts = message.attempts + 1
    retry_at = None if now >= message.deadline else now + retry_delay(attempts, policy, rng)
    if retry_at is not None:
        retry_at = min(retry_at, message.deadline)
    store.record_failed_attempt(message.id, outcome.http_status, outcome.error, now, retry_at)
    result.failed_attempts += 1
    if retry_at is None:
        result.gave_up += 1
        log.error(
            "webhook %s to %s failed for good after %d attempts: %s",
            message.message_id,
            redact(url),
            attempts,
            outcome.error,
        )
    else:
        log.warning(
            "webhook %s to %s failed (attempt %d): %s; retry at %s",
            message.message_id,
            redact(url),
            attempts,
            outcome.error,
            iso(retry_at),
        )


def post(
    client: httpx.Client,
    url: str,
    message: PendingDelivery,
    signer: Webhook,
    timeout_seconds: float | None = None,
) -> Outcome:
    """POST one message, signed now; any 2xx is success, everything else a failure.

    The whole attempt, connect to the last byte read, ends within ``timeout_seconds``
    (default: the client's timeout) when ``client`` comes from ``webhook_client``."""
    seconds = client.timeout.read if timeout_seconds is None else timeout_seconds
    body = message.payload.encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        **sign(signer, message.message_id, body, utcnow()),
    }
    try:
        with (
            deadline(seconds),
            client.stream("POST", url, content=body, headers=headers) as response,
        ):
            status = response.status_code
            if 200 <= status < 300:
                return Outcome(True, status, "")
            if response.is_redirect:
                where = redact(str(response.url.join(response.headers.get("location", ""))))
                return Outcome(False, status, f"HTTP {status} redirect to {where} not followed")
            return Outcome(False, status, f"HTTP {status}: {_snippet(response)}")
    except httpx.TimeoutException:
        return Outcome(False, None, f"timed out after {seconds or 0:g}s (whole request)")
    except httpx.HTTPError as exc:
        return Outcome(False, None, f"{type(exc).__name__}: {exc}")


def _snippet(response: httpx.Response) -> str:
    data = b""
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) >= ERROR_BODY_BYTES:
            break
    return data[:ERROR_BODY_BYTES].decode("utf-8", "replace").strip()


def send_all_kept(
    store: Store,
    url: str,
    *,
    secret_env: str = DEFAULT_SECRET_ENV,
    environ: Mapping[str, str] | None = None,
    wait_seconds: float = 10.0,
    policy: WebhookPolicy | None = None,
) -> PassResult:
    """For ``feedmd demo --webhook-url URL``: queue every kept item of the store for ``url``
    (an endpoint of each org, secret from ``secret_env``) and deliver, retrying failures
    for up to ``wait_seconds``. Messages still pending stay queued for ``feedmd serve``.

    Raises ConfigError before sending anything when the secret is missing or malformed.
    """
    import time

    load_secret(secret_env, environ)
    policy = policy or WebhookPolicy(retry_base_seconds=1.0, retry_max_seconds=4.0)
    now = utcnow()
    item_ids: list[int] = []
    for org in store.list_orgs():
        store.add_endpoint(EndpointSpec(url, "org", org, secret_env), now)
        item_ids += [item.item_id for item in store.kept_items(org=org, limit=10**9)]
    enqueue_items(store, sorted(item_ids), policy, now)
    total = PassResult()
    deadline = time.monotonic() + wait_seconds
    while True:
        result = deliver_due(store, policy, environ=environ)
        for name in ("delivered", "failed_attempts", "gave_up", "disabled"):
            setattr(total, name, getattr(total, name) + getattr(result, name))
        if not store.pending_count() or time.monotonic() >= deadline:
            return total
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
