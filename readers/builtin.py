"""Imports every module that registers built-in readers (side effects on the registry)."""
from . import mc  # noqa: F401  seed 002's five MC extractors, lm-eval named configs, boxed
from . import fixed  # noqa: F401  our broad model-agnostic reader
from . import mathreaders  # noqa: F401  math-verify configs, strip-string, sympy-cascade
from . import seed002_gsm8k  # noqa: F401  seed 002's GSM8K variants of instructed-format, answer-is-correct
from . import seed001  # noqa: F401  seed 001's four verifiers under seed 001's calling conventions
