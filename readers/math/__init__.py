"""Maths answer readers, one module per reader family (see docs/readers-math.md):

* math_verify: math-verify 0.9.0 under a declared calling convention;
* strip_string: the Hendrycks MATH `strip_string` / `is_equiv` normaliser (and lm-eval's port);
* cascade: seed 001's reference SymPy cascade;
* seed001: seed 001's four verifiers under seed 001's own calling conventions;
* common: library versions the readers cite, and the cap on stored strings.

None of these readers enforces its own time budget: math-verify's SIGALRM timeouts are switched
off on purpose, and the cascade's `simplify` can run for ever. The hard wall-clock and memory
budget comes from readers.isolation, which runs every reading in a killable child process;
in-process calls (tests, the bench's bare loop) are for trusted inputs only.
"""
