"""How well each LLM judge's replies could be read: the parse-failure (unparsed) rate, and how often
the judge's own parser and the upstream parser of its template read a reply differently.

Pure functions over counts of readings (analytics.selectors.judge_parsing_counts groups them). What
the judges record on each reading (docs/judges.md, "Judges and parsers"): `detail.parse_status`
(`parsed`, `unparsed`, `call_failed`), `detail.upstream_parser` (the template's upstream parser:
simple-evals' first capital for SimpleQA, xVerify's exact label, inspect-ai's last GRADE: for
custom templates) and `detail.parser_disagrees` (the two parsers' readings differ, an unparsed
reply included).

Why these sit beside the bias figures: an unparsed reply is neither correct nor incorrect, so it
is left out of every bias figure; a judge whose replies mostly do not follow its template has a
bias measured on the few that did (its n says how few), and a judge whose verdicts depend on which
parser reads them has a bias that belongs to the parser as much as to the judge.

Definitions, per judge over every reading of the dataset (labelled or not):

* replies = parsed + unparsed (a reply was received); calls_failed = readings with no reply;
* unparsed_rate = unparsed / replies (Wilson interval);
* parser_disagreement_rate = replies the two parsers read differently / replies on which the
  comparison was recorded (readings written before it was recorded are counted in
  `parser_disagreement_unrecorded`).

A rate above FLAG_RATE is flagged, with what it means for the bias figures.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from adjudication.analytics.stats import proportion

PARSED = "parsed"
UNPARSED = "unparsed"
# Above this share of replies, a parse-failure or parser-disagreement rate is flagged.
FLAG_RATE = 0.05


@dataclass(frozen=True)
class ParsingCount:
    """How many readings of one judge had one parse status and parser comparison."""

    judge: str
    parse_status: str  # parsed / unparsed / call_failed; "" when the reading records none
    upstream_parser: str  # "" when not recorded
    disagrees: bool | None  # None when not recorded (no reply, or an older reading)
    n: int


def judge_parsing(counts: Iterable[ParsingCount]) -> dict[str, dict[str, Any]]:
    """{judge: {replies, calls_failed, unparsed {k, n, rate, ci}, upstream_parser,
    parser_disagreement {k, n, rate, ci}, parser_disagreement_unrecorded, flags}}."""
    status: dict[str, Counter[str]] = defaultdict(Counter)
    disagree: dict[str, Counter[bool | None]] = defaultdict(Counter)
    upstream: dict[str, Counter[str]] = defaultdict(Counter)
    for c in counts:
        status[c.judge][c.parse_status] += c.n
        if c.parse_status in (PARSED, UNPARSED):
            disagree[c.judge][c.disagrees] += c.n
            if c.upstream_parser:
                upstream[c.judge][c.upstream_parser] += c.n
    out: dict[str, dict[str, Any]] = {}
    for judge in sorted(status):
        s = status[judge]
        replies = s[PARSED] + s[UNPARSED]
        d = disagree[judge]
        recorded = d[True] + d[False]
        name = upstream[judge].most_common(1)[0][0] if upstream[judge] else ""
        entry: dict[str, Any] = {
            "replies": replies,
            "calls_failed": sum(s.values()) - replies,
            "unparsed": proportion(s[UNPARSED], replies),
            "upstream_parser": name,
            "parser_disagreement": proportion(d[True], recorded),
            "parser_disagreement_unrecorded": d[None],
        }
        entry["flags"] = _flags(entry)
        out[judge] = entry
    return out


def _flags(entry: dict[str, Any]) -> list[str]:
    flags = []
    unparsed, disagreement = entry["unparsed"], entry["parser_disagreement"]
    if unparsed["rate"] is not None and unparsed["rate"] > FLAG_RATE:
        flags.append(
            f"{unparsed['k']} of {unparsed['n']} replies ({unparsed['rate']:.0%}) do not follow the template's "
            "answer format (unparsed): they are left out of the bias figures, which rest on the parsed rest only"
        )
    if disagreement["rate"] is not None and disagreement["rate"] > FLAG_RATE:
        flags.append(
            f"our parser and {entry['upstream_parser'] or 'the upstream parser'} read {disagreement['k']} of "
            f"{disagreement['n']} replies ({disagreement['rate']:.0%}) differently: these verdicts depend on the "
            "parser, not only on the judge; read the replies before trusting its bias"
        )
    return flags


def parsing_text(parsing: dict[str, dict[str, Any]]) -> list[str]:
    """The lines the text reports print per judge."""
    lines = []
    for judge, p in parsing.items():
        u, d = p["unparsed"], p["parser_disagreement"]
        lines.append(
            f"{judge}: {p['replies']} replies ({p['calls_failed']} calls failed), unparsed {_share(u)}, "
            f"disagreeing with {p['upstream_parser'] or 'the upstream parser'} {_share(d)}"
            + (f", {p['parser_disagreement_unrecorded']} not compared" if p["parser_disagreement_unrecorded"] else "")
        )
        lines += [f"    ! {flag}" for flag in p["flags"]]
    return lines


def _share(p: dict[str, Any]) -> str:
    if p["rate"] is None:
        return f"{p['k']}/{p['n']}"
    lo, hi = p["ci"]
    return f"{p['k']}/{p['n']} = {p['rate']:.3f} [{lo:.3f}, {hi:.3f}]"
