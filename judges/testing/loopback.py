"""A loopback OpenAI-compatible server for tests, benchmarks and offline demos.

Real sockets, real HTTP (ThreadingHTTPServer on 127.0.0.1, HTTP/1.1 keep-alive): the platform talks
to it through the real `openai` client exactly as it talks to vLLM. It serves

* POST /v1/chat/completions: `reply` as the assistant message; with `logprobs`/`top_logprobs`,
  the first generated token and its alternatives (from `chat_top`: a list, or a function of the
  request body returning one), and that token as the message.
* POST /v1/completions: `prompt` a string or a list; without `echo`, `logprobs` gives the first
  generated position's alternatives from `chat_top`; with `echo` + `logprobs`, the prompt's tokens
  (a simple word/punctuation tokenizer, leading space attached), `token_logprobs` (first null),
  `top_logprobs` and `text_offset`, vLLM/OpenAI style; the last prompt token's log-probability
  is taken from `letter_logprobs` when it is an option letter.
* GET /v1/models and GET /v1/stats.

and injects faults: a queue of one-shot faults and/or a `fault_for(request, n)` hook returning one.
A fault is a dict; its keys combine:

* `status`: reply with this HTTP status and an OpenAI-style error body (`message` sets its text,
  `retry_after` a Retry-After header); `text`: the error body is this plain text instead of JSON.
* `malformed`: a 200 whose body is truncated JSON. `no_logprobs`: leave log-probabilities out.
  `body`: a 200 whose body is exactly this text (a reply nested 100,000 deep, a completion of an
  unexpected shape).
* `sleep`: seconds to wait before replying (on top of `latency_s`, which delays every reply).
* `model`, `finish_reason`, `content`, `usage`: override these fields of a 200 reply (hostile
  values: NUL characters, lone surrogates, absurd token counts, an echoed API key...).
* `trickle_s`: write the body one byte every `trickle_s` seconds; with `trickle_headers`, the
  status line and headers too (a slow-loris server: every read returns, none finishes).
* `oversize`: the body is this many bytes (a completion, or with `status` an error, padded out),
  generated lazily so that the server never holds it; `chunked` drops the Content-Length.

Two refusals of llama-cpp-python's server (`python -m llama_cpp.server`, 0.3.x), reproduced as it
sends them: with `one_prompt_only`, a completions `prompt` list of more than one entry is an HTTP
500 whose error message is empty (an `assert len(body.prompt) <= 1` in its route); with `n_ctx`, a
prompt of at least that many tokens (this server's tokenizer; a chat request counts its messages'
contents) is an HTTP 400 `context_length_exceeded` worded as llama-cpp-python words it; with
`echo_shifted`, echoed log-probabilities are off by one position as llama-cpp-python's are for a
model without a BOS token (each prompt token carries the next token's value, the generated token is
left out).

A client that hangs up before the reply was written shows as status 499 in `stats.statuses`.
Counters: requests, max requests in flight, statuses.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")


def tokenize(text: str) -> list[tuple[str, int]]:
    """(token, character offset) pairs covering `text` exactly."""
    return [(m.group(0), m.start()) for m in _TOKEN.finditer(text)]


def default_reply(request: dict, path: str) -> str:
    text = json.dumps(request)
    if "NOT_ATTEMPTED" in text:
        return "A"
    if "ncorrect" in text:
        return "Correct"
    return "The answer is B"


@dataclass
class Stats:
    requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    faults: int = 0
    bodies: list[dict] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


class LoopbackServer:
    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        reply: str | Callable[[dict, str], str] = default_reply,
        letter_logprobs: dict[str, float] | None = None,
        chat_top: list[tuple[str, float]] | Callable[[dict], list[tuple[str, float]]] | None = None,
        keep_bodies: bool = True,
        one_prompt_only: bool = False,
        n_ctx: int | None = None,
        echo_shifted: bool = False,
    ) -> None:
        self.echo_shifted = echo_shifted
        self.latency_s = latency_s
        self.one_prompt_only = one_prompt_only
        self.n_ctx = n_ctx
        self.reply = reply
        self.letter_logprobs = letter_logprobs
        self.chat_top = chat_top
        self.keep_bodies = keep_bodies
        self.faults: list[dict] = []
        self.fault_for: Callable[[dict, int], dict | None] | None = None
        self.omit_logprobs = False
        self.stats = Stats()
        self.lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, port: int = 0) -> LoopbackServer:
        server = self

        class Handler(_Handler):
            owner = server

        self.httpd = _Server(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="loopback-openai", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self.httpd is not None
        return self.httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------

    def inject(self, *faults: dict) -> None:
        """Queue one-shot faults; each request takes the next one (if any)."""
        with self.lock:
            self.faults.extend(faults)

    def reset_stats(self) -> None:
        with self.lock:
            self.stats = Stats()

    # -- request handling --------------------------------------------------------------------

    def _enter(self, body: dict, path: str) -> tuple[int, dict | None]:
        with self.lock:
            self.stats.requests += 1
            n = self.stats.requests
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            if self.keep_bodies:
                self.stats.bodies.append(body)
                self.stats.paths.append(path)
            fault = self.faults.pop(0) if self.faults else None
        if fault is None and self.fault_for is not None:
            fault = self.fault_for(body, n)
        if fault:
            with self.lock:
                self.stats.faults += 1
        return n, fault

    def _release(self) -> None:
        with self.lock:
            self.stats.in_flight -= 1

    def _record(self, status: int) -> None:
        with self.lock:
            self.stats.statuses[status] = self.stats.statuses.get(status, 0) + 1

    def refusal(self, body: dict, path: str) -> tuple[int, dict] | None:
        """llama-cpp-python's refusals (see the module docstring), or None."""
        chat = path.endswith("/chat/completions")
        prompt = body.get("prompt")
        if not chat and self.one_prompt_only and isinstance(prompt, list) and len(prompt) > 1:
            return 500, {"error": {"message": "", "type": "internal_server_error", "param": None, "code": None}}
        if self.n_ctx is None:
            return None
        if chat:
            texts = [str(m.get("content", "")) for m in body.get("messages") or []]
        else:
            texts = [str(p) for p in prompt] if isinstance(prompt, list) else [str(prompt)]
        tokens = max((len(tokenize(t)) for t in texts), default=0) if not chat else sum(len(tokenize(t)) for t in texts)
        if tokens < self.n_ctx:
            return None
        completion = body.get("max_tokens", 16)
        if chat:
            message = (
                f"This model's maximum context length is {self.n_ctx} tokens. However, you requested "
                f"{(completion or 0) + tokens} tokens ({tokens} in the messages, {completion} in the completion). "
                "Please reduce the length of the messages or completion."
            )
        else:
            message = (
                f"This model's maximum context length is {self.n_ctx} tokens, however you requested "
                f"{(completion or 0) + tokens} tokens ({tokens} in your prompt; {completion} for the completion). "
                "Please reduce your prompt; or completion length."
            )
        error = {"message": message, "type": "invalid_request_error", "param": "messages"}
        return 400, {"error": dict(error, code="context_length_exceeded")}

    def _reply_text(self, body: dict, path: str) -> str:
        return self.reply(body, path) if callable(self.reply) else self.reply

    def chat(self, body: dict, n: int, no_logprobs: bool) -> dict:
        content = self._reply_text(body, "chat")
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": "stop",
            "logprobs": None,
            "message": {"role": "assistant", "content": content},
        }
        if body.get("logprobs") and not no_logprobs and not self.omit_logprobs:
            k = int(body.get("top_logprobs") or 0)
            chosen = self.chat_top(body) if callable(self.chat_top) else self.chat_top
            top = chosen or [(tok, -0.5) for tok, _ in tokenize(content)[:1]] or [("", -0.1)]
            first_token, first_lp = top[0]
            choice["logprobs"] = {
                "content": [
                    {
                        "token": first_token,
                        "logprob": first_lp,
                        "bytes": None,
                        "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top[:k]],
                    }
                ]
            }
            choice["message"]["content"] = first_token
        # a cheap token estimate (about four characters a token): the server must stay light
        usage = {
            "prompt_tokens": sum(len(str(m.get("content", ""))) // 4 + 1 for m in body.get("messages", [])),
            "completion_tokens": 1,
            "total_tokens": 0,
        }
        return {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [choice],
            "usage": usage,
        }

    def completions(self, body: dict, n: int, no_logprobs: bool) -> dict:
        prompts = body.get("prompt")
        prompts = prompts if isinstance(prompts, list) else [prompts]
        echo = bool(body.get("echo"))
        want = body.get("logprobs")
        max_tokens = body.get("max_tokens", 16)
        choices = []
        prompt_tokens = 0
        for i, prompt in enumerate(prompts):
            prompt = str(prompt)
            generated = self._reply_text(dict(body, prompt=prompt), "completions") if max_tokens else ""
            if echo and max_tokens:
                generated = " X"  # one generated token after the echoed prompt
            tokens = tokenize(prompt)
            prompt_tokens += len(tokens)
            choice: dict[str, Any] = {
                "index": i,
                "finish_reason": "length" if echo else "stop",
                "logprobs": None,
                "text": (prompt if echo else "") + generated,
            }
            if want is not None and not no_logprobs and not self.omit_logprobs:
                toks: list[str] = []
                lps: list[float | None] = []
                offsets: list[int] = []
                if echo:
                    for j, (tok, off) in enumerate(tokens):
                        toks.append(tok)
                        offsets.append(off)
                        if j == 0:
                            lps.append(None)
                        elif j == len(tokens) - 1 and self.letter_logprobs and tok.strip() in self.letter_logprobs:
                            lps.append(self.letter_logprobs[tok.strip()])
                        else:
                            lps.append(-1.0)
                base = len(prompt) if echo else 0
                for tok, off in tokenize(generated):
                    toks.append(tok)
                    offsets.append(base + off)
                    lps.append(-0.25)
                if echo and self.echo_shifted:
                    # llama-cpp-python: each token gets the next position's value; the last is lost
                    lps = [None, *lps[2 : len(tokens) + 1]]
                    del toks[len(tokens) :], offsets[len(tokens) :]
                tops: list[dict | None] = [None if lp is None else {t: lp} for t, lp in zip(toks, lps)]
                first_top = self.chat_top(body) if callable(self.chat_top) else self.chat_top
                if not echo and first_top and tops:
                    # the alternatives at the first generated position, as for chat (`chat_top`)
                    tops[0] = dict(first_top[: int(want or 1)])
                choice["logprobs"] = {
                    "tokens": toks,
                    "token_logprobs": lps,
                    "text_offset": offsets,
                    "top_logprobs": tops,
                }
            choices.append(choice)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(prompts), "total_tokens": 0}
        return {
            "id": f"cmpl-{n}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": choices,
            "usage": usage,
        }


