#!/usr/bin/env python3
"""A script against the platform's REST API, with the standard library only (docs/api.md).

It lists the queues, reads a queue's status and downloads its final labels; with --label it also
claims an item of the queue and labels it: what an annotator's or a manager's own script does.
Without --label it only reads, so pointing it at a queue people are working on changes nothing
there. Each step needs a role (claiming and labelling: annotator; status and downloads: manager); a
step the token's user may not take is reported and skipped, so the script runs for either role.

    python manage.py drf_create_token alice          # prints the key, once per user
    ADJ_API_TOKEN=<key> python docs/api_example.py --url http://127.0.0.1:8000 --out final-labels.csv
    ADJ_API_TOKEN=<key> python docs/api_example.py --queue 3 --label --answer C   # claims and labels one item

Every API error has one body, {"error": {"status", "code", "message", "fields"?, "retry_after"?}},
which the script prints as "error <status> <code>: <message>".
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any


class ApiError(Exception):
    def __init__(self, status: int, body: dict[str, Any], headers: Any) -> None:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        self.status = status
        self.code = error.get("code", "unknown")
        self.message = error.get("message", "")
        self.fields = error.get("fields")
        self.retry_after = int(headers.get("Retry-After") or error.get("retry_after") or 1)
        super().__init__(f"error {status} {self.code}: {self.message}")


class Api:
    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, payload: dict | None = None) -> tuple[int, bytes]:
        """One request; returns (status, body) for a success, raises ApiError for an error."""
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Authorization", f"Token {self.token}")  # no session, so no CSRF token
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:  # noqa: S310 (the URL is the user's)
                return reply.status, reply.read()
        except urllib.error.HTTPError as failed:
            raw = failed.read()
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"error": {"code": "not_json", "message": raw[:200].decode("utf-8", "replace")}}
            raise ApiError(failed.code, body, failed.headers) from None

    def json(self, method: str, path: str, payload: dict | None = None) -> Any:
        status, body = self.call(method, path, payload)
        return json.loads(body) if status != 204 and body else None


def pick_queue(queues: list[dict], wanted: int | None) -> dict | None:
    if wanted is not None:
        return next((q for q in queues if q["id"] == wanted), None)
    return queues[0] if queues else None


def claim(api: Api, queue_id: int, attempts: int = 5) -> dict | None:
    """The next item of the queue (or the one already leased to us); None when nothing is left.
    409 "busy" means every item left is leased to someone else right now: wait and ask again."""
    for _ in range(attempts):
        try:
            status, body = api.call("POST", f"/api/queues/{queue_id}/claim/")
        except ApiError as error:
            if error.code != "busy":
                raise
            print(f"busy: waiting {error.retry_after} s")
            time.sleep(error.retry_after)
            continue
        return None if status == 204 else json.loads(body)
    return None


def _letter(answer: str, letters: set[str]) -> str | None:
    letter = answer.strip().strip("()").upper()
    return letter if letter in letters else None


def label_for(item: dict, answer: str | None) -> dict:
    """The label to send: the answer given on the command line, else the first candidate answer (for
    a multiple-choice question, the first that is an option letter); an option letter for a
    multiple-choice question, free text otherwise."""
    letters = {o["letter"] for o in item["options"]}
    candidates = [c["answer"] for c in item["candidates"]]
    if answer is None and letters:
        answer = next((c for c in candidates if _letter(c, letters)), None)
    if answer is None and candidates:
        answer = candidates[0]
    if answer is None:
        return {"kind": "skipped", "skip_reason": "the example script had no answer to give"}
    letter = _letter(answer, letters)
    return {"kind": "option", "answer": letter} if letter else {"kind": "text", "answer": answer}


def claim_and_label(api: Api, queue_id: int, answer: str | None) -> int:
    """Claims the queue's next item and labels it; returns the exit status to stop with, 0 to go on."""
    try:
        item = claim(api, queue_id)
        if item is None:
            print(f"claim: nothing left for you in queue {queue_id}")
        else:
            print(f"claimed lease {item['lease']} until {item['expires_at']}: {item['question'][:70]!r}")
            label = label_for(item, answer)
            created = api.json("POST", f"/api/leases/{item['lease']}/label/", label)
            print(f"labelled: label {created['label']} ({label['kind']} {label.get('answer', '')!r})")
    except ApiError as error:
        print(f"claim and label: {error}")
        if error.status not in (403,):  # 403: this user is not an annotator; go on
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("ADJ_API_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--token", default=os.environ.get("ADJ_API_TOKEN"), help="default: $ADJ_API_TOKEN")
    parser.add_argument("--queue", type=int, default=None, help="queue id (default: the first listed)")
    parser.add_argument(
        "--label", action="store_true", help="claim the queue's next item and label it (default: read only)"
    )
    parser.add_argument(
        "--answer", default=None, help="with --label: the answer to label with (default: the first candidate)"
    )
    parser.add_argument("--out", default="final-labels.csv", help="where the final labels go (csv, jsonl, parquet)")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("give --token or set ADJ_API_TOKEN (python manage.py drf_create_token USERNAME)")
    if args.answer is not None and not args.label:
        parser.error("--answer is the answer a label gives: add --label to claim an item and label it")
    api = Api(args.url, args.token)

    try:
        queues = api.json("GET", "/api/queues/")
    except ApiError as error:
        print(error)
        return 1
    print(f"queues: {len(queues)}")
    for queue in queues:
        print(f"  queue {queue['id']}: {queue.get('title') or queue.get('name')}")
    queue = pick_queue(queues, args.queue)
    if queue is None:
        print("no such queue")
        return 1
    queue_id = queue["id"]

    if args.label:
        failed = claim_and_label(api, queue_id, args.answer)
        if failed:
            return failed
    else:
        print("read only: nothing claimed or labelled (pass --label to claim an item and label it)")

    try:
        status = api.json("GET", f"/api/queues/{queue_id}/status/")
        shown = [f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in status.items()]
        print("status: " + ", ".join(shown))
        fmt = args.out.rsplit(".", 1)[-1] if "." in args.out else "csv"
        query = urllib.parse.urlencode({"fmt": fmt})
        _, body = api.call("GET", f"/api/queues/{queue_id}/final-labels/?{query}")
        with open(args.out, "wb") as handle:
            handle.write(body)
        if fmt == "csv":
            size = f"{len(list(csv.reader(io.StringIO(body.decode('utf-8'))))) - 1} rows"
        elif fmt == "jsonl":
            size = f"{len(body.splitlines())} rows"
        else:
            size = f"{len(body)} bytes"
        print(f"final labels: {size} written to {args.out}")
    except ApiError as error:
        print(f"status and final labels: {error}")
        if error.status != 403:  # 403: this user is not a manager
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
