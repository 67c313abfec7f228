"""Multiple-choice and lm-eval regex readers (see docs/readers-mc.md):

* lm_eval: lm-eval 0.4.13's RegexFilter / MultiChoiceRegexFilter / exact_match ports, its named
  task configs, and the gold-letter reading every reader here shares;
* seed002: seed 002's five multiple-choice extractors and their GSM8K variants;
* boxed: seed 000's box-only harness reader;
* mmlu_pro: the MMLU-Pro authors' released extractor.
"""
