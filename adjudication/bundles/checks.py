"""The shape of a bundle's JSON, checked before anything is used: a bundle is untrusted, and a value
of the wrong type would otherwise surface as a traceback far from the member that held it. Pure:
plain values in, ValueError naming the member and the field out.

JSON is read within a nesting bound (MAX_DEPTH, adjudication.nesting): Python's parser recurses,
and `[` repeated 200,000 times ends it in a RecursionError (the comparison and the database
adapters recurse too).
"""

from __future__ import annotations

import json
import re
from typing import Any

from adjudication.nesting import nesting_past

# Deeper than anything a bundle writes (an analytics report nests about eight levels).
MAX_DEPTH = 64
NAME_MAX = 200
_SHA256 = re.compile(r"[0-9a-f]{64}")


def loads(raw: bytes, *, where: str) -> Any:
    """Bundle JSON (ASCII: a bundle is written with ensure_ascii); ValueError naming `where`."""
    too_deep = ValueError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        doc = json.loads(raw.decode("ascii"))
    except RecursionError:
        raise too_deep from None
    except (UnicodeDecodeError, ValueError) as exc:
        # ValueError: JSONDecodeError, and an integer of more digits than Python converts.
        raise ValueError(f"{where}: not JSON ({str(exc)[:200]})") from None
    # Fewer brackets than the bound (the common case, at the speed of bytes.count): nothing nests that deep.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nesting_past(doc, MAX_DEPTH) is not None:
        raise too_deep
    return doc


def _key(name: str) -> str:
    return json.dumps(name[:100])


def manifest(doc: Any, *, where: str, format_name: str, version: int) -> None:
    """A manifest's fields: format and version first (what the error says for another format),
    then the dataset, the members (each with its sha256) and the reports (each a member listed)."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: not an object")
    if doc.get("format") != format_name:
        raise ValueError(f"{where}: field 'format' is {_short(doc.get('format'))}, not {format_name!r}")
    if doc.get("version") != version or isinstance(doc.get("version"), bool):
        raise ValueError(
            f"{where}: field 'version' is {_short(doc.get('version'))}; this platform reads version {version}"
        )
    for key, kind in (("dataset", str), ("members", dict), ("reports", list)):
        if not isinstance(doc.get(key), kind):
            raise ValueError(f"{where}: field {key!r} is missing or not a {kind.__name__}")
    if not 1 <= len(doc["dataset"]) <= NAME_MAX:
        raise ValueError(f"{where}: field 'dataset' must be a name of 1 to {NAME_MAX} characters")
    if not isinstance(doc.get("text", True), bool):
        raise ValueError(f"{where}: field 'text' must be true or false")
    for name, entry in doc["members"].items():
        field = f"members[{_key(name)}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: field {field} must be an object")
        if not isinstance(entry.get("sha256"), str) or not _SHA256.fullmatch(entry["sha256"]):
            raise ValueError(f"{where}: field {field}.sha256 must be 64 hexadecimal digits")
        rows = entry.get("rows", 0)
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise ValueError(f"{where}: field {field}.rows must be a count")
    for i, report in enumerate(doc["reports"]):
        if not isinstance(report, dict):
            raise ValueError(f"{where}: field reports[{i}] must be an object")
        member = report.get("member")
        if not isinstance(member, str) or not member.startswith("reports/") or member not in doc["members"]:
            raise ValueError(f"{where}: field reports[{i}].member must name a reports/ member the manifest lists")
    if "environment.json" not in doc["members"]:
        raise ValueError(f"{where}: field 'members' does not list environment.json")


def environment(doc: Any, *, where: str) -> None:
    """environment.json: the strings a replay compares with its own environment."""
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: not an object")
    for key in ("git_commit", "python", "platform", "database"):
        if not isinstance(doc.get(key), (str, type(None))):
            raise ValueError(f"{where}: field {key!r} must be a string or null")
    packages = doc.get("packages", {})
    if not isinstance(packages, dict) or not all(isinstance(v, (str, type(None))) for v in packages.values()):
        raise ValueError(f"{where}: field 'packages' must be an object of version strings")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
