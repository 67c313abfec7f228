"""The README's first command, end to end on the embedded default: import, read, route, compute the
analytics report, print the headline and the URLs, serve the UI. One quickstart serves the whole
module (it takes about 15 s); the tests read what it printed and what it serves."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.worker

HEADLINE_ROW = re.compile(
    r"^  (?P<bench>\S+)\s+reported (?P<rep>[+-]\d+\.\d) \[(?P<rep_lo>[+-]\d+\.\d), (?P<rep_hi>[+-]\d+\.\d)\]"
    r"\s+fixed (?P<fix>[+-]\d+\.\d) \[(?P<fix_lo>[+-]\d+\.\d), (?P<fix_hi>[+-]\d+\.\d)\]"
    r"\s+format share (?P<share>-?\d+)% \[(?P<share_lo>-?\d+)%, (?P<share_hi>-?\d+)%\]"
    r"\s+boxed base (?P<box_base>\d+)% -> RL (?P<box_rl>\d+)%(?:\s+disputed (?P<disputed>\d+))?",
    re.M,
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def embedded_env(db: Path) -> dict[str, str]:
    """The embedded default (no broker: eager Celery), in a scratch SQLite file so the developer's
    var/ is left alone."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.update(DATABASE_URL=f"sqlite:///{db}", PYTHONPATH=str(ROOT))
    return env


@dataclass
class Quickstart:
    base_url: str
    output: str  # stdout
    errors: str  # stderr (progress bars, warnings)
    env: dict[str, str]

    def manage(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=600
        )

    def format_share_json(self) -> dict:
        done = self.manage("format_share", "--dataset", "quickstart", "--by", "benchmark", "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory) -> Iterator[Quickstart]:
    tmp = tmp_path_factory.mktemp("quickstart")
    env = embedded_env(tmp / "quick.sqlite3")
    port = free_port()
    with open(tmp / "quickstart.log", "w+") as log, open(tmp / "quickstart.err", "w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "quickstart", "--addrport", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=err,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 600
            answered = False
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5) as resp:
                        answered = b'type="password"' in resp.read()
                        break
                except OSError:
                    time.sleep(1)
            log.seek(0)
            err.seek(0)
            output, errors = log.read(), err.read()
            assert answered, f"UI never answered; output:\n{output[-3000:]}\n{errors[-3000:]}"
            yield Quickstart(base_url=f"http://127.0.0.1:{port}", output=output, errors=errors, env=env)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)


def headline_rows(output: str) -> dict[str, dict[str, str]]:
    return {m["bench"]: m.groupdict() for m in HEADLINE_ROW.finditer(output)}


def test_the_quickstart_ends_with_the_headline_and_where_to_look(quickstart):
    out = quickstart.output
    rows = headline_rows(out)
    assert set(rows) == {"math", "mmlu", "all"}, out
    assert rows["math"]["disputed"] is not None and rows["mmlu"]["disputed"] is not None
    assert "Open (log in as demo / demo):" in out
    assert f"{quickstart.base_url}/analytics/" in out
    assert f"{quickstart.base_url}/review/?queue=" in out
    # The per-reader table is behind --table now, and one line says what was read.
    assert "Per-reader summary" not in out
    assert "read now" not in out
    # The default panel of its two task types (multiple choice and maths): 20 readers x 320 responses.
    assert re.search(r"Read by 20 rule readers: 6400 new readings, 6400 in all\.", out), out
    assert "(2 models x 2 checkpoints x 2 benchmarks; 80 questions)" in out


def test_the_embedded_default_prints_no_broker_warning(quickstart):
    for stream in (quickstart.output, quickstart.errors):
        assert "kombu" not in stream
        assert "No hostname was supplied" not in stream


def test_the_printed_headline_is_format_share_json(quickstart):
    """What the terminal says is what `format_share --dataset quickstart --by benchmark --json` computes."""
    fs = quickstart.format_share_json()
    rows = headline_rows(quickstart.output)
    pools = {"all": fs, **fs["groups"]}
    assert set(pools) == set(rows)
    for name, pool in pools.items():
        printed, pooled = rows[name], pool["pooled"]
        assert float(printed["rep"]) == round(pooled["reported_gain"], 1)
        assert [float(printed["rep_lo"]), float(printed["rep_hi"])] == [round(x, 1) for x in pooled["reported_gain_ci"]]
        assert float(printed["fix"]) == round(pooled["fixed_gain"], 1)
        assert [float(printed["fix_lo"]), float(printed["fix_hi"])] == [round(x, 1) for x in pooled["fixed_gain_ci"]]
        assert int(printed["share"]) == round(100 * pooled["format_share"])
        assert [int(printed["share_lo"]), int(printed["share_hi"])] == [
            round(100 * x) for x in pooled["format_share_ci"]
        ]
        assert int(printed["box_base"]) == round(100 * pool["box_rate"]["base"]["rate"])
        assert int(printed["box_rl"]) == round(100 * pool["box_rate"]["rl"]["rate"])


