"""`manage.py`'s entry point: Django's, with a failing database said as an error, not a traceback.

Any command can lose its database (the server restarted, the network dropped, the URL points
nowhere). Django lets the OperationalError through as a traceback, which reads as a bug in the
command or in the user's input. `import_responses` says more (whether its one transaction
committed); every other command gets this general message. `--traceback` keeps Django's behaviour.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from adjudication.database_failures import database_failures


def database_failure_message(command: str, exc: BaseException) -> str:
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return (
        f"manage.py {command}: the database failed ({reason}). A write it interrupted was rolled back; what "
        "the command had committed before stays. Check that the database in DATABASE_URL is reachable, then run "
        "the command again."
    )


def main(argv: Sequence[str]) -> int:
    from django.core.management import execute_from_command_line

    if "--traceback" in argv:
        execute_from_command_line(list(argv))
        return 0
    try:
        execute_from_command_line(list(argv))
    except database_failures() as exc:
        command = argv[1] if len(argv) > 1 else ""
        print(database_failure_message(command, exc), file=sys.stderr)
        return 1
    return 0
