"""Default annotation guidelines for the two built-in review tasks (Markdown). A queue starts with
the one for its task; managers edit them from the queue page, and each edit is a new version."""

from __future__ import annotations

COMMITMENT = """\
## What answer does the response commit to?

Label the answer the response **finally commits to**, as a careful grader reading the whole
response would. You are not judging whether it is right.

- **The last committed answer wins.** A response that says "(B)" and later "on reflection, the
  answer is C" commits to **C**. A box, "Final answer:" or "the answer is" marks a commitment; an
  option merely mentioned while reasoning ("B looks tempting, but…") does not.
- **Self-corrections.** "The answer is 12. Wait, I made an error: 14." commits to **14**. A
  correction that is only started ("Wait, let me recheck…") and never finished leaves the earlier
  answer standing.
- **Two answers at once.** "A or C", "both A and C", or two different boxed answers with nothing
  to choose between them: press **a** (ambiguous). Do not pick one for the model.
- **Truncated or unfinished thinking.** When the response stops before committing (cut off inside
  its reasoning, an empty answer after the thinking): **0** (no answer). Guesses made while thinking
  are not answers.
- **Answers outside the options.** A multiple-choice response that commits to something that is not
  one of the options (a number, "none of these", an option that does not exist): if it clearly means
  one option by its text, pick that option; otherwise **0** (no answer) and say why in the note.
- **Same answer, different writing.** "C", "(C) Merton", "\\boxed{\\text{C}}" are one answer;
  so are "1/2", "\\frac{1}{2}" and "0.5". The candidate list already groups them.
- **Open answers.** Pick the candidate that matches the committed answer; if none does, press
  **t** and type it as the response wrote it.

Use **confidence** (1–5) when you hesitate, and the **note** for anything an adjudicator should know.
"""

CORRECTNESS = (
    COMMITMENT
    + """
## Is the response correct?

After the committed answer, judge it against the **reference answer**:

- **correct** (c) when the committed answer means the same as the reference: equal numbers in any
  form (0.5 = 1/2 = 50%), the same option, the same set or interval, units aside when the question
  fixes them.
- **incorrect** (i) when it means something else, when the response commits to nothing, or when it
  hedges between a right and a wrong answer.
- A right answer reached by wrong working is still **correct** here: the task is the answer.
"""
)


def default_guidelines(*, judge_correctness: bool) -> str:
    return CORRECTNESS if judge_correctness else COMMITMENT
