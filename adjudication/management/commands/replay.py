"""`manage.py replay FILE`: load a bundle into a fresh database, recompute every report in it and
compare with the bundled numbers (docs/bundles.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from adjudication.management.base import ApplicationCommand


class Command(ApplicationCommand):
    help = (
        "Replay a bundle: load it into a fresh database (a temporary SQLite one unless --here), recompute "
        "every report and compare with the stored numbers (counts exactly, statistics within 1e-12); "
        "--reread also re-runs every rule reader on the stored texts and lists each verdict that changed. "
        "Exit status 1 when anything differs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bundle", type=Path, help="a file written by `manage.py bundle`")
        parser.add_argument("--reread", action="store_true", help="also re-run the rule readers on the stored texts")
        parser.add_argument(
            "--here",
            action="store_true",
            help="load into the configured database (it must hold no dataset and no user yet)",
        )
        parser.add_argument("--json", action="store_true", help="print JSON only")
        parser.add_argument(
            "--verify-signature",
            action="store_true",
            help="refuse a bundle not signed with BUNDLE_SIGNING_KEY (HMAC-SHA256 of its manifest)",
        )

    def handle(
        self, *args: Any, bundle: Path, reread: bool, here: bool, json: bool, verify_signature: bool, **options: Any
    ) -> None:
        from adjudication.bundles.services import (
            bundle_open,
            bundle_replay,
            bundle_verify,
            replay_in_scratch_database,
        )

        if not here:
            # A bad (or unsigned) file is said here, before a scratch database is made for it.
            opened = bundle_open(bundle)
            try:
                if verify_signature:
                    bundle_verify(opened)
            finally:
                opened.zf.close()
            status = replay_in_scratch_database(
                path=bundle, reread=reread, as_json=json, verify_signature=verify_signature
            )
            if status:
                raise CommandError("the replay did not reproduce the bundle (see above)", returncode=status)
            return
        result = bundle_replay(path=bundle, reread=reread, verify_signature=verify_signature)
        if json:
            self.stdout.write(_dumps(result.as_dict()))
        else:
            self.stdout.write(render(result.as_dict()))
        if not result.ok:
            raise CommandError("the replay did not reproduce the bundle", returncode=1)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str)


def render(res: dict[str, Any]) -> str:
    from adjudication.bundles.reread import SHOWN

    lines = [f"dataset {res['dataset']}: " + ", ".join(f"{n} {k.split('.')[-1]}" for k, n in res["rows"].items() if n)]
    for r in res["reports"]:
        if r["error"]:
            lines.append(f"  FAILED   {r['report']}: {r['error']}")
        elif r["differences"]:
            lines.append(f"  DIFFERS  {r['report']}: {len(r['differences'])} value(s)")
            for d in r["differences"][:20]:
                lines.append(f"           {d['path']}: stored {d['stored']!r}, recomputed {d['recomputed']!r}")
        else:
            lines.append(f"  same     {r['report']}")
        if r["needs_text"]:
            lines.append(
                f"           {len(r['needs_text'])} value(s) read the response texts, which this bundle does not "
                f"carry (--no-text): {', '.join(r['needs_text'][:5])}{' ...' if len(r['needs_text']) > 5 else ''}"
            )
    env = res["environment_changes"]
    if env:
        lines.append("environment differs from the bundle's:")
        for key in ("git_commit", "python"):
            if key in env:
                lines.append(f"  {key}: bundle {env[key]['bundle']}, here {env[key]['here']}")
        for name, v in (env.get("packages") or {}).items():
            lines.append(f"  {name}: bundle {v['bundle'] or '-'}, here {v['here'] or '-'}")
    for r in res["reread"] or []:
        if r["skipped"]:
            lines.append(f"  not re-read {r['reader']}: {r['skipped']}")
            continue
        moved = "" if r["here"] == r["stored"] else f" (bundle {r['stored']['version']}, here {r['here']['version']})"
        lines.append(f"  re-read {r['reader']}{moved}: {r['changed']} of {r['compared']} verdicts changed")
        for c in r["changes"][:SHOWN]:
            lines.append(f"           {c['response']}: {c['stored']['verdict']} -> {c['now']['verdict']}")
    lines.append("reproduced" if res["ok"] else "NOT reproduced")
    return "\n".join(lines)