def test_disputed_counts_are_the_review_queue_items(quickstart):
    rows = headline_rows(quickstart.output)
    total = sum(int(rows[b]["disputed"]) for b in ("math", "mmlu"))
    queue = re.search(
        r"review queue 'quickstart-review' holds them, (\d+) controls .* and (\d+) of the (\d+) responses neither "
        r"reader could read: (\d+) items\.",
        quickstart.output,
    )
    assert queue is not None, quickstart.output
    controls, unreadable, unreadable_total, items = (int(g) for g in queue.groups())
    assert total > 0 and total + controls + unreadable == items and unreadable <= unreadable_total


@pytest.mark.browser
def test_the_browser_shows_the_headline_format_share_json_computes(quickstart):
    """Logged in as demo: the landing card and the top of the analytics page carry the same
    numbers as `format_share --dataset quickstart --by benchmark --json`."""
    from tests.browser import chromium_browser

    fs = quickstart.format_share_json()
    want = {"(all)": fs["pooled"], **{b: g["pooled"] for b, g in fs["groups"].items()}}
    with chromium_browser() as browser:
        page = browser.new_page()
        page.goto(quickstart.base_url + "/")
        page.fill("#id_username", "demo")
        page.fill("#id_password", "demo")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        card = page.locator("section.card[data-dataset='quickstart']")
        seen = {}
        for row in card.locator("table.headline tbody tr").all():
            cells = {
                c.get_attribute("data-key"): c.get_attribute("data-value") for c in row.locator("td[data-key]").all()
            }
            seen[row.get_attribute("data-benchmark")] = cells
        assert set(seen) == set(want)
        for bench, pooled in want.items():
            for key in ("reported_gain", "fixed_gain", "format_share"):
                assert float(seen[bench][key]) == pytest.approx(pooled[key], abs=1e-12), (bench, key)
        page.click("section.card[data-dataset='quickstart'] a:text('analytics')")
        page.wait_for_selector("#headline")
        top = page.locator("#headline")
        for bench, pooled in want.items():
            row = top.locator(f"tr[data-benchmark='{bench}']")
            got = float(row.locator("td[data-key='format_share']").get_attribute("data-value"))
            assert got == pytest.approx(pooled["format_share"], abs=1e-12), bench


def test_a_second_run_changes_nothing_and_can_print_the_table(quickstart):
    done = quickstart.manage("quickstart", "--no-serve", "--table")
    assert done.returncode == 0, done.stderr
    assert "0 responses imported, 320 already there" in done.stdout
    assert "0 new readings" in done.stdout
    assert "Per-reader summary" in done.stdout
    for reader in ("fixed", "boxed", "strict-match", "math-verify-latex", "sympy-cascade"):
        assert f"\n{reader} " in done.stdout, f"{reader} missing from the table"
    assert headline_rows(done.stdout) == headline_rows(quickstart.output)


def test_the_readme_shows_what_the_quickstart_prints(quickstart):
    """The README's `make demo` transcript, from the import line to the URLs, is this run's output
    (only the port differs: the test serves on a free one)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```text\n$ make demo\n", 1)[1].split("```", 1)[0]

    def quickstart_part(text: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("Dataset 'quickstart'"))
        end = next(i for i, line in enumerate(lines) if line.startswith("Serving the UI"))
        return lines[start:end]

    printed = [
        line.replace(quickstart.base_url, "http://127.0.0.1:8000") for line in quickstart_part(quickstart.output)
    ]
    assert quickstart_part(block) == printed


def test_the_quickstart_makes_one_account_per_role_and_a_queue_two_annotators_label(quickstart):
    """issue 36 item 7: the demo queue has overlap 2 and the printed accounts (two annotators, an
    adjudicator, a manager) log in with the printed passwords and hold only their own role, so that
    agreement, adjudication and the role separation can be tried on the demo."""
    printed = re.search(
        r"One account per role \(this machine only\): annotators (\S+) / (\S+) and (\S+) / (\S+), "
        r"adjudicator (\S+) / (\S+), manager (\S+) / (\S+)\.",
        quickstart.output,
    )
    assert printed is not None, quickstart.output
    names = printed.groups()
    accounts = dict(zip(names[::2], names[1::2]))
    assert "overlap 2" in quickstart.output and f"{quickstart.base_url}/adjudicate/" in quickstart.output
    script = (
        "import json; from django.contrib.auth.models import User; from adjudication.models import ReviewQueue; "
        f"accounts = {accounts!r}; "
        "print(json.dumps({'overlap': ReviewQueue.objects.get(name='quickstart-review').overlap, 'users': {"
        "u: [User.objects.get(username=u).check_password(p), sorted(User.objects.get(username=u).groups."
        "values_list('name', flat=True)), User.objects.get(username=u).is_superuser] for u, p in accounts.items()}}))"
    )
    done = quickstart.manage("shell", "-c", script)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["overlap"] == 2
    roles = {user: tuple(groups) for user, (_, groups, _) in seen["users"].items()}
    assert sorted(roles.values()) == [("adjudicator",), ("annotator",), ("annotator",), ("manager",)]
    assert all(ok and not superuser for ok, _, superuser in seen["users"].values())
