"""Settings, split by concern. Everything comes from the environment.

With none of DATABASE_URL / CELERY_BROKER_URL / REDIS_URL set, the platform runs on its embedded
default (SQLite in ./var and eager Celery) so that the quickstart needs no services at all.
"""

from .api import *  # noqa: F401,F403
from .base import *  # noqa: F401,F403
from .database import *  # noqa: F401,F403
from .env import *  # noqa: F401,F403  (must come first: the others read it)
from .logging import *  # noqa: F401,F403
from .queue import *  # noqa: F401,F403
from .security import *  # noqa: F401,F403
