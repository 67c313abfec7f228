"""The PostgreSQL import path (COPY, staging table, merge in SQL; adjudication/ingest/staging.py):
hostile text stored byte for byte, exactly what the ORM path stores, all-or-nothing across many
chunks, idempotent re-import. Each runs with the rows parsed in-process and in a child process
(files from staging.PARSE_IN_CHILD_FROM_BYTES on; forced here for small files)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import partial

import pytest
from django.core.management.base import CommandError
from django.db import connection, transaction

from adjudication.fields import encode_verbatim
from adjudication.ingest import copyrows, services, staging
from adjudication.ingest.formats import Row
from adjudication.models import Dataset, Question, ReaderSpec, Reading, Response
from adjudication.revisions import dataset_version

from ..conftest import ROOT, lm_eval_sample, math_row, mc_row, project_table_counts, run_command

pytestmark = pytest.mark.django_db

MANY = 12_000  # more than two chunks (copyrows.CHUNK_ROWS), so earlier chunks are written before the end

# Text as model output and benchmark files hold it: COPY's own delimiters and escapes, NUL and lone
# surrogates (stored escaped, see adjudication/fields.py), the escape's sentinel, and every script.
HOSTILE_TEXTS = [
    "tab\there\tand\tthere",
    "new\nline",
    "carriage\rreturn and crlf\r\n",
    "back\\slash \\n \\t \\\\ at the end\\",
    "\\N",
    "\\.",
    "before\n\\.\nafter",
    "quotes \"double\" 'single' `back`",
    "\x01json:looks like the escape's sentinel",
    "NUL\x00inside",
    "a lone \ud800 surrogate and \udfff another",
    "emoji 🙂🏳️‍🌈 CJK 漢字 RTL עברית combining é zero-width\u200b",
    "line and paragraph separators \u2028 \u2029, next line \x85",
    "control \x07\x08\x0b\x0c\x1b[31m\x7f",
    "",
    "   ",
]
HUGE = "long response " * 250_000  # 3.5 MB, past a chunk's character budget on its own


def hostile_rows() -> list[dict]:
    rows = []
    for i, text in enumerate([*HOSTILE_TEXTS, HUGE]):
        name = f"m\t{i}\\ 🙂"  # names may hold tabs, backslashes and any character but NUL and surrogates
        rows.append(
            {
                "id": f"h\t{i}\\\n\"'",
                "question": f"Q{i}: {text}" if text.strip() else f"Q{i}",
                "gold": f"gold {i} {text}",
                "response": text,
                "model": name,
                "checkpoint": "rl\\x",
                "benchmark": "bench\tmark",
                "prompt": "p\n1",
                "prompt_text": f"<|im_start|>user\n{text or 'x'}<|im_end|>\n",
                "meta": {"note": f'tab\t back\\ quote" 🙂 {i}', "nested": {"a": [1, 2.5, None, True]}, "big": 10**30},
            }
        )
    rows.append(
        {
            "id": "mc\tchoices",
            "question": "Which?",
            "choices": ["tab\there", "back\\slash", 'quote"', "new\nline"],
            "gold": "B",
            "response": "(B)",
        }
    )
    return rows


@pytest.fixture(params=["in-process", "child-process"])
def parsing(request, monkeypatch) -> str:
    if request.param == "child-process":
        monkeypatch.setattr(staging, "PARSE_IN_CHILD_FROM_BYTES", 0)
    return request.param


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if not services.copies_on(connection.vendor):
        pytest.skip("the COPY path is PostgreSQL's")


def stored(dataset: str) -> list[tuple]:
    """Everything an import stores for `dataset`, as the columns hold it (raw text, jsonb as text),
    in id order: responses with their question and run, then runs and questions on their own."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT r.external_id, r.text, r.prompt_text, r.content_hash, r.row_hash, r.meta::text,
                      q.benchmark, q.text, q.choices::text, q.gold, q.meta::text, q.fingerprint,
                      run.model, run.checkpoint, run.benchmark, run.prompt, run.generation_params::text
               FROM adjudication_response r
               JOIN adjudication_question q ON q.id = r.question_id
               JOIN adjudication_run run ON run.id = r.run_id
               JOIN adjudication_dataset d ON d.id = r.dataset_id
               WHERE d.name = %s ORDER BY r.id""",
            [dataset],
        )
        responses = cursor.fetchall()
        cursor.execute(
            "SELECT model, checkpoint, benchmark, prompt FROM adjudication_run run "
            "JOIN adjudication_dataset d ON d.id = run.dataset_id WHERE d.name = %s ORDER BY run.id",
            [dataset],
        )
        runs = cursor.fetchall()
        cursor.execute(
            "SELECT fingerprint FROM adjudication_question q "
            "JOIN adjudication_dataset d ON d.id = q.dataset_id WHERE d.name = %s ORDER BY q.id",
            [dataset],
        )
        questions = cursor.fetchall()
    return [*responses, *runs, *questions]


def import_file(path, dataset: str, **options) -> str:
    return run_command("import_responses", str(path), dataset=dataset, no_progress=True, **options)


def test_hostile_text_round_trips_byte_exact(write_jsonl, parsing):
    rows = hostile_rows()
    out = import_file(write_jsonl(rows), "d")
    assert f"{len(rows)} new" in out
    by_id = {r.external_id: r for r in Response.objects.select_related("question", "run")}
    for row in rows:
        stored_row = by_id[row["id"]]
        assert stored_row.text == row["response"]
        assert stored_row.prompt_text == row.get("prompt_text")
        assert stored_row.question.text == row["question"] and stored_row.question.gold == row["gold"]
        assert stored_row.question.choices == row.get("choices", [])
        assert stored_row.meta == row.get("meta", {})
        assert (stored_row.run.model, stored_row.run.checkpoint, stored_row.run.benchmark, stored_row.run.prompt) == (
            row.get("model", ""),
            row.get("checkpoint", ""),
            row.get("benchmark", ""),
            row.get("prompt", ""),
        )
        assert stored_row.content_hash == hashlib.sha256(row["response"].encode("utf-8", "surrogatepass")).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT external_id, text, prompt_text FROM adjudication_response")
        raw = {external_id: (text, prompt_text) for external_id, text, prompt_text in cursor.fetchall()}
    for row in rows:
        # The column holds the value itself, or (NUL, lone surrogate, sentinel) its lossless escape.
        prompt_text = row.get("prompt_text")
        assert raw[row["id"]] == (encode_verbatim(row["response"]), prompt_text and encode_verbatim(prompt_text))
    assert raw["h\t9\\\n\"'"][0].startswith("\x01json:") and "\x00" not in raw["h\t9\\\n\"'"][0]


def test_the_copy_path_stores_exactly_what_the_orm_path_stores(write_jsonl, parsing, monkeypatch):
    first = write_jsonl(
        [
            *hostile_rows(),
            *(mc_row(i) for i in range(30)),
            *(mc_row(i, id=f"rl-{i}", checkpoint="rl") for i in range(30)),
        ]
    )
    # The second file: unchanged rows, new ones (new questions and a new run), changed ones.
    second = write_jsonl(
        [
            *(mc_row(i) for i in range(20)),
            *(mc_row(i, response=f"changed\t{i}\\") for i in range(20, 30)),
            *(mc_row(i, id=f"rl-{i}", checkpoint="rl", meta={"re": "exported"}) for i in range(30)),
            *(math_row(i, model="other\tmodel") for i in range(15)),
        ],
        name="second.jsonl",
    )
    copied = [import_file(first, "copy"), import_file(second, "copy", replace=True)]
    monkeypatch.setattr(services, "copies_on", lambda vendor: False)
    by_orm = [import_file(first, "orm"), import_file(second, "orm", replace=True)]
    assert copied == [out.replace("dataset orm", "dataset copy") for out in by_orm]
    assert "15 new, 20 unchanged, 40 replaced (1 new runs, 15 new questions)" in copied[1]
    assert stored("copy") == stored("orm")


def test_lm_eval_samples_take_the_copy_path_as_they_take_the_orm_path(write_jsonl, parsing, monkeypatch):
    samples = [
        lm_eval_sample(i, resps=[[f"The answer is ({'AB'[i % 2]}).\t\\ {HOSTILE_TEXTS[i % len(HOSTILE_TEXTS)]}"]])
        for i in range(40)
    ]
    path = write_jsonl(samples, name="samples_arc_2026-01-02T10-11-12.jsonl")
    options = {"fmt": "lm-eval", "model": "qwen\t7b", "checkpoint": "rl"}
    copied = import_file(path, "copy", **options)
    monkeypatch.setattr(services, "copies_on", lambda vendor: False)
    assert import_file(path, "orm", **options).replace("dataset orm", "dataset copy") == copied
    assert stored("copy") == stored("orm")


@pytest.mark.parametrize("where", ["bad line", "changed row"])
def test_an_error_on_line_n_after_many_good_lines_leaves_the_database_unchanged(write_jsonl, parsing, where):
    import_file(write_jsonl([math_row(i) for i in range(10)], name="seed.jsonl"), "seed")
    before = project_table_counts()
    lines = [json.dumps(math_row(i, id=f"many-{i}")) for i in range(MANY)]
    if where == "bad line":
        lines.append(json.dumps({**math_row(MANY), "gold": None}))
        dataset, needle = "new", f"line {MANY + 1}, field 'gold': missing required field"
    else:
        # Into the seeded dataset: every row but one is new; seed row 3 comes back changed near the end.
        lines.insert(MANY - 5, json.dumps(math_row(3, response="a different text")))
        dataset, needle = "seed", f"line {MANY - 4}, field 'id': response 'math-3' already exists"
    with pytest.raises(CommandError) as err:
        import_file(write_jsonl(lines), dataset)
    assert "import aborted, nothing was written: in.jsonl, " + needle in str(err.value)
    assert project_table_counts() == before
    assert list(Dataset.objects.values_list("name", flat=True)) == ["seed"]


@pytest.mark.parametrize(
    ("first", "again"), [(10, MANY - 10), (MANY - 3, MANY - 1)], ids=["chunks-apart", "same-chunk"]
)
def test_an_id_repeated_anywhere_in_the_file_names_both_lines(write_jsonl, parsing, first, again):
    lines = [json.dumps(math_row(i, id=f"many-{i}")) for i in range(MANY)]
    lines[again] = json.dumps(math_row(again, id=f"many-{first}"))
    with pytest.raises(CommandError) as err:
        import_file(write_jsonl(lines), "d")
    expected = f"in.jsonl, line {again + 1}, field 'id': duplicate id 'many-{first}' (first seen on line {first + 1})"
    assert str(err.value).endswith(expected)
    assert not Dataset.objects.exists()


def test_of_a_repeated_id_and_a_bad_line_later_in_the_same_chunk_the_first_is_named(write_jsonl, parsing):
    lines = [json.dumps(math_row(i)) for i in range(100)]
    lines[40] = json.dumps(math_row(40, id="math-3"))
    lines[70] = '{"id": "broken", '
    with pytest.raises(CommandError) as err:
        import_file(write_jsonl(lines), "d")
    assert "line 41, field 'id': duplicate id 'math-3' (first seen on line 4)" in str(err.value)


def test_reimporting_many_rows_changes_nothing(write_jsonl, parsing):
    path = write_jsonl([mc_row(i % 500, id=f"many-{i}", model=f"m{i % 3}") for i in range(MANY)])
    assert f"{MANY} new, 0 unchanged, 0 replaced (3 new runs, 500 new questions)" in import_file(path, "d")
    dataset = Dataset.objects.get(name="d")
    before, version = project_table_counts(), dataset_version(dataset_id=dataset.pk)
    rows_before = list(Response.objects.order_by("id").values_list("id", "external_id", "row_hash", "updated_at"))
    assert f"0 new, {MANY} unchanged, 0 replaced (0 new runs, 0 new questions)" in import_file(path, "d")
    assert project_table_counts() == before
    assert list(Response.objects.order_by("id").values_list("id", "external_id", "row_hash", "updated_at")) == (
        rows_before
    )
    assert dataset_version(dataset_id=dataset.pk) == version  # nothing changed: the analytics stay current
    # File order is id order, and each question was made once, from its first row.
    assert [external_id for _, external_id, _, _ in rows_before] == [f"many-{i}" for i in range(MANY)]
    assert Question.objects.filter(dataset=dataset).count() == 500


def test_a_replaced_row_in_a_later_chunk_loses_its_readings_and_keeps_its_id(write_jsonl, parsing):
    rows = [math_row(i) for i in range(MANY)]
    import_file(write_jsonl(rows), "d")
    late = Response.objects.get(external_id=f"math-{MANY - 2}")
    spec = ReaderSpec.objects.create(name="x", version="1", config_hash="h")
    Reading.objects.create(response=late, reader_spec=spec, verdict="correct")
    rows[MANY - 2] = math_row(MANY - 2, response="replaced\ttext\\")
    out = import_file(write_jsonl(rows, name="again.jsonl"), "d", replace=True)
    assert f"0 new, {MANY - 1} unchanged, 1 replaced" in out
    replaced = Response.objects.get(external_id=f"math-{MANY - 2}")
    assert replaced.pk == late.pk and replaced.text == "replaced\ttext\\"
    assert replaced.updated_at == late.updated_at  # as QuerySet.update() on the ORM path leaves it
    assert not Reading.objects.filter(response=replaced).exists()


def test_an_import_inside_a_transaction_leaves_its_settings_and_constraint_modes_as_they_were(write_jsonl):
    def settings() -> tuple:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('work_mem'), current_setting('jit')")
            return cursor.fetchone()

    before = settings()
    import_file(write_jsonl([math_row(0)]), "d")
    assert settings() == before
    # The response table's foreign keys are deferred again: a dangling reference fails at commit
    # (here: a savepoint set to roll back), not at the statement.
    response = Response.objects.get()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE adjudication_response SET question_id = %s WHERE id = %s",
                [Question.objects.get().pk + 1000, response.pk],
            )
        transaction.set_rollback(True)
    assert Response.objects.get().question_id == Question.objects.get().pk


def test_rows_that_cannot_go_to_a_child_process_are_parsed_in_this_one(tmp_path, monkeypatch):
    monkeypatch.setattr(staging, "PARSE_IN_CHILD_FROM_BYTES", 0)
    rows = [Row(id=f"r{i}", question="q", gold="1", response="r", line=i + 1) for i in range(3)]
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"x")
    with staging._parsed_chunks(lambda: iter(rows), path) as chunks:  # a lambda does not pickle
        assert [chunk.ids for chunk in chunks] == [["r0", "r1", "r2"]]
    with staging._parsed_chunks(partial(iter, rows), path) as chunks:  # this one does, and goes
        assert [chunk.ids for chunk in chunks] == [["r0", "r1", "r2"]]


def test_chunks_hold_a_bounded_number_of_rows_and_characters():
    rows = [Row(id=f"r{i}", question="q", gold="1", response="x" * 1000, line=i + 1) for i in range(12_000)]
    sizes = [len(chunk) for chunk in copyrows.chunks(rows)]
    assert sizes == [copyrows.CHUNK_ROWS, copyrows.CHUNK_ROWS, 12_000 - 2 * copyrows.CHUNK_ROWS]
    huge = [Row(id=f"r{i}", question="q", gold="1", response="x" * (3 << 20), line=i + 1) for i in range(5)]
    # Past the character budget a chunk closes early, however few rows it has.
    assert [len(chunk) for chunk in copyrows.chunks(huge)] == [3, 2]


def test_copy_text_escapes_what_copy_reads_as_delimiters_and_nothing_else():
    assert copyrows.copy_text(None) == "\\N"
    assert copyrows.copy_text("\\N") == "\\\\N"
    assert copyrows.copy_text("a\tb\nc\rd\\e") == "a\\tb\\nc\\rd\\\\e"
    assert copyrows.copy_text("\\.") == "\\\\."
    assert copyrows.copy_text("é 🙂 \"'") == "é 🙂 \"'"


@pytest.mark.system  # a child process
def test_the_embedded_sqlite_default_imports_through_the_orm_path(tmp_path, write_jsonl):
    """SQLite (make demo) has no COPY: the portable ORM path imports the same hostile file, re-imports
    it as a no-op, and refuses a bad line leaving nothing behind."""
    rows = hostile_rows()
    good = write_jsonl(rows)
    bad = write_jsonl([*rows[:3], {"id": "x", "question": "q", "response": "r"}], name="bad.jsonl")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'embedded.sqlite3'}", PYTHONPATH=str(ROOT))
    script = tmp_path / "check.py"
    script.write_text(
        f"""
