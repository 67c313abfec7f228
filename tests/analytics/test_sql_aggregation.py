"""The readers' overview and ranking are counted in the database (grouped verdict counts), and
equal what counting every reading in Python gives, on any data (property-style: random datasets of
runs, readers, several versions of one reader name, and readings with every verdict, some missing)."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adjudication.analytics.agreement import DIMENSIONS, VerdictCount, overview_from_counts, reader_overview
from adjudication.analytics.selectors import ranking_tables, reader_observations, reading_summary
from adjudication.models import Dataset, Question, ReaderSpec, Reading, Response, Run

pytestmark = pytest.mark.django_db

VERDICTS = ["correct", "incorrect", "no_answer", "error", "timeout"]
_names = itertools.count()


@st.composite
def datasets(draw):
    runs = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["m1", "m2", "m3"]),
                st.sampled_from(["base", "rl", "sft"]),
                st.sampled_from(["math", "mmlu"]),
            ),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    readers = draw(
        st.lists(
            st.sampled_from([("boxed", "1"), ("boxed", "2"), ("fixed", "1"), ("judge", "1")]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    n = draw(st.integers(min_value=1, max_value=12))
    # Per response, per reader: a verdict, or None (that reader has not read it).
    cells = draw(
        st.lists(
            st.lists(st.sampled_from([*VERDICTS, None]), min_size=len(readers), max_size=len(readers)),
            min_size=n,
            max_size=n,
        )
    )
    placement = draw(st.lists(st.integers(min_value=0, max_value=len(runs) - 1), min_size=n, max_size=n))
    return runs, readers, cells, placement


def make(runs, readers, cells, placement) -> Dataset:
    ds = Dataset.objects.create(name=f"prop-{next(_names)}")
    run_rows = [Run.objects.create(dataset=ds, model=m, checkpoint=c, benchmark=b) for m, c, b in runs]
    specs = [
        ReaderSpec.objects.get_or_create(
            name=name,
            version=version,
            config_hash=f"h{name}{version}",
            defaults={"kind": "judge" if name == "judge" else "rule"},
        )[0]
        for name, version in readers
    ]
    readings = []
    for i, (verdicts, at) in enumerate(zip(cells, placement, strict=True)):
        run = run_rows[at]
        q = Question.objects.create(
            dataset=ds, benchmark=run.benchmark, text=f"q{i}", gold="A", fingerprint=f"{ds.name}-{i}"
        )
        r = Response.objects.create(
            dataset=ds, run=run, question=q, external_id=str(i), text="t", content_hash="c", row_hash=str(i)
        )
        readings += [Reading(response=r, reader_spec=s, verdict=v) for s, v in zip(specs, verdicts, strict=True) if v]
    Reading.objects.bulk_create(readings)
    return ds


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=datasets())
def test_the_overview_counted_in_sql_equals_the_one_counted_reading_by_reading(data):
    ds = make(*data)
    summary = reading_summary(dataset=ds)
    obs = reader_observations(dataset=ds)
    assert sum(c.n for c in summary.counts) == len(obs) == Reading.objects.filter(response__dataset=ds).count()
    for by in (None, *DIMENSIONS):
        assert overview_from_counts(summary.counts, by=by) == reader_overview(obs, by=by)
    # The ranking, from the same counts: per reader and model@checkpoint, (correct, all).
    want: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    per_model: dict[str, set[str]] = defaultdict(set)
    for m, c, _ in data[0]:
        per_model[m].add(c)
    several = any(len(c) > 1 for c in per_model.values())  # some model has two checkpoints: model@checkpoint
    for o in obs:
        model = f"{o.model}@{o.checkpoint}" if several else o.model
        want[o.reader][model][0] += o.verdict == "correct"
        want[o.reader][model][1] += 1
    got = ranking_tables(dataset=ds, summary=summary)
    assert got == {r: {m: tuple(v) for m, v in sorted(t.items())} for r, t in sorted(want.items())}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]), st.sampled_from(VERDICTS), st.sampled_from(["m1", "m2"]), st.integers(1, 5)
        ),
        max_size=30,
    )
)
def test_counts_give_the_same_overview_however_finely_they_are_grouped(rows):
    fine = [VerdictCount(reader, verdict, 1, model=model) for reader, verdict, model, k in rows for _ in range(k)]
    coarse: Counter = Counter()
    for reader, verdict, model, k in rows:
        coarse[(reader, verdict, model)] += k
    grouped = [VerdictCount(r, v, n, model=m) for (r, v, m), n in coarse.items()]
    for by in (None, "model"):
        assert overview_from_counts(grouped, by=by) == overview_from_counts(fine, by=by)
