"""Analytics: reader agreement with humans, judge bias, format share and rankings.

Layering: `stats` holds the statistics (thin wrappers over statsmodels, scikit-learn, scipy and
krippendorff, so every number equals the reference implementation); `bias`, `agreement`,
`format_share` and `ranking` are pure functions over plain records (no ORM), so the file-only
commands (`--input`) and the tests use them without a database; `selectors` turns database rows
into those records; `svg` draws the manager pages' plots server-side (`scripts/realdata.py`
reproduces the two results on the real data sets with these modules). Definitions of every number: docs/analytics.md.
"""