import json
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from adjudication.models import Response
assert connection.vendor == "sqlite"
rows = [json.loads(line) for line in open({str(good)!r}, encoding="utf-8")]
call_command("import_responses", {str(good)!r}, dataset="d", no_progress=True)
call_command("import_responses", {str(good)!r}, dataset="d", no_progress=True)
try:
    call_command("import_responses", {str(bad)!r}, dataset="e", no_progress=True)
except CommandError as exc:
    print("refused:", exc)
stored = {{r.external_id: r for r in Response.objects.select_related("question")}}
assert len(stored) == len(rows), len(stored)
for row in rows:
    got = stored[row["id"]]
    expected = (row["response"], row.get("meta", {{}}), row["question"])
    assert (got.text, got.meta, got.question.text) == expected, row["id"]
print("stored", len(stored))
"""
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=300)
    proc = subprocess.run(
        [*manage, "shell", "--no-imports", "-c", f"exec(open({str(script)!r}).read())"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"0 new, {len(rows)} unchanged" in proc.stdout
    assert "refused: import aborted, nothing was written: bad.jsonl, line 4, field 'gold': missing" in proc.stdout
    assert f"stored {len(rows)}" in proc.stdout


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(condition, what: str, timeout: float = 120) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_an_import_killed_midway_leaves_nothing_and_its_parser_ends(tmp_path, service_env):
    """SIGKILL the importing process while it writes a large file (parsed in a child): its transaction
    never commits, and the orphaned parser ends by itself at its next write to the closed pipe."""
    import signal

    path = tmp_path / "big.jsonl"
    row = math_row(0, response="x" * 1000)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(40_000):
            handle.write(json.dumps({**row, "id": f"big-{i}"}) + "\n")
    assert path.stat().st_size >= staging.PARSE_IN_CHILD_FROM_BYTES
    before = project_table_counts()
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "import_responses", str(path), "--dataset", "big", "--no-progress"],
        env=service_env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def writing_responses() -> bool:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND query LIKE 'COPY adjudication_response %%' AND pid <> pg_backend_pid()"
                )
                return cursor.fetchone()[0] > 0

        _wait_for(lambda: _children(proc.pid) and writing_responses(), "the import to write responses")
        (parser,) = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _wait_for(lambda: not _alive(parser), "the orphaned parser to end")

        def importer_gone() -> bool:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid()"
                )
                return cursor.fetchone()[0] == 0

        _wait_for(importer_gone, "the server to end the killed import's session")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert project_table_counts() == before
    assert not Dataset.objects.filter(name="big").exists()
