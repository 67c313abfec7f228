"""Logging: plain lines on stderr; math-verify logs whole inputs at WARNING on timeouts, so cap it."""

from .env import env_str

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": env_str("LOG_LEVEL", default="WARNING")},
    "loggers": {
        "math_verify": {"level": "ERROR"},
        "latex2sympy2_extended": {"level": "ERROR"},
    },
}
