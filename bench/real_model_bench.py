"""Judge throughput against a real model server, to size a CPU judge run.

`make real-model-bench` serves SmolLM2-135M-Instruct with llama-cpp-python (one thread, as
`make real-model-test` does) and runs this with REAL_MODEL_BASE_URL / REAL_MODEL_NAME set; without
them it prints why and exits 0 (so `make bench` passes on a machine with no model server).

At concurrency 1 and 2 it judges the same CALLS responses (the xverify template, 16 tokens at
most) twice:
    direct    the bare requests, the same messages, sent with the openai SDK from as many threads
              as the concurrency: what the server itself can do;
    platform  `run_judges` (eager: the task runs here), so the SDK call plus templates, limits,
              retries and the attempts, readings and judgements written to the database.
Both in the same run, one after the other, so the machine's load is the same for both. Prints
requests/s and tokens/s (prompt + completion, as the server counted them) of each, and
    RESULT real_model_judge_ratio_c<N> <platform requests/s ÷ direct requests/s>   (1.0: no overhead)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_database, result  # noqa: E402

CALLS = int(os.environ.get("REAL_MODEL_BENCH_CALLS", "8"))
MAX_TOKENS = 16
BASE_URL = os.environ.get("REAL_MODEL_BASE_URL", "")
MODEL = os.environ.get("REAL_MODEL_NAME", "smollm2-135m-instruct")


def rows() -> list[dict]:
    return [
        {
            "id": f"q{i}",
            "question": f"What is {i} + 1?",
            "gold": str(i + 1),
            "response": f"{i} plus one is {i + 1}, so the answer is {i + 1}.",
            "model": "m",
            "checkpoint": "rl",
            "benchmark": "math",
        }
        for i in range(CALLS)
    ]


def direct(prompts: list[str], concurrency: int) -> tuple[float, int]:
    """(wall seconds, tokens) of the bare SDK requests."""
    import openai

    client = openai.OpenAI(base_url=BASE_URL, api_key="EMPTY", max_retries=0, timeout=300)

    def one(prompt: str) -> int:
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=MAX_TOKENS
        )
        return reply.usage.prompt_tokens + reply.usage.completion_tokens if reply.usage else 0

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        tokens = sum(pool.map(one, prompts))
    return time.perf_counter() - started, tokens


def main() -> None:
    if not BASE_URL:
        print("real_model_bench: no model server (set REAL_MODEL_BASE_URL, or run `make real-model-bench`); skipped")
        return
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.environ["DATABASE_URL"] = fresh_database("adjudication_bench_real_model")
        os.environ.pop("CELERY_BROKER_URL", None)  # eager: the task runs here
        os.environ.pop("REDIS_URL", None)
        os.environ.setdefault("SECRET_KEY", "bench-only")
        os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
        import django

        django.setup()
        from django.core.management import call_command
        from django.db.models import Sum

        from judges import prompts as templates
        from judges.models import LLMAttempt

        call_command("migrate", verbosity=0)
        src = tmp / "in.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows()))
        with open(os.devnull, "w") as devnull:
            call_command("import_responses", str(src), dataset="bench", no_progress=True, stdout=devnull)
        text = templates.builtin("xverify")
        prompts = [
            templates.render(
                text, question=r["question"], choices=(), gold=r["gold"], gold_letter=None, response=r["response"]
            )
            for r in rows()
        ]
        direct(prompts[:1], 1)  # the server's first request loads and warms the model: not timed
        for concurrency in (1, 2):
            d_wall, d_tokens = direct(prompts, concurrency)
            name = f"c{concurrency}"
            with open(os.devnull, "w") as devnull:
                call_command(
                    "add_endpoint",
                    name,
                    base_url=BASE_URL,
                    model=MODEL,
                    concurrency=concurrency,
                    timeout=300.0,
                    flavour="other",
                    stdout=devnull,
                )
                call_command(
                    "add_judge", f"xv-{name}", endpoint=name, template="xverify", max_tokens=MAX_TOKENS, stdout=devnull
                )
                started = time.perf_counter()
                call_command("run_judges", dataset="bench", judges=[f"xv-{name}"], stdout=devnull, stderr=devnull)
                p_wall = time.perf_counter() - started
            attempts = LLMAttempt.objects.filter(reader_spec__name=f"xv-{name}")
            sums = attempts.aggregate(p=Sum("prompt_tokens"), c=Sum("completion_tokens"))
            p_tokens = (sums["p"] or 0) + (sums["c"] or 0)
            n = attempts.count()
            print(
                f"concurrency {concurrency}: direct {CALLS} requests in {d_wall:.1f}s "
                f"({CALLS / d_wall:.3f} req/s, {d_tokens / d_wall:.0f} tokens/s); platform {n} attempts in "
                f"{p_wall:.1f}s ({n / p_wall:.3f} req/s, {p_tokens / p_wall:.0f} tokens/s, "
                f"{attempts.filter(status='ok').count()} ok)",
                flush=True,
            )
            result(f"real_model_judge_rps_c{concurrency}", n / p_wall)
            result(f"real_model_judge_tokens_per_s_c{concurrency}", p_tokens / p_wall)
            result(f"real_model_judge_ratio_c{concurrency}", (n / p_wall) / (CALLS / d_wall))


if __name__ == "__main__":
    main()