class _Server(ThreadingHTTPServer):
    # socketserver's default listen backlog is 5: a burst of new connections (a client opening its
    # pool) overflows it and the kernel drops SYNs, which the client resends only after 1 s.
    request_queue_size = 256
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    owner: LoopbackServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits for the
    # client's delayed ACK (~40 ms on Linux), which would be a latency the real servers do not have.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def _send(
        self, code: int, payload: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self._release_slot()
        self.wfile.write(payload)

    def _release_slot(self) -> None:
        """A request stops counting as in flight just before its reply's last write: once the
        client has read the reply it may send its next request at once, and counting this one until
        after the write (when its thread runs again) would see the two overlap, more so on a busy
        machine. So `max_in_flight` never counts more than the client's own slots."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.owner._release()

    def _json(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(obj).encode(), headers=headers)

    def do_GET(self) -> None:
        if self.path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [{"id": "loopback", "object": "model"}]})
        if self.path.endswith("/stats"):
            s = self.owner.stats
            return self._json(
                200,
                {"requests": s.requests, "max_in_flight": s.max_in_flight, "faults": s.faults, "statuses": s.statuses},
            )
        self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._json(400, {"error": {"message": "request body is not JSON"}})
        owner = self.owner
        n, fault = owner._enter(body, self.path)
        self._in_flight = True
        status = 200
        try:
            fault = fault or {}
            if owner.latency_s:
                time.sleep(owner.latency_s)
            if fault.get("sleep"):
                time.sleep(float(fault["sleep"]))
            if fault.get("status"):
                status = int(fault["status"])
                headers = {"Retry-After": str(fault["retry_after"])} if "retry_after" in fault else {}
                if fault.get("oversize"):
                    return self._send_oversize(
                        status, int(fault["oversize"]), bool(fault.get("chunked")), b'{"error": {"message": "', b'"}}'
                    )
                if "text" in fault:
                    payload = str(fault["text"]).encode("utf-8", "surrogatepass")
                    return self._reply(status, payload, fault, "text/plain", headers)
                error = {"message": fault.get("message", f"injected {status}"), "type": "injected", "code": status}
                return self._reply(status, json.dumps({"error": error}).encode(), fault, headers=headers)
            if fault.get("malformed"):
                return self._send(200, b'{"id": "broken", "choices": [')
            if "body" in fault:
                return self._reply(200, str(fault["body"]).encode("utf-8", "surrogatepass"), fault)
            if fault.get("oversize"):
                return self._send_oversize(
                    200,
                    int(fault["oversize"]),
                    bool(fault.get("chunked")),
                    b'{"id": "big", "object": "chat.completion", "model": "m", "choices": [{"index": 0, '
                    b'"finish_reason": "stop", "message": {"role": "assistant", "content": "',
                    b'"}}]}',
                )
            refused = owner.refusal(body, self.path)
            if refused is not None:
                status = refused[0]
                return self._json(*refused)
            if self.path.endswith("/chat/completions"):
                reply = owner.chat(body, n, bool(fault.get("no_logprobs")))
            elif self.path.endswith("/completions"):
                reply = owner.completions(body, n, bool(fault.get("no_logprobs")))
            else:
                status = 404
                return self._json(404, {"error": {"message": "not found"}})
            _override(reply, fault)
            # json.dumps escapes NUL and lone surrogates (\u0000, \ud800): valid JSON that decodes to them.
            return self._reply(200, json.dumps(reply).encode(), fault)
        except (BrokenPipeError, ConnectionResetError):
            status = 499  # the client gave up (timeout, size cap) before the reply was written
        finally:
            self._release_slot()
            owner._record(status)

    def _reply(
        self,
        code: int,
        payload: bytes,
        fault: dict,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        if not fault.get("trickle_s"):
            return self._send(code, payload, content_type, headers)
        head = [
            f"HTTP/1.1 {code} {self.responses.get(code, ('',))[0]}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(payload)}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        head_bytes = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if not fault.get("trickle_headers"):
            self.wfile.write(head_bytes)
            head_bytes = b""
        interval = float(fault["trickle_s"])
        data = head_bytes + payload
        for i in range(len(data)):
            time.sleep(interval)
            self.wfile.write(data[i : i + 1])

    def _send_oversize(self, code: int, size: int, chunked: bool, prefix: bytes, suffix: bytes) -> None:
        """A body of `size` bytes, padded with "A"s and written 64 KiB at a time: never held whole."""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(size))
        self.end_headers()
        for piece in _padded(size, prefix, suffix):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


def _padded(size: int, prefix: bytes, suffix: bytes, block: int = 65536) -> Iterator[bytes]:
    yield prefix
    remaining = max(0, size - len(prefix) - len(suffix))
    filler = b"A" * block
    while remaining > 0:
        take = min(block, remaining)
        yield filler[:take]
        remaining -= take
    yield suffix


def _override(reply: dict, fault: dict) -> None:
    """A fault's hostile values in place of the reply's own."""
    if "model" in fault:
        reply["model"] = fault["model"]
    if "usage" in fault:
        reply["usage"] = fault["usage"]
    for choice in reply.get("choices") or []:
        if "finish_reason" in fault:
            choice["finish_reason"] = fault["finish_reason"]
        if "content" in fault:
            if "message" in choice:
                choice["message"]["content"] = fault["content"]
            else:
                choice["text"] = fault["content"]


def main(argv: list[str] | None = None) -> None:
    """`python -m judges.testing.loopback [--port N] [--latency S]`: serve until killed; prints the base URL."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply")
    args = parser.parse_args(argv)
    server = LoopbackServer(latency_s=args.latency, keep_bodies=False).start(args.port)
    print(server.base_url, flush=True)
    try:
        server.thread.join()  # type: ignore[union-attr]
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
