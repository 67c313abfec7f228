#!/usr/bin/env python3
"""Deterministic generator for the bundled quickstart sample (quickstart.jsonl + README.md).

Everything in this file -- questions, options, golds, worked solutions and the simulated model
responses -- was written for this project; nothing is copied from a benchmark. Two fictional
model families ("orca-7b", "lumen-8b"), each with a `base` and an `rl` checkpoint, answer every
question of a small multiple-choice set ("mmlu") and a small short-answer maths set ("math").

The data is built to tell the "format share" story (seed 000): the base checkpoints mostly commit
in prose ("The answer is (B).", "Answer: B", "#### 72"), the RL checkpoints mostly box
(\\boxed{B}); the RL checkpoints are only a few points more often *truly* correct, yet a box-only
reader would report a large gain. A sprinkling of hard cases (self-corrections, truncated
thinking, two options, refusals, JSON, Chinese, bold, option text, NOT-questions, currency,
equivalent maths forms, off-by-one large integers, base-model run-ons) is placed in every
family/checkpoint.

The generator decides correctness itself and records what each response really commits to in
`meta.intended_answer` (null when it commits to nothing), `meta.correct` and `meta.style`, so tests
can check readers against it.

Stdlib only; seeded, so two runs write byte-identical files.

    python scripts/build_sample.py            # (re)write quickstart.jsonl and README.md, print stats
    python scripts/build_sample.py --check    # exit 1 if the files on disk differ from a fresh build
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

SEED = "adjudication-quickstart-v1"
# The builder lives outside the app; what it writes is the app's bundled sample.
HERE = Path(__file__).resolve().parents[1] / "adjudication" / "sample_data"
OUT_JSONL = HERE / "quickstart.jsonl"
OUT_README = HERE / "README.md"
LETTERS = "ABCD"
PROMPT_ID = "cot-v1"


def rng_for(*parts: object) -> random.Random:
    # str seeds are hashed with SHA-512 by `random` (seed version 2): stable across runs/platforms.
    return random.Random("|".join([SEED, *map(str, parts)]))


def fill(template: str, **kw: str) -> str:
    """Replace @KEY@ placeholders (avoids fighting LaTeX braces with str.format)."""
    for key, value in kw.items():
        template = template.replace(f"@{key}@", value)
    return template


def weighted(rng: random.Random, weights: dict[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys], k=1)[0]


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------------------------------------
# Multiple-choice bank ("mmlu"): 44 original questions. `distractors[0]` is the trap option a
# wrong response falls for; `trap_why` is the (mistaken) reasoning that leads there.
# ---------------------------------------------------------------------------------------------
MC_BANK: list[dict] = [
    dict(
        subject="sociology",
        question=(
            "Which sociologist argued that the 'Protestant ethic' helped give rise to the spirit of modern capitalism?"
        ),
        correct="Max Weber",
        distractors=["Karl Marx", "Émile Durkheim", "Herbert Spencer"],
        why=(
            "Weber's study of Calvinism linked the idea of a worldly calling and disciplined saving to the growth of "
            "rational capitalist enterprise."
        ),
        trap_why=(
            "Marx is the theorist most associated with the origins of capitalism, and he wrote at length about how it "
            "grew out of feudal society."
        ),
    ),
    dict(
        subject="sociology",
        question="In Durkheim's sociology, the term 'anomie' refers to",
        correct="a breakdown of social norms that leaves individuals without clear guidance",
        distractors=[
            "the estrangement of workers from the products of their labour",
            "the process of learning the norms and values of one's culture",
            "the domination of society by a small ruling elite",
        ],
        why=(
            "Durkheim used anomie for normlessness: when rapid change weakens shared rules, people's goals are no "
            "longer regulated, which he tied to higher suicide rates."
        ),
        trap_why=(
            "Anomie describes people feeling cut off and detached, which sounds like the estrangement that comes from "
            "modern industrial work."
        ),
    ),
    dict(
        subject="sociology",
        not_q=True,
        question="Which of the following is NOT usually counted among the primary agents of socialization?",
        correct="the Gini coefficient",
        distractors=["the mass media", "the family", "peer groups"],
        why=(
            "The Gini coefficient is a statistical measure of income inequality, not a group or institution through "
            "which people learn norms."
        ),
        trap_why=(
            "The mass media is impersonal and one-directional, so it does not really interact with a child the way "
            "family and peers do."
        ),
    ),
    dict(
        subject="sociology",
        question="The 'Thomas theorem' in sociology holds that",
        correct="if people define situations as real, they are real in their consequences",
        distractors=[
            "deviance is learned through interaction with close associates",
            "a person's class position is fixed by their relation to the means of production",
            "larger groups are always more stable than smaller ones",
        ],
        why=(
            "W. I. Thomas and Dorothy Swaine Thomas stressed that people act on their interpretation of a situation, "
            "so those definitions have real outcomes whether or not they are accurate."
        ),
        trap_why=(
            "The Thomas theorem comes out of the Chicago school's interactionist tradition, and learning deviance from "
            "close associates is the classic interactionist claim."
        ),
    ),
    dict(
        subject="sociology",
        question=(
            "The movement of individuals or groups between positions in a system of social stratification is called"
        ),
        correct="social mobility",
        distractors=["social stratification", "socialization", "cultural lag"],
        why="Stratification is the ranked system itself; movement up, down or across that system is social mobility.",
        trap_why=(
            "The question is about positions in a hierarchy of strata, and that hierarchy is exactly what "
            "stratification describes."
        ),
    ),
    dict(
        subject="biology",
        question="Which organelle is the main site of ATP production by oxidative phosphorylation in eukaryotic cells?",
        correct="the mitochondrion",
        distractors=["the chloroplast", "the Golgi apparatus", "the ribosome"],
        why=(
            "Oxidative phosphorylation runs on the electron transport chain and ATP synthase in the inner "
            "mitochondrial membrane."
        ),
        trap_why=(
            "Chloroplasts also make ATP with an electron transport chain and ATP synthase, and they are the organelle "
            "most associated with capturing energy."
        ),
    ),
    dict(
        subject="biology",
        question=(
            "During which phase of mitosis do sister chromatids separate and move toward opposite poles of the cell?"
        ),
        correct="anaphase",
        distractors=["metaphase", "prophase", "telophase"],
        why=(
            "In anaphase the cohesin holding sister chromatids together is cleaved and the spindle pulls them to "
            "opposite poles."
        ),
        trap_why=(
            "In metaphase the chromosomes sit on the metaphase plate attached to spindle fibres from both poles, which "
            "is where they get pulled apart."
        ),
    ),
    dict(
        subject="biology",
        not_q=True,
        question="Which of the following is NOT a normal function of the human liver?",
        correct="secreting insulin",
        distractors=["storing glycogen", "producing bile", "breaking down alcohol and many drugs"],
        why=(
            "Insulin is secreted by the beta cells of the pancreatic islets; the liver responds to insulin but does "
            "not make it."
        ),
        trap_why=(
            "Glycogen is stored mainly in skeletal muscle, so glycogen storage looks like the function that does not "
            "belong to the liver."
        ),
    ),
    dict(
        subject="biology",
        question=(
            "In a cross between two pea plants that are both heterozygous for height (Tt × Tt), what fraction of the "
            "offspring is expected to be homozygous recessive (tt)?"
        ),
        correct="1/4",
        distractors=["1/2", "3/4", "0"],
        why="Each parent passes on t with probability 1/2, so tt occurs with probability 1/2 × 1/2 = 1/4.",
        trap_why=(
            "Each parent carries one t allele out of two, so half of the offspring should end up with the recessive "
            "form."
        ),
    ),
    dict(
        subject="biology",
        question="Which molecule delivers amino acids to the ribosome during translation?",
        correct="transfer RNA (tRNA)",
        distractors=["messenger RNA (mRNA)", "ribosomal RNA (rRNA)", "DNA polymerase"],
        why="Each tRNA carries a specific amino acid and pairs its anticodon with a codon of the mRNA at the ribosome.",
        trap_why=(
            "Messenger RNA brings the genetic instructions to the ribosome and the amino acid sequence comes from it, "
            "so it is what supplies the ribosome."
        ),
    ),
    dict(
        subject="biology",
        question="Which blood cells are chiefly responsible for carrying oxygen from the lungs to the tissues?",
        correct="erythrocytes (red blood cells)",
        distractors=["leukocytes (white blood cells)", "platelets", "plasma cells"],
        why="Erythrocytes are packed with haemoglobin, which binds oxygen in the lungs and releases it in the tissues.",
        trap_why=(
            "Leukocytes circulate through every tissue of the body, so they are in the right place to deliver oxygen."
        ),
    ),
    dict(
        subject="physics",
        question=(
            "A stone is dropped from rest. Ignoring air resistance and taking g = 10 m/s², how far does it fall in the "
            "first 2 seconds?"
        ),
        correct="20 m",
        distractors=["40 m", "10 m", "5 m"],
        why="For motion from rest, d = ½gt² = ½ × 10 × 2² = 20 m.",
        trap_why="The distance is g times t squared, 10 × 2² = 40 m.",
    ),
    dict(
        subject="physics",
        question=(
            "In a perfectly inelastic collision between two objects in an isolated system, which quantity is conserved?"
        ),
        correct="total linear momentum, but not total kinetic energy",
        distractors=[
            "both total linear momentum and total kinetic energy",
            "total kinetic energy, but not total linear momentum",
            "neither momentum nor kinetic energy",
        ],
        why=(
            "Momentum is conserved in any collision without external forces, while a perfectly inelastic collision "
            "turns the largest possible share of kinetic energy into heat and deformation."
        ),
        trap_why=(
            "In an isolated system nothing enters or leaves, so momentum and kinetic energy must both be conserved."
        ),
    ),
    dict(
        subject="physics",
        question="What is the SI unit of electrical resistance?",
        correct="the ohm",
        distractors=["the volt", "the farad", "the ampere"],
        why="Resistance is voltage divided by current, and one volt per ampere is defined as one ohm.",
        trap_why=(
            "Resistance is defined through Ohm's law with voltage in the numerator, so the volt is the unit it is "
            "measured in."
        ),
    ),
    dict(
        subject="physics",
        question="A 2 kg cart accelerates at 3 m/s². What is the net force acting on it?",
        correct="6 N",
        distractors=["1.5 N", "5 N", "0.67 N"],
        why="Newton's second law gives F = ma = 2 kg × 3 m/s² = 6 N.",
        trap_why="Force relates acceleration and mass as a ratio, 3 / 2 = 1.5 N.",
    ),
    dict(
        subject="physics",
        not_q=True,
        question="Which of the following is NOT a form of electromagnetic radiation?",
        correct="ultrasound",
        distractors=["microwaves", "X-rays", "visible light"],
        why=(
            "Ultrasound is a high-frequency sound wave, a mechanical vibration of a medium, not an oscillating "
            "electromagnetic field."
        ),
        trap_why=(
            "Microwaves in an oven work by shaking water molecules, which is a mechanical process rather than "
            "radiation."
        ),
    ),
    dict(
        subject="physics",
        question="When light passes from air into glass, which property of the light stays the same?",
        correct="its frequency",
        distractors=["its wavelength", "its speed", "its direction of travel at every angle of incidence"],
        why=(
            "The frequency is fixed by the source and does not change at the boundary; the speed drops, so the "
            "wavelength shortens instead."
        ),
        trap_why=(
            "The colour of the light does not change inside glass, and colour is set by wavelength, so the wavelength "
            "stays the same."
        ),
    ),
    dict(
        subject="history",
        question="The Peace of Westphalia (1648) is most closely associated with",
        correct="ending the Thirty Years' War and strengthening the principle of state sovereignty",
        distractors=[
            "ending the Hundred Years' War between England and France",
            "founding the Holy Roman Empire",
            "dividing newly claimed lands between Spain and Portugal",
        ],
        why=(
            "The treaties signed at Osnabrück and Münster ended the Thirty Years' War in 1648 and are often cited as "
            "the origin of the sovereign-state system."
        ),
        trap_why=(
            "Westphalia was the long-delayed settlement between France and England, which closed the Hundred Years' "
            "War."
        ),
    ),
    dict(
        subject="history",
        question=(
            "After the collapse of the Western Roman Empire in 476, which state continued Roman rule from "
            "Constantinople?"
        ),
        correct="the Byzantine Empire",
        distractors=["the Holy Roman Empire", "the Carolingian Empire", "the Mongol Empire"],
        why=(
            "The Eastern Roman Empire, which historians call the Byzantine Empire, kept governing from Constantinople "
            "for almost another thousand years."
        ),
        trap_why="The Holy Roman Empire explicitly claimed to continue Rome, so it is the natural successor.",
    ),
    dict(
        subject="history",
        question="The Meiji Restoration of 1868 primarily involved",
        correct="the restoration of imperial rule in Japan and a programme of rapid modernization",
        distractors=[
            "the founding of the Tokugawa shogunate",
            "the return of the Ming dynasty to power in China",
            "Korea's independence from Japanese rule",
        ],
        why=(
            "In 1868 the Tokugawa shogunate fell, power was returned to the Meiji emperor, and Japan began "
            "industrializing and rebuilding its institutions."
        ),
        trap_why=(
            "1868 was the turning point for the shogunate and the Tokugawa family is central to the story, so this "
            "looks like the start of Tokugawa rule."
        ),
    ),
    dict(
        subject="history",
        question="The Magna Carta of 1215 is best described as",
        correct="a charter that placed limits on the powers of the English king",
        distractors=[
            "a papal decree excommunicating King John",
            "a declaration of independence by the American colonies",
            "a treaty ending the Norman conquest",
        ],
        why=(
            "Rebel barons forced King John to accept the charter, which bound the king to the law and protected rights "
            "such as due process."
        ),
        trap_why=(
            "King John was locked in a bitter dispute with the Pope in those years, so the document sounds like a "
            "papal decree against him."
        ),
    ),
    dict(
        subject="history",
        not_q=True,
        question=(
            "Which of the following was NOT one of the 'Big Three' leaders at the Yalta Conference in February 1945?"
        ),
        correct="Charles de Gaulle",
        distractors=["Franklin D. Roosevelt", "Winston Churchill", "Joseph Stalin"],
        why="De Gaulle was not invited to Yalta; the conference brought together Roosevelt, Churchill and Stalin.",
        trap_why=(
            "Roosevelt died in 1945 and was already in very poor health, so he probably did not make the journey to "
            "Yalta."
        ),
    ),
    dict(
        subject="history",
        question="The overland Silk Road primarily linked",
        correct="China with Central Asia, Persia and the Mediterranean world",
        distractors=[
            "the Indian subcontinent with Southeast Asia by sea",
            "West Africa with the Americas",
            "Scandinavia with Iceland and Greenland",
        ],
        why="The caravan routes ran from Chang'an through Central Asia and Persia toward the eastern Mediterranean.",
        trap_why=(
            "Much of the silk and spice trade moved by sea between India and Southeast Asia, and that is the route the "
            "name usually refers to."
        ),
    ),
    dict(
        subject="law",
        question=(
            "In common-law systems, the doctrine that courts should follow precedents set by higher courts is known as"
        ),
        correct="stare decisis",
        distractors=["res judicata", "habeas corpus", "mens rea"],
        why=(
            "Stare decisis, 'to stand by things decided', binds lower courts to the rulings of higher courts on the "
            "same point of law."
        ),
        trap_why=(
            "Res judicata means 'a matter already judged', which is about following what courts have decided before."
        ),
    ),
    dict(
        subject="law",
        question="In criminal law, 'mens rea' refers to",
        correct="the mental element or guilty mind required for an offence",
        distractors=[
            "the physical act or omission that constitutes an offence",
            "the prosecution's burden of proof",
            "a defence of necessity",
        ],
        why="Mens rea is the mental element, such as intention or recklessness, that must accompany the actus reus.",
        trap_why="Mens rea is the core element that must be proved for any crime, and that is the wrongful act itself.",
    ),
    dict(
        subject="law",
        question="Under the United States Constitution, the power to declare war is given to",
        correct="Congress",
        distractors=["the President", "the Supreme Court", "the Secretary of Defense"],
        why=(
            "Article I, Section 8 gives Congress the power to declare war; the President is commander in chief but "
            "does not declare war."
        ),
        trap_why=(
            "The President is commander in chief of the armed forces, so the decision to go to war rests with the "
            "President."
        ),
    ),
    dict(
        subject="law",
        question="As a general rule, a contract entered into by a minor is",
        correct="voidable at the minor's option",
        distractors=["void from the outset", "fully enforceable against the minor", "a criminal offence"],
        why=(
            "The minor may affirm or disaffirm the contract while the adult party stays bound, which is what "
            "'voidable' means."
        ),
        trap_why=(
            "A minor lacks capacity to contract, and a contract made without capacity has no legal effect at all, so "
            "it is void."
        ),
    ),
    dict(
        subject="law",
        not_q=True,
        question="Which of the following is NOT generally required to form a valid contract?",
        correct="a written document witnessed by a notary",
        distractors=["consideration", "offer and acceptance", "capacity of the parties"],
        why=(
            "Most contracts can be formed orally; writing or notarization is required only for particular categories "
            "such as some land transactions."
        ),
        trap_why=(
            "Consideration is a technical doctrine that many legal systems do without, so it is not a general "
            "requirement."
        ),
    ),
    dict(
        subject="law",
        question="The rule that a person cannot be tried again for the same offence after an acquittal is known as",
        correct="double jeopardy",
        distractors=["estoppel", "habeas corpus", "sub judice"],
        why=(
            "The protection against double jeopardy bars a second prosecution for the same offence after an acquittal "
            "or conviction."
        ),
        trap_why=(
            "Estoppel stops a party from going back on a position that has already been settled, which is what happens "
            "here."
        ),
    ),
    dict(
        subject="chemistry",
        question="What is the pH of a 0.001 M solution of hydrochloric acid, a strong acid?",
        correct="3",
        distractors=["11", "1", "7"],
        why="HCl dissociates completely, so [H⁺] = 10⁻³ M and pH = −log₁₀(10⁻³) = 3.",
        trap_why="The concentration is 10⁻³ and pH plus pOH equals 14, so the pH is 14 − 3 = 11.",
    ),
    dict(
        subject="chemistry",
        question="Which element has the highest electronegativity on the Pauling scale?",
        correct="fluorine",
        distractors=["oxygen", "chlorine", "caesium"],
        why=(
            "Fluorine sits at the top right of the periodic table, noble gases aside, with a Pauling value of about "
            "3.98."
        ),
        trap_why="Oxygen is extremely electron-hungry and forms very polar bonds, so it has the highest value.",
    ),
    dict(
        subject="chemistry",
        question=(
            "According to 2H₂ + O₂ → 2H₂O, how many moles of water form when 2 moles of hydrogen gas react completely "
            "with excess oxygen?"
        ),
        correct="2",
        distractors=["1", "4", "3"],
        why="The mole ratio of H₂ to H₂O is 2 : 2, so 2 mol of H₂ gives 2 mol of water.",
        trap_why="One molecule of O₂ makes the water, so 2 moles of hydrogen give only 1 mole of water.",
    ),
    dict(
        subject="economics",
        question="If the price elasticity of demand for a good is −0.3, demand for the good is",
        correct="inelastic",
        distractors=["elastic", "unit elastic", "perfectly elastic"],
        why=(
            "The absolute value 0.3 is below 1, so quantity demanded responds less than proportionally to a price "
            "change."
        ),
        trap_why="A non-zero elasticity means quantity responds to price, which makes the demand elastic.",
    ),
    dict(
        subject="economics",
        question="A binding price ceiling set below the equilibrium price will typically lead to",
        correct="a shortage",
        distractors=["a surplus", "a higher quantity traded", "no change in the market"],
        why="Below equilibrium the quantity demanded exceeds the quantity supplied, so there is excess demand.",
        trap_why="A ceiling holds the price down, so sellers are left with goods they cannot sell, which is a surplus.",
    ),
    dict(
        subject="economics",
        question=(
            "Which measure gives the market value of all final goods and services produced within a country's borders "
            "in a year?"
        ),
        correct="gross domestic product (GDP)",
        distractors=["gross national income (GNI)", "the consumer price index (CPI)", "the balance of payments"],
        why=(
            "GDP is defined by where production happens, inside the borders, while GNI is defined by the residents who "
            "own the factors of production."
        ),
        trap_why=(
            "GNI adds up the income earned by the nation, and income equals the value of what is produced, so GNI is "
            "the measure."
        ),
    ),
    dict(
        subject="psychology",
        question=(
            "In classical conditioning, a previously neutral stimulus that comes to elicit a response after repeated "
            "pairing is called the"
        ),
        correct="conditioned stimulus",
        distractors=["unconditioned stimulus", "conditioned response", "negative reinforcer"],
        why=(
            "Like the bell in Pavlov's experiments, the once-neutral stimulus becomes a conditioned stimulus once it "
            "elicits the learned response."
        ),
        trap_why=(
            "Before the pairing nothing had been conditioned yet, so the neutral stimulus is the unconditioned "
            "stimulus."
        ),
    ),
    dict(
        subject="psychology",
        question=(
            "The tendency to explain other people's behaviour by their personality while underestimating situational "
            "influences is known as the"
        ),
        correct="fundamental attribution error",
        distractors=["self-serving bias", "confirmation bias", "availability heuristic"],
        why=(
            "Over-attributing other people's actions to disposition rather than circumstances is the fundamental "
            "attribution error."
        ),
        trap_why=(
            "Blaming other people's character while excusing oneself protects one's self-image, which is the "
            "self-serving bias."
        ),
    ),
    dict(
        subject="computer science",
        question="What is the worst-case time complexity of binary search on a sorted array of n elements?",
        correct="O(log n)",
        distractors=["O(n)", "O(n log n)", "O(1)"],
        why="Each comparison halves the remaining range, so at most about log₂ n comparisons are needed.",
        trap_why="In the worst case the target is absent, so every element has to be examined, which is O(n).",
    ),
    dict(
        subject="computer science",
        question="Which data structure removes elements in last-in, first-out (LIFO) order?",
        correct="a stack",
        distractors=["a queue", "a binary heap", "a hash table"],
        why="A stack pushes and pops at the same end, so the most recently added element leaves first.",
        trap_why="A queue processes items in the order they wait in line, which is the last-in, first-out discipline.",
    ),
    dict(
        subject="philosophy",
        question="The statement 'I think, therefore I am' is most closely associated with",
        correct="René Descartes",
        distractors=["John Locke", "Immanuel Kant", "David Hume"],
        why="Descartes reached 'cogito, ergo sum' while searching for a belief that could survive radical doubt.",
        trap_why=(
            "Locke tied personal identity to consciousness and thinking, which is exactly what the statement expresses."
        ),
    ),
    dict(
        subject="geography",
        question="Which is the longest river in South America?",
        correct="the Amazon",
        distractors=["the Paraná", "the Orinoco", "the São Francisco"],
        why=(
            "The Amazon runs roughly 6,400 km from the Andes to the Atlantic, far longer than any other South American "
            "river."
        ),
        trap_why="The Paraná drains an enormous basin across several countries and is usually listed as the longest.",
    ),
    dict(
        subject="astronomy",
        question="Which planet in our solar system has the shortest orbital period?",
        correct="Mercury",
        distractors=["Venus", "Mars", "Earth"],
        why="Mercury is closest to the Sun and, by Kepler's third law, completes an orbit in about 88 days.",
        trap_why="Venus is the hottest planet and orbits close to the Sun, so its year is the shortest.",
    ),
    dict(
        subject="statistics",
        not_q=True,
        question="Which of the following is NOT a measure of central tendency?",
        correct="the standard deviation",
        distractors=["the mode", "the mean", "the median"],
        why="The standard deviation measures spread around the mean, not the centre of the distribution.",
        trap_why=(
            "The mode only reports the most frequent value, which is about frequency rather than the centre, so it is "
            "the odd one out."
        ),
    ),
    dict(
        subject="medicine",
        question="A deficiency of which vitamin causes scurvy?",
        correct="vitamin C",
        distractors=["vitamin K", "vitamin D", "vitamin B12"],
        why=(
            "Vitamin C is needed for collagen synthesis, and its lack causes bleeding gums, poor wound healing and the "
            "other signs of scurvy."
        ),
        trap_why=(
            "Scurvy causes bleeding gums and easy bruising, which points to a clotting problem and therefore to "
            "vitamin K."
        ),
    ),
]

# ---------------------------------------------------------------------------------------------
# Maths bank ("math"): 36 original short-answer problems. `gold` is LaTeX, `plain` its ASCII
# spelling (defaults to gold); `alts` are equivalent forms (label, latex, plain) that must be
# judged correct; `wrong` / `wrong_steps` is the plausible mistake a wrong response makes.
# kinds: currency, percent, large (>= 10000), fencepost (the wrong answer is gold +- 1).
# ---------------------------------------------------------------------------------------------
MATH_BANK: list[dict] = [
    dict(
        question="What is the sum of the interior angles of a hexagon, in degrees?",
        gold="720",
        steps=(
            r"The interior angles of an $n$-gon sum to $(n-2) \cdot 180^\circ$. For a hexagon $n = 6$, so the sum is "
            r"$4 \cdot 180^\circ = 720^\circ$."
        ),
        wrong="1080",
        wrong_steps=(
            r"Joining the centre to the 6 vertices splits the hexagon into 6 triangles, each with angle sum "
            r"$180^\circ$, so the total is $6 \cdot 180^\circ = 1080^\circ$."
        ),
        alts=[("units", r"720^\circ", "720 degrees")],
    ),
    dict(
        question="A train travels 180 km in 2.5 hours at a constant speed. What is its speed in km/h?",
        gold="72",
        steps=r"Speed is distance divided by time: $180 / 2.5 = 72$ km/h.",
        wrong="90",
        wrong_steps=r"The trip takes about 2 hours, so the speed is $180 / 2 = 90$ km/h.",
        alts=[("units", r"72 \text{ km/h}", "72 km/h"), ("decimal", "72.0", "72.0")],
    ),
    dict(
        question=(
            "A bag contains 6 red marbles and 2 blue marbles. One marble is drawn at random. What is the probability "
            "that it is red?"
        ),
        gold=r"\frac{3}{4}",
        plain="3/4",
        steps=(
            r"There are $6 + 2 = 8$ marbles and 6 of them are red, so the probability is $\frac{6}{8} = \frac{3}{4}$."
        ),
        wrong=r"\frac{1}{3}",
        wrong_plain="1/3",
        wrong_steps=r"The ratio of blue to red is $2 : 6$, so the probability is $\frac{2}{6} = \frac{1}{3}$.",
        alts=[
            ("decimal", "0.75", "0.75"),
            ("dfrac", r"\dfrac{3}{4}", "3/4"),
            ("slash", "3/4", "3/4"),
            ("unsimplified", r"\frac{6}{8}", "6/8"),
        ],
    ),
    dict(
        question=r"A rectangle has side lengths $2$ and $2\sqrt{2}$. What is the length of its diagonal?",
        gold=r"2\sqrt{3}",
        plain="2√3",
        steps=r"By Pythagoras, $d^2 = 2^2 + (2\sqrt{2})^2 = 4 + 8 = 12$, so $d = \sqrt{12} = 2\sqrt{3}$.",
        wrong=r"2\sqrt{2}",
        wrong_plain="2√2",
        wrong_steps=r"By Pythagoras, $d^2 = 2^2 + (2\sqrt{2})^2 = 4 + 4 = 8$, so $d = \sqrt{8} = 2\sqrt{2}$.",
        alts=[("unsimplified", r"\sqrt{12}", "√12"), ("latex_variant", r"2\sqrt 3", "2√3")],
    ),
    dict(
        question=r"Solve the system $x + y = 4$, $x - y = -2$. Give the answer as an ordered pair $(x, y)$.",
        gold="(1, 3)",
        steps=r"Adding the two equations gives $2x = 2$, so $x = 1$, and then $y = 4 - 1 = 3$.",
        wrong="(3, 1)",
        wrong_steps=r"Adding the two equations gives $2x = 6$, so $x = 3$, and then $y = 4 - 3 = 1$.",
        alts=[("spacing", "(1,3)", "(1,3)"), ("assignment", "x = 1, y = 3", "x = 1, y = 3")],
    ),
    dict(
        question="The price of a book rises from $40 to $60. By what percent did the price increase?",
        gold="50",
        kinds=["percent"],
        steps=r"The increase is $60 - 40 = 20$, and $\frac{20}{40} = 0.5$, which is $50\%$.",
        wrong="33.3",
        wrong_steps=r"The increase is $20$, and $\frac{20}{60} \approx 0.333$, which is about $33.3\%$.",
        alts=[("percent", r"50\%", "50%")],
        wrong_alt=("percent", r"33.3\%", "33.3%"),
    ),
    dict(
        question="How many multiples of 3 are there from 1 to 30000, inclusive?",
        gold="10000",
        kinds=["large", "fencepost"],
        steps=(
            r"The multiples are $3, 6, \ldots, 30000$, that is $3k$ for $k = 1, \ldots, 10000$, so there are "
            r"$30000 / 3 = 10000$ of them."
        ),
        wrong="10001",
        wrong_steps=r"Counting from $0$ to $30000$ in steps of 3 gives $30000 / 3 + 1 = 10001$ terms.",
        alts=[("thousands", "10,000", "10,000")],
    ),
    dict(
        question=(
            "A straight road is 20000 metres long. Lamp posts stand every 2 metres, including one at each end. How "
            "many lamp posts are there?"
        ),
        gold="10001",
        kinds=["large", "fencepost"],
        steps=(
            r"The posts split the road into $20000 / 2 = 10000$ gaps, and a row that includes both ends has one more "
            r"post than gaps, so there are $10001$ posts."
        ),
        wrong="10000",
        wrong_steps=r"One post every 2 metres over 20000 metres gives $20000 / 2 = 10000$ posts.",
        alts=[("thousands", "10,001", "10,001")],
    ),
    dict(
        question=r"Compute $123 \times 456$.",
        gold="56088",
        kinds=["large"],
        steps=r"$123 \times 456 = 123 \times 400 + 123 \times 56 = 49200 + 6888 = 56088$.",
        wrong="55988",
        wrong_steps=r"$123 \times 456 = 123 \times 400 + 123 \times 56 = 49200 + 6788 = 55988$.",
        alts=[("thousands", "56,088", "56,088")],
    ),
    dict(
        question=(
            "A laptop has a list price of $1,000, and a sales tax of 23.4% is added. What is the total price in "
            "dollars?"
        ),
        gold="1234",
        kinds=["currency"],
        steps=r"The tax is $0.234 \times 1000 = 234$ dollars, so the total is $1000 + 234 = 1234$ dollars.",
        wrong="1023.4",
        wrong_steps=r"Adding the 23.4 to the list price gives $1000 + 23.4 = 1023.4$ dollars.",
        alts=[("currency", r"\$1,234", "$1,234"), ("currency_cents", r"\$1234.00", "$1234.00")],
        wrong_alt=("currency", r"\$1,023.40", "$1,023.40"),
    ),
    dict(
        question=(
            "You invest $20,000 at 10% annual interest, compounded annually. What is the investment worth after 2 "
            "years, in dollars?"
        ),
        gold="24200",
        kinds=["currency", "large"],
        steps=(
            r"After one year the value is $20000 \times 1.1 = 22000$; after two years it is $22000 \times 1.1 = 24200$ "
            r"dollars."
        ),
        wrong="24000",
        wrong_steps=(
            r"Each year earns $10\%$ of $20000$, which is $2000$, so after two years the value is "
            r"$20000 + 2 \times 2000 = 24000$ dollars."
        ),
        alts=[("currency", r"\$24,200", "$24,200"), ("thousands", "24,200", "24,200")],
        wrong_alt=("currency", r"\$24,000", "$24,000"),
    ),
    dict(
        question=r"Evaluate $0.3 \times 0.4 + 1.05$.",
        gold="1.17",
        steps=r"$0.3 \times 0.4 = 0.12$, and $0.12 + 1.05 = 1.17$.",
        wrong="2.25",
        wrong_steps=r"$0.3 \times 0.4 = 1.2$, so the total is $1.2 + 1.05 = 2.25$.",
        alts=[("fraction", r"\frac{117}{100}", "117/100")],
    ),
    dict(
        question=r"Solve the inequality $|x - 2| < 3$. Give the solution set in interval notation.",
        gold="(-1, 5)",
        steps=(
            r"$|x - 2| < 3$ means $-3 < x - 2 < 3$; adding 2 to each part gives $-1 < x < 5$, the interval $(-1, 5)$."
        ),
        wrong="(-5, 1)",
        wrong_steps=(
            r"$|x - 2| < 3$ means $-3 < x - 2 < 3$; subtracting 2 from each part gives $-5 < x < 1$, the interval "
            r"$(-5, 1)$."
        ),
        alts=[("inequality", "-1 < x < 5", "-1 < x < 5"), ("spacing", "(-1,5)", "(-1,5)")],
    ),
    dict(
        question=r"Find all real $x$ with $x^2 - 5x + 6 \le 0$. Give the answer in interval notation.",
        gold="[2, 3]",
        steps=(
            r"$x^2 - 5x + 6 = (x - 2)(x - 3)$, which is non-positive between the roots with the endpoints included, so "
            r"$x \in [2, 3]$."
        ),
        wrong="(2, 3)",
        wrong_steps=(
            r"$x^2 - 5x + 6 = (x - 2)(x - 3)$, which is negative strictly between the roots, so $x \in (2, 3)$."
        ),
        alts=[("inequality", r"2 \le x \le 3", "2 <= x <= 3")],
    ),
    dict(
        question="A fair six-sided die is rolled. What is the probability of rolling a number greater than 2?",
        gold=r"\frac{2}{3}",
        plain="2/3",
        steps=(
            r"The outcomes 3, 4, 5 and 6 are greater than 2, which is 4 of 6, so the probability is "
            r"$\frac{4}{6} = \frac{2}{3}$."
        ),
        wrong=r"\frac{1}{2}",
        wrong_plain="1/2",
        wrong_steps=(
            r"The outcomes greater than 2 are 3, 4 and 5, which is 3 of 6, so the probability is $\frac{1}{2}$."
        ),
        alts=[("unsimplified", r"\frac{4}{6}", "4/6"), ("slash", "2/3", "2/3")],
    ),
    dict(
        question="What is the greatest common divisor of 84 and 126?",
        gold="42",
        steps=r"$84 = 2^2 \cdot 3 \cdot 7$ and $126 = 2 \cdot 3^2 \cdot 7$, so the gcd is $2 \cdot 3 \cdot 7 = 42$.",
        wrong="21",
        wrong_steps=r"Both numbers are divisible by 3 and by 7, so the gcd is $3 \cdot 7 = 21$.",
    ),
    dict(
        question="What is the least common multiple of 12 and 18?",
        gold="36",
        steps=r"$12 = 2^2 \cdot 3$ and $18 = 2 \cdot 3^2$, so the lcm is $2^2 \cdot 3^2 = 36$.",
        wrong="216",
        wrong_steps=r"A common multiple is $12 \times 18 = 216$, so the lcm is $216$.",
    ),
    dict(
        question="How many distinct arrangements of the letters of the word LEVEL are there?",
        gold="30",
        steps=(
            r"LEVEL has 5 letters with L twice and E twice, so there are $\frac{5!}{2!\,2!} = \frac{120}{4} = 30$ "
            r"arrangements."
        ),
        wrong="60",
        wrong_steps=r"There are 5 letters and the L is repeated, so there are $\frac{5!}{2!} = 60$ arrangements.",
    ),
    dict(
        question="In how many ways can a committee of 3 people be chosen from 10 people?",
        gold="120",
        steps=r"$\binom{10}{3} = \frac{10 \cdot 9 \cdot 8}{3 \cdot 2 \cdot 1} = 120$.",
        wrong="720",
        wrong_steps=r"There are $10 \cdot 9 \cdot 8 = 720$ ways to pick the three members.",
    ),
    dict(
        question="What is the sum of the first 50 positive odd integers?",
        gold="2500",
        steps=r"The sum of the first $n$ odd numbers is $n^2$, so the sum is $50^2 = 2500$.",
        wrong="2550",
        wrong_steps=r"The sum of the first $n$ such numbers is $n(n + 1)$, so the sum is $50 \cdot 51 = 2550$.",
    ),
    dict(
        question=r"Simplify $\sqrt{50}$.",
        gold=r"5\sqrt{2}",
        plain="5√2",
        steps=r"$\sqrt{50} = \sqrt{25 \cdot 2} = 5\sqrt{2}$.",
        wrong=r"25\sqrt{2}",
        wrong_plain="25√2",
        wrong_steps=r"$50 = 25 \cdot 2$, so $\sqrt{50} = 25\sqrt{2}$.",
        alts=[("latex_variant", r"5\sqrt 2", "5√2")],
    ),
    dict(
        question=r"What is the distance between the points $(1, 2)$ and $(4, 6)$?",
        gold="5",
        steps=r"$\sqrt{(4-1)^2 + (6-2)^2} = \sqrt{9 + 16} = \sqrt{25} = 5$.",
        wrong="7",
        wrong_steps=r"The horizontal change is 3 and the vertical change is 4, so the distance is $3 + 4 = 7$.",
    ),
    dict(
        question=r"Solve $3x - 7 = 11$.",
        gold="6",
        steps=r"$3x = 11 + 7 = 18$, so $x = 6$.",
        wrong=r"\frac{4}{3}",
        wrong_plain="4/3",
        wrong_steps=r"$3x = 11 - 7 = 4$, so $x = \frac{4}{3}$.",
        alts=[("assignment", "x = 6", "x = 6")],
    ),
    dict(
        question=r"What is the minimum value of $f(x) = x^2 - 4x + 1$ over the real numbers?",
        gold="-3",
        steps=r"Completing the square, $f(x) = (x - 2)^2 - 3$, so the minimum value is $-3$, attained at $x = 2$.",
        wrong="2",
        wrong_steps=r"The vertex is at $x = -\frac{b}{2a} = 2$, so the minimum is $2$.",
    ),
    dict(
        question=r"Write $\frac{3}{8}$ as a decimal.",
        gold="0.375",
        steps=r"$3 \div 8 = 0.375$.",
        wrong="2.667",
        wrong_steps=r"$8 \div 3 \approx 2.667$.",
        alts=[("leading_point", ".375", ".375")],
    ),
    dict(
        question="What percent of 80 is 20?",
        gold="25",
        kinds=["percent"],
        steps=r"$\frac{20}{80} = 0.25$, which is $25\%$.",
        wrong="400",
        wrong_steps=r"$\frac{80}{20} = 4$, which is $400\%$.",
        alts=[("percent", r"25\%", "25%")],
        wrong_alt=("percent", r"400\%", "400%"),
    ),
    dict(
        question=r"Find the vertex of the parabola $y = x^2 - 6x + 5$.",
        gold="(3, -4)",
        steps=r"The vertex has $x = \frac{6}{2} = 3$ and $y = 9 - 18 + 5 = -4$, so the vertex is $(3, -4)$.",
        wrong="(-3, 32)",
        wrong_steps=r"The vertex has $x = -3$ and $y = 9 + 18 + 5 = 32$, so the vertex is $(-3, 32)$.",
        alts=[("spacing", "(3,-4)", "(3,-4)")],
    ),
    dict(
        question="How many seconds are there in one day?",
        gold="86400",
        kinds=["large"],
        steps=r"$24 \times 60 \times 60 = 1440 \times 60 = 86400$.",
        wrong="8640",
        wrong_steps=r"$24 \times 60 = 1440$ minutes, and $1440 \times 6 = 8640$ seconds.",
        alts=[("thousands", "86,400", "86,400")],
    ),
    dict(
        question=r"Compute $\frac{1}{2} + \frac{1}{3}$.",
        gold=r"\frac{5}{6}",
        plain="5/6",
        steps=r"With common denominator 6, $\frac{3}{6} + \frac{2}{6} = \frac{5}{6}$.",
        wrong=r"\frac{2}{5}",
        wrong_plain="2/5",
        wrong_steps=r"Adding numerators and denominators gives $\frac{1 + 1}{2 + 3} = \frac{2}{5}$.",
        alts=[("dfrac", r"\dfrac{5}{6}", "5/6"), ("slash", "5/6", "5/6")],
    ),
    dict(
        question=r"What is the area of a circle with radius 3? Express your answer in terms of $\pi$.",
        gold=r"9\pi",
        plain="9π",
        steps=r"$A = \pi r^2 = \pi \cdot 3^2 = 9\pi$.",
        wrong=r"6\pi",
        wrong_plain="6π",
        wrong_steps=r"$A = 2\pi r = 6\pi$.",
        alts=[("spacing", r"9 \pi", "9 π")],
    ),
    dict(
        question=r"What is $1 + 2 + 3 + \cdots + 100$?",
        gold="5050",
        steps=r"Using $\frac{n(n+1)}{2}$ with $n = 100$ gives $\frac{100 \cdot 101}{2} = 5050$.",
        wrong="5000",
        wrong_steps=r"There are 100 terms averaging about 50, so the sum is $100 \cdot 50 = 5000$.",
        alts=[("thousands", "5,050", "5,050")],
    ),
    dict(
        question=r"Evaluate $\log_2 64$.",
        gold="6",
        steps=r"$2^6 = 64$, so $\log_2 64 = 6$.",
        wrong="32",
        wrong_steps=r"$\log_2 64 = \frac{64}{2} = 32$.",
    ),
    dict(
        question=(
            "Five workers build a wall in 12 days. Working at the same rate, how many days would six workers take?"
        ),
        gold="10",
        steps=r"The job takes $5 \times 12 = 60$ worker-days, so six workers need $\frac{60}{6} = 10$ days.",
        wrong="14.4",
        wrong_steps=r"Scaling the time by the number of workers gives $12 \times \frac{6}{5} = 14.4$ days.",
        alts=[("units", r"10 \text{ days}", "10 days")],
    ),
    dict(
        question=r"Compute $2^{17}$.",
        gold="131072",
        kinds=["large"],
        steps=r"$2^{10} = 1024$ and $2^7 = 128$, so $2^{17} = 1024 \times 128 = 131072$.",
        wrong="65536",
        wrong_steps=r"$2^{17} = 2^{10} \cdot 2^{6} = 1024 \cdot 64 = 65536$.",
        alts=[("thousands", "131,072", "131,072")],
    ),
    dict(
        question=r"Simplify $(\sqrt{3} + 1)(\sqrt{3} - 1)$.",
        gold="2",
        steps=r"This is a difference of squares: $(\sqrt{3})^2 - 1^2 = 3 - 1 = 2$.",
        wrong="4",
        wrong_steps=r"Expanding gives $(\sqrt{3})^2 + 1^2 = 3 + 1 = 4$.",
    ),
    dict(
        question="What is 15% of 240?",
        gold="36",
        steps=r"$0.15 \times 240 = 36$.",
        wrong="3600",
        wrong_steps=r"$15 \times 240 = 3600$.",
    ),
]

# ---------------------------------------------------------------------------------------------
# Models. `targets` = number of truly correct answers (base, rl) per benchmark; `main` = weights of
# the ordinary answer wrappers; `think` = probability of a <think>...</think> section.
# ---------------------------------------------------------------------------------------------
FAMILIES: list[dict] = [
    dict(
        name="orca-7b",
        targets={"mmlu": (25, 27), "math": (15, 17)},
        main={
            "base": {
                "mmlu": {"prose": 0.50, "answer_colon": 0.20, "boxed": 0.14, "bold": 0.08, "option_text": 0.08},
                "math": {"prose": 0.35, "hash": 0.32, "answer_colon": 0.18, "boxed": 0.15},
            },
            "rl": {
                "mmlu": {"boxed": 0.82, "prose": 0.10, "answer_colon": 0.04, "bold": 0.04},
                "math": {"boxed": 0.86, "prose": 0.09, "answer_colon": 0.05},
            },
        },
        think={"base": 0.06, "rl": 0.70},
    ),
    dict(
        name="lumen-8b",
        targets={"mmlu": (29, 31), "math": (19, 20)},
        main={
            "base": {
                "mmlu": {"answer_colon": 0.42, "prose": 0.30, "boxed": 0.16, "bold": 0.07, "option_text": 0.05},
                "math": {"hash": 0.38, "prose": 0.30, "answer_colon": 0.15, "boxed": 0.17},
            },
            "rl": {
                "mmlu": {"boxed": 0.78, "prose": 0.10, "answer_colon": 0.06, "bold": 0.06},
                "math": {"boxed": 0.84, "prose": 0.10, "answer_colon": 0.06},
            },
        },
        think={"base": 0.10, "rl": 0.60},
    ),
]
CHECKPOINTS = ("base", "rl")

STYLES = {
    # ordinary wrappers
    "boxed",
    "prose",
    "answer_colon",
    "hash",
    "bold",
    "option_text",
    # hard cases
    "json",
    "chinese",
    "self_correction",
    "truncated",
    "two_options",
    "cannot_determine",
    "runon",
    "equivalent_form",
    "currency",
    "percent",
    "thousands",
    "off_by_one",
}
NO_ANSWER_STYLES = {"truncated", "two_options", "cannot_determine"}


# ---------------------------------------------------------------------------------------------
# Building the item tables
# ---------------------------------------------------------------------------------------------
def build_mc_items() -> list[dict]:
    rng = rng_for("mc-layout")
    positions = [i % len(LETTERS) for i in range(len(MC_BANK))]
    rng.shuffle(positions)  # balanced gold letters
    items = []
    for n, (spec, gold_pos) in enumerate(zip(MC_BANK, positions), start=1):
        others = list(spec["distractors"])
        order = list(range(len(others)))
        rng.shuffle(order)
        choices: list[str | None] = [None] * len(LETTERS)
        choices[gold_pos] = spec["correct"]
        slots = [i for i in range(len(LETTERS)) if i != gold_pos]
        trap_pos = None
        for slot, k in zip(slots, order):
            choices[slot] = others[k]
            if k == 0:
                trap_pos = slot
        items.append(
            dict(
                qid=f"mmlu-{n:03d}",
                subject=spec["subject"],
                question=spec["question"],
                choices=choices,
                gold=LETTERS[gold_pos],
                trap=LETTERS[trap_pos],
                why=spec["why"],
                trap_why=spec["trap_why"],
                not_q=bool(spec.get("not_q")),
            )
        )
    return items


def build_math_items() -> list[dict]:
    items = []
    for n, spec in enumerate(MATH_BANK, start=1):
        item = dict(spec)
        item["qid"] = f"math-{n:03d}"
        item.setdefault("plain", item["gold"])
        item.setdefault("wrong_plain", item["wrong"])
        item.setdefault("alts", [])
        item.setdefault("kinds", [])
        items.append(item)
    return items


def choose_correct(
    family: str, bench: str, qids: list[str], k_base: int, k_rl: int, must_miss: list[str]
) -> dict[str, set[str]]:
    """Base gets the k_base 'easiest' items for this family; RL keeps most of them, loses two and
    gains a few more, so it is only slightly more often right. At least one of `must_miss` stays
    wrong for each checkpoint (the off-by-one case needs a wrong fencepost item)."""
    difficulty = {q: rng_for("difficulty", bench, q).random() for q in qids}
    noise = {q: rng_for("noise", family, bench, q).gauss(0, 0.25) for q in qids}
    order = sorted(qids, key=lambda q: (difficulty[q] + noise[q], q))
    rng = rng_for("correct", family, bench)
    base = set(order[:k_base])
    dropped = set(rng.sample(sorted(base), 2))
    gained = order[k_base : k_base + (k_rl - k_base) + 2]
    rl = (base - dropped) | set(gained)
    out = {"base": base, "rl": rl}
    for ckpt, cset in out.items():
        if must_miss and all(q in cset for q in must_miss):
            victim = rng_for("miss", family, bench, ckpt).choice(must_miss)
            replacement = next(q for q in order if q not in cset and q not in must_miss)
            cset.discard(victim)
            cset.add(replacement)
        assert len(cset) == (k_base if ckpt == "base" else k_rl)
    return out


def assign_styles(family: dict, ckpt: str, bench: str, items: list[dict], correct: set[str]) -> dict[str, str]:
    rng = rng_for("styles", family["name"], ckpt, bench)
    wrong_pool = [it["qid"] for it in items if it["qid"] not in correct]
    right_pool = [it["qid"] for it in items if it["qid"] in correct]
    rng.shuffle(wrong_pool)
    rng.shuffle(right_pool)
    by_id = {it["qid"]: it for it in items}
    styles: dict[str, str] = {}

    def take(pool: list[str], style: str, n: int, ok=lambda it: True) -> None:
        for qid in list(pool):
            if n == 0:
                break
            if qid not in styles and ok(by_id[qid]):
                styles[qid] = style
                pool.remove(qid)
                n -= 1
        assert n == 0, (family["name"], ckpt, bench, style)

    if bench == "mmlu":
        take(wrong_pool, "truncated", 2 if ckpt == "rl" else 1)
        take(wrong_pool, "two_options", 1)
        take(wrong_pool, "cannot_determine", 1)
        take(wrong_pool, "self_correction", 1)  # talks itself out of the right answer
        take(right_pool, "self_correction", 1)  # corrects a wrong first answer
        take(right_pool, "json", 1)
        take(right_pool, "chinese", 1)
        take(right_pool, "bold", 1)
        take(right_pool, "option_text", 2 if ckpt == "base" else 1)
        if ckpt == "base":
            take(right_pool, "runon", 1)
        take(wrong_pool, "json" if family["name"] == "orca-7b" else "chinese", 1)
    else:
        take(wrong_pool, "off_by_one", 1, lambda it: "fencepost" in it["kinds"])
        take(wrong_pool, "truncated", 1)
        take(wrong_pool, "cannot_determine", 1)

        def plain_alts(it: dict) -> bool:
            return bool(it["alts"]) and not ({"currency", "percent"} & set(it["kinds"]))

        take(right_pool, "equivalent_form", 3, plain_alts)
        take(right_pool, "self_correction", 1, lambda it: not it["kinds"])
        take(right_pool, "json", 1, lambda it: not it["kinds"])
        take(right_pool, "chinese", 1, lambda it: not it["kinds"])
        if ckpt == "base":
            take(right_pool, "runon", 1, lambda it: not it["kinds"])
    main = family["main"][ckpt][bench]
    for it in items:
        qid = it["qid"]
        kinds = it.get("kinds", [])
        if qid in styles:
            continue
        if "currency" in kinds:
            styles[qid] = "currency"
        elif "percent" in kinds and rng.random() < 0.7:
            styles[qid] = "percent"
        elif "large" in kinds and rng.random() < 0.35:
            styles[qid] = "thousands"
        else:
            styles[qid] = weighted(rng, main)
    return styles


# ---------------------------------------------------------------------------------------------
# Multiple-choice response rendering
# ---------------------------------------------------------------------------------------------
OPENERS = [
    "Let's think step by step.",
    "Let me work through the options one at a time.",
    "Okay, this is a question about @S@.",
    "We need to choose the option that best answers the question.",
    "Let me recall the relevant @S@ first.",
]
NOT_OPENERS = [
    "The question asks which option is NOT correct, so I am looking for the exception.",
    "Careful: this is a NOT question, so three options fit and one does not.",
    "We need the option that does not belong.",
]
DISMISS = [
    "Option @L@ (@T@) does not match what is being described.",
    "@CT@ (@L@) is related, but it refers to something else.",
    "I can rule out @L@, @T@.",
    "Option @L@, @T@, doesn't fit here.",
]
FITS = [
    "Option @L@ (@T@) clearly fits, so it is not the exception.",
    "@CT@ (@L@) does belong.",
    "Option @L@, @T@, is a standard example, so it is not what we want.",
]
GOLD_TAIL = ["That matches option @L@.", "So option @L@, @T@, is correct.", "This corresponds to @L@."]
EXCEPTION_TAIL = ["So option @L@ is the exception.", "That makes @L@ (@T@) the one that does not belong."]
HEDGE = ["Option @L@ (@T@) is possible, but I'm not convinced.", "At first @T@ (@L@) looks tempting, but no."]
TRAP_TAIL = ["That points to option @L@.", "So I'll go with @L@, @T@.", "This suggests @L@."]
SUMMARY = [
    "The correct option is @L@: @T@.",
    "Based on this, the best answer is option @L@ (@T@).",
    "So the answer should be @L@.",
]
RUMINATE = [
    "Hmm, wait. Let me reconsider option @L@ again.",
    "Actually, let me re-read the question once more.",
    "Hmm, but option @L@ might also be defensible.",
]


def opt(item: dict, letter: str) -> tuple[str, str]:
    text = item["choices"][LETTERS.index(letter)]
    return letter, text


def sent(rng: random.Random, pool: list[str], item: dict, letter: str | None = None) -> str:
    kw = {"S": item.get("subject", "")}
    if letter:
        _, text = opt(item, letter)
        kw.update(L=letter, T=text, CT=cap(text))
    return fill(rng.choice(pool), **kw)


def mc_reasoning(rng: random.Random, item: dict, right: bool) -> list[str]:
    """Sentences of a reasoning path ending in the gold (right=True) or the trap letter."""
    gold, trap = item["gold"], item["trap"]
    others = [ltr for ltr in LETTERS if ltr != gold]
    out = [sent(rng, NOT_OPENERS if item["not_q"] else OPENERS, item)]
    if item["not_q"]:
        if right:
            out += [sent(rng, FITS, item, ltr) for ltr in others]
            out += [item["why"], sent(rng, EXCEPTION_TAIL, item, gold)]
        else:
            fits = [ltr for ltr in LETTERS if ltr != trap]
            rng.shuffle(fits)
            out += [sent(rng, FITS, item, ltr) for ltr in sorted(fits[:2])]
            out += [item["trap_why"], sent(rng, EXCEPTION_TAIL, item, trap)]
    elif right:
        dismiss = rng.sample(others, rng.choice([1, 2]))
        out += [sent(rng, DISMISS, item, ltr) for ltr in sorted(dismiss)]
        out += [item["why"], sent(rng, GOLD_TAIL, item, gold)]
    else:
        if rng.random() < 0.6:
            out.append(sent(rng, HEDGE, item, gold))
        out += [item["trap_why"], sent(rng, TRAP_TAIL, item, trap)]
    return out


def mc_commit(rng: random.Random, wrapper: str, item: dict, letter: str) -> tuple[str, dict]:
    """The final-answer line for one wrapper; returns (text, extra meta)."""
    _, text = opt(item, letter)
    extra: dict = {}
    if wrapper == "boxed":
        variant = weighted(rng, {"letter": 0.6, "text": 0.2, "paren": 0.2})
        inner = {"letter": letter, "text": r"\text{" + letter + "}", "paren": f"({letter})"}[variant]
        tmpl = rng.choice(
            [
                "The answer is $\\boxed{@I@}$.",
                "\\boxed{@I@}",
                "Final answer: \\boxed{@I@}",
                "**Final Answer**\n\n\\boxed{@I@}",
            ]
        )
        extra["variant"] = variant
        return fill(tmpl, I=inner), extra
    if wrapper == "prose":
        tmpl = rng.choice(
            [
                "The answer is (@L@).",
                "The answer is @L@.",
                "Therefore, the correct answer is @L@.",
                "So the answer is (@L@) @T@.",
            ]
        )
    elif wrapper == "answer_colon":
        tmpl = rng.choice(["Answer: @L@", "Answer: (@L@)", "Final answer: @L@"])
    elif wrapper == "bold":
        tmpl = rng.choice(
            ["**@L@**", "**Answer: @L@**", "The correct choice is **@L@**.", "**Final Answer: (@L@) @T@**"]
        )
    elif wrapper == "option_text":
        tmpl = rng.choice(["**Answer:** @CT@", "The answer is @T@.", "So the correct choice is @T@."])
        extra["intended_text"] = text
    elif wrapper == "json":
        tmpl = rng.choice(['{"answer": "@L@"}', '```json\n{"answer": "@L@"}\n```'])
    elif wrapper == "chinese":
        tmpl = rng.choice(["答案是 @L@", "答案是 @L@。", "因此，答案是 @L@。"])
    else:  # pragma: no cover
        raise ValueError(wrapper)
    return fill(tmpl, L=letter, T=text, CT=cap(text)), extra


def join(sentences: list[str], rl: bool) -> str:
    sentences = [s for s in sentences if s]
    if rl:  # RL outputs are laid out in short paragraphs
        paras, cur = [], []
        for s in sentences:
            cur.append(s)
            if len(cur) == 2:
                paras.append(" ".join(cur))
                cur = []
        if cur:
            paras.append(" ".join(cur))
        return "\n\n".join(paras)
    return " ".join(sentences)


def wrap_think(rng: random.Random, body: str, summary: str, commit: str, think: bool) -> str:
    if think:
        return f"<think>\n{body}\n</think>\n\n{summary}\n\n{commit}".replace("\n\n\n\n", "\n\n")
    return (
        f"{body}\n\n{commit}"
        if "\n" in body or commit.startswith(("**", "\\boxed", "{", "```"))
        else f"{body} {commit}"
    )


def render_mc(
    family: dict, ckpt: str, item: dict, style: str, right: bool, rng: random.Random, mc_items: list[dict]
) -> tuple[str, str | None, dict]:
    """Returns (response, intended_answer, extra meta)."""
    rl = ckpt == "rl"
    main = family["main"][ckpt]["mmlu"]
    think = rng.random() < family["think"][ckpt]
    gold, trap = item["gold"], item["trap"]
    letter = gold if right else trap
    extra: dict = {"think": think}

    if style == "truncated":
        path = mc_reasoning(rng, item, rng.random() < 0.5)[:-1]
        body = path[: max(2, len(path) - 1)]
        loops = [sent(rng, RUMINATE, item, rng.choice([gold, trap])) for _ in range(rng.randint(3, 6))]
        cut_src = item["why"] if rng.random() < 0.5 else item["trap_why"]
        words = cut_src.split()
        fragment = " ".join(words[: max(3, int(len(words) * rng.uniform(0.35, 0.7)))])
        text = "<think>\n" + join(body + loops, True) + "\n\n" + fragment
        return text, None, {"think": True, "truncated": True}

    if style == "two_options":
        pair = sorted([gold, trap])
        body = join(
            [
                *mc_reasoning(rng, item, True)[:-1],
                item["trap_why"],
                f"Both {pair[0]} and {pair[1]} seem defensible here, and I can't rule either out.",
            ],
            rl,
        )
        if rl:
            commit = rng.choice([f"\\boxed{{{pair[0]}, {pair[1]}}}", f"\\boxed{{{pair[0]}}} or \\boxed{{{pair[1]}}}"])
        else:
            commit = rng.choice([f"The answer is {pair[0]} or {pair[1]}.", f"Answer: {pair[0]}, {pair[1]}"])
        return (
            wrap_think(rng, body, "I am torn between two options.", commit, think),
            None,
            extra | {"candidates": pair},
        )

    if style == "cannot_determine":
        body = join(
            [
                sent(rng, OPENERS, item),
                sent(rng, HEDGE, item, gold),
                sent(rng, HEDGE, item, trap),
                "The question seems to depend on details that are not given, and several options could be argued.",
            ],
            rl,
        )
        if rl and rng.random() < 0.6:
            commit = rng.choice([r"\boxed{\text{Cannot determine}}", r"\boxed{\text{None of the above}}"])
        else:
            commit = rng.choice(
                [
                    "I cannot determine the answer from the information given.",
                    "I cannot determine which option is correct without more context.",
                ]
            )
        return wrap_think(rng, body, "I'm not able to settle on one option.", commit, think), None, extra

    if style == "self_correction":
        wrapper = weighted(rng, {k: v for k, v in main.items() if k != "option_text"})
        first = trap if right else gold
        first_path = mc_reasoning(rng, item, not right)
        first_commit, _ = mc_commit(rng, wrapper, item, first)
        recheck = rng.choice(
            [
                "Wait, on reflection, that is not right.",
                "Hmm, wait. Let me double-check that.",
                "Actually, wait. I should reconsider.",
            ]
        )
        second = [item["why"] if right else item["trap_why"], f"So on reflection the answer is {letter}, not {first}."]
        final_commit, ex = mc_commit(rng, wrapper, item, letter)
        first_block = join(first_path, rl or think)
        if think:  # thinks, answers, then second-guesses itself after the think section
            first_block = "<think>\n" + first_block + "\n</think>"
        body = first_block + "\n\n" + first_commit + "\n\n" + join([recheck, *second], rl) + "\n\n" + final_commit
        return body, letter, extra | ex | {"wrapper": wrapper, "first_answer": first}

    if style == "runon":  # base model keeps going and invents the next few-shot example
        wrapper = rng.choice(["prose", "answer_colon"])
        commit, ex = mc_commit(rng, wrapper, item, letter)
        other = rng.choice([m for m in mc_items if m["qid"] != item["qid"] and m["gold"] != letter])
        opts = "\n".join(f"{ltr}. {t}" for ltr, t in zip(LETTERS, other["choices"]))
        cont = (
            f"\n\nQuestion: {other['question']}\n{opts}\nAnswer: Let's think step by step. "
            f"{other['why']} The answer is ({other['gold']})."
        )
        text = join(mc_reasoning(rng, item, right), False) + " " + commit + cont
        return text, letter, extra | ex | {"wrapper": wrapper, "continuation_answer": other["gold"]}

    wrapper = style if style in {"boxed", "prose", "answer_colon", "bold", "option_text", "json", "chinese"} else None
    assert wrapper, style
    path = mc_reasoning(rng, item, right)
    if wrapper == "option_text":  # commits by option text only: drop the "That matches option X." tail
        path = path[:-1]
    commit, ex = mc_commit(rng, wrapper, item, letter)
    if think and wrapper == "option_text":
        return wrap_think(rng, join(path, True), "Putting this together:", commit, True), letter, extra | ex
    if think:
        body = join(path, True)
        return wrap_think(rng, body, sent(rng, SUMMARY, item, letter), commit, True), letter, extra | ex
    return wrap_think(rng, join(path, rl), "", commit, False), letter, extra | ex


# ---------------------------------------------------------------------------------------------
# Maths response rendering
# ---------------------------------------------------------------------------------------------
M_OPENERS = [
    "Let's solve this step by step.",
    "We need to compute this carefully.",
    "Let me work it out.",
    "Let's think step by step.",
]
M_CHECK = [
    "Let me double-check: that looks right.",
    "Checking the arithmetic once more, this is consistent.",
    "Quick sanity check: the value is reasonable.",
]
M_RUMINATE = [
    "Wait, let me re-check the first step.",
    "Hmm, let me recompute that.",
    "Let me re-read the problem to make sure I have the numbers right.",
]


def needs_math(v: str) -> bool:
    return any(c in v for c in "\\^_")


def math_value(item: dict, style: str, right: bool, rng: random.Random) -> tuple[str, str, str]:
    """(latex, plain, form label) of the value the response commits to."""
    if not right:
        if style in ("currency", "percent") and item.get("wrong_alt"):
            label, latex, plain = item["wrong_alt"]
            return latex, plain, "wrong_" + label
        if style == "thousands" and item["wrong"].isdigit():
            v = f"{int(item['wrong']):,}"
            return v, v, "wrong_thousands"
        return item["wrong"], item["wrong_plain"], "wrong"
    if style in ("currency", "percent", "thousands"):
        label, latex, plain = rng.choice([a for a in item["alts"] if a[0].startswith(style)])
        return latex, plain, label
    if style == "equivalent_form":
        label, latex, plain = rng.choice(item["alts"])
        return latex, plain, label
    return item["gold"], item["plain"], "gold"


def math_commit(rng: random.Random, wrapper: str, latex: str, plain: str) -> tuple[str, str]:
    """(final-answer text, the exact answer string it contains)."""
    if wrapper == "boxed":
        tmpl = rng.choice(
            [
                "The final answer is $\\boxed{@V@}$.",
                "\\boxed{@V@}",
                "So the answer is $\\boxed{@V@}$.",
                "**Final Answer**\n\\[\n\\boxed{@V@}\n\\]",
            ]
        )
        return fill(tmpl, V=latex), latex
    if wrapper in ("hash", "json"):
        value = plain
        tmpl = "#### @V@" if wrapper == "hash" else rng.choice(['{"answer": "@V@"}', '```json\n{"answer": "@V@"}\n```'])
        return fill(tmpl, V=value), value
    use_latex = needs_math(latex) and "\\$" not in latex and rng.random() < 0.6
    value = latex if use_latex else plain
    shown = f"${value}$" if use_latex else value
    tmpl = {
        "prose": ["The final answer is @D@.", "So the answer is @D@.", "Therefore, the answer is @D@."],
        "answer_colon": ["Answer: @D@", "Final answer: @D@"],
        "bold": ["**Answer: @D@**", "The answer is **@D@**."],
        "chinese": ["所以答案是 @D@。", "答案是 @D@"],
    }[wrapper]
    return fill(rng.choice(tmpl), D=shown), value


def render_math(
    family: dict, ckpt: str, item: dict, style: str, right: bool, rng: random.Random, math_items: list[dict]
) -> tuple[str, str | None, dict]:
    rl = ckpt == "rl"
    main = family["main"][ckpt]["math"]
    think = rng.random() < family["think"][ckpt]
    extra: dict = {"think": think}
    steps = item["steps"] if right else item["wrong_steps"]
    opener = rng.choice(M_OPENERS)

    if style == "truncated":
        parts = [opener, item["wrong_steps"] if rng.random() < 0.5 else item["steps"]]
        parts += [rng.choice(M_RUMINATE) for _ in range(rng.randint(3, 6))]
        words = item["steps"].split()
        fragment = " ".join(words[: max(3, int(len(words) * rng.uniform(0.3, 0.6)))])
        return "<think>\n" + join(parts, True) + "\n\n" + fragment, None, {"think": True, "truncated": True}

    if style == "cannot_determine":
        body = join(
            [
                opener,
                "The problem statement seems to leave out a quantity I need, so the setup is ambiguous.",
                "Different readings give different results.",
            ],
            rl,
        )
        if rl and rng.random() < 0.6:
            commit = r"\boxed{\text{cannot be determined}}"
        else:
            commit = "I cannot determine a unique answer from the information given."
        return wrap_think(rng, body, "The answer is not determined by the data.", commit, think), None, extra

    if style in ("json", "chinese"):
        wrapper = style
    elif style in ("self_correction", "equivalent_form", "currency", "percent", "thousands", "off_by_one"):
        wrapper = weighted(rng, main)
    elif style == "runon":
        wrapper = rng.choice(["hash", "prose"])
    else:
        wrapper = style
    latex, plain, form = math_value(item, style, right, rng)
    commit, intended = math_commit(rng, wrapper, latex, plain)
    if intended == item["gold"]:
        form = "gold"
    elif form == "gold":
        form = "plain"  # the plain spelling of the gold, e.g. 3/4 for \frac{3}{4}
    extra.update(wrapper=wrapper, form=form)

    if style == "self_correction":
        first_commit, first = math_commit(rng, wrapper, item["wrong"], item["wrong_plain"])
        text = (
            join([opener, item["wrong_steps"]], rl)
            + "\n\n"
            + first_commit
            + "\n\n"
            + join(
                [
                    rng.choice(
                        [
                            "Wait, on reflection, that is wrong.",
                            "Hmm, wait. Let me redo this.",
                            "Actually, I made a mistake above.",
                        ]
                    ),
                    item["steps"],
                ],
                rl,
            )
            + "\n\n"
            + commit
        )
        return text, intended, extra | {"first_answer": first}

    if style == "runon":
        other = rng.choice([m for m in math_items if m["qid"] != item["qid"] and not m["kinds"]])
        cont = f"\n\nQuestion: {other['question']}\nAnswer: {other['steps']}\n#### {other['plain']}"
        return (
            join([opener, steps], False) + "\n" + commit + cont,
            intended,
            extra | {"continuation_answer": other["plain"]},
        )

    parts = [opener, steps]
    if rng.random() < 0.4:
        parts.append(rng.choice(M_CHECK))
    if think:
        summary = steps if rl else ""
        return wrap_think(rng, join(parts, True), summary, commit, True), intended, extra
    sep = "\n" if wrapper in ("hash",) else ("\n\n" if rl or wrapper == "boxed" else " ")
    return join(parts, rl) + sep + commit, intended, extra


# ---------------------------------------------------------------------------------------------
# Assembly, validation, stats
# ---------------------------------------------------------------------------------------------
def build_rows() -> list[dict]:
    mc_items = build_mc_items()
    math_items = build_math_items()
    benches = {"mmlu": mc_items, "math": math_items}
    rows = []
    for fam in FAMILIES:
        for bench, items in benches.items():
            qids = [it["qid"] for it in items]
            must_miss = [it["qid"] for it in items if "fencepost" in it.get("kinds", [])]
            k_base, k_rl = fam["targets"][bench]
            correct = choose_correct(fam["name"], bench, qids, k_base, k_rl, must_miss)
            for ckpt in CHECKPOINTS:
                styles = assign_styles(fam, ckpt, bench, items, correct[ckpt])
                for it in items:
                    qid = it["qid"]
                    right = qid in correct[ckpt] and styles[qid] not in NO_ANSWER_STYLES
                    rng = rng_for("row", fam["name"], ckpt, bench, qid)
                    if bench == "mmlu":
                        response, intended, extra = render_mc(fam, ckpt, it, styles[qid], right, rng, mc_items)
                    else:
                        response, intended, extra = render_math(fam, ckpt, it, styles[qid], right, rng, math_items)
                    meta = {"subject": it["subject"] if bench == "mmlu" else "math"}
                    if bench == "mmlu":
                        meta["not_question"] = it["not_q"]
                    meta.update(style=styles[qid], intended_answer=intended, correct=right, boxed="\\boxed" in response)
                    meta.update(extra)
                    row = {
                        "id": f"{fam['name']}:{ckpt}:{qid}",
                        "model": fam["name"],
                        "checkpoint": ckpt,
                        "benchmark": bench,
                        "prompt": PROMPT_ID,
                        "question": it["question"],
                    }
                    if bench == "mmlu":
                        row["choices"] = list(it["choices"])
                    row["gold"] = it["gold"]
                    row["response"] = response
                    row["meta"] = meta
                    rows.append(row)
    return rows


def validate(rows: list[dict]) -> None:
    math_by_q = {it["question"]: it for it in build_math_items()}
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for r in rows:
        m = r["meta"]
        assert r["gold"].strip(), r["id"]
        assert r["question"].strip() and r["response"].strip(), r["id"]
        assert r["checkpoint"] in CHECKPOINTS and r["benchmark"] in ("mmlu", "math"), r["id"]
        assert m["style"] in STYLES, (r["id"], m["style"])
        intended = m["intended_answer"]
        if m["style"] in NO_ANSWER_STYLES:
            assert intended is None and m["correct"] is False, r["id"]
        else:
            assert intended is not None, r["id"]
            shown = m["intended_text"] if m["style"] == "option_text" else intended
            assert shown in r["response"] or cap(shown) in r["response"], r["id"]
        if m.get("truncated"):
            assert "</think>" not in r["response"] and r["response"].startswith("<think>"), r["id"]
        if r["benchmark"] == "mmlu":
            letters = LETTERS[: len(r["choices"])]
            assert r["gold"] in letters and len(r["choices"]) == 4, r["id"]
            assert len(set(r["choices"])) == len(r["choices"]), r["id"]
            if intended is not None:
                assert intended in letters, r["id"]
                assert m["correct"] == (intended == r["gold"]), r["id"]
        else:
            assert "choices" not in r
            it = math_by_q[r["question"]]
            equivalent = {it["gold"], it["plain"]} | {a[1] for a in it["alts"]} | {a[2] for a in it["alts"]}
            if intended is not None:
                assert m["correct"] == (intended in equivalent), (r["id"], intended)
            if m["style"] == "off_by_one":
                assert not m["correct"] and abs(int(intended) - int(r["gold"])) == 1, r["id"]
    for r in rows:
        json.loads(json.dumps(r, ensure_ascii=False))


def serialise(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def stats(rows: list[dict]) -> dict:
    groups: dict = defaultdict(list)
    for r in rows:
        groups[(r["model"], r["checkpoint"], r["benchmark"])].append(r)
        groups[(r["model"], r["checkpoint"], "all")].append(r)
        groups[("all", r["checkpoint"], r["benchmark"])].append(r)
        groups[("all", r["checkpoint"], "all")].append(r)

    def summary(rs: list[dict]) -> dict:
        n = len(rs)
        return dict(
            n=n,
            accuracy=sum(r["meta"]["correct"] for r in rs) / n,
            boxed_share=sum(r["meta"]["boxed"] for r in rs) / n,
            boxed_and_correct=sum(r["meta"]["boxed"] and r["meta"]["correct"] for r in rs) / n,
            no_answer=sum(r["meta"]["intended_answer"] is None for r in rs) / n,
        )

    return {k: summary(v) for k, v in sorted(groups.items())}


def style_table(rows: list[dict]) -> dict:
    table: dict = defaultdict(Counter)
    for r in rows:
        table[(r["model"], r["checkpoint"])][r["meta"]["style"]] += 1
    return table


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


# A backslash at a line end joins the next line: a Markdown table row must stay one line in the output.
README_TEMPLATE = """# Quickstart sample data

`quickstart.jsonl` is a small, fully synthetic set of stored model responses for trying the
adjudication platform end to end (import -> run readers -> compare). Every question, option, gold
answer and response was written for this project by `scripts/build_sample.py`; nothing is copied from a
real benchmark or a real model. Regenerate it with

    python scripts/build_sample.py          # rewrite + print stats
    python scripts/build_sample.py --check  # fail if the committed files are stale

The generator is deterministic (seeded, stdlib only): two runs give byte-identical files
(sha256 of the current file: `@SHA@`).

## What is in it

@NROWS@ rows = 2 fictional model families (`orca-7b`, `lumen-8b`) x 2 checkpoints (`base`, `rl`) x
(@NMC@ multiple-choice questions, benchmark `mmlu`, + @NMATH@ short-answer maths problems, benchmark `math`).
Every (family, checkpoint) answers every question, all under prompt id `@PROMPT@`.

The data is built to show the *format share* effect: the base checkpoints mostly commit in prose
("The answer is (B).", "Answer: B", "**Answer:** Max Weber", "#### 72", "The final answer is 3/4."),
the RL checkpoints mostly box (`\\boxed{B}`, `\\boxed{\\text{B}}`, `\\boxed{(B)}`, `\\boxed{\\frac{3}{4}}`).
The RL checkpoints are only a few points more often truly correct, but a reader that only looks
inside `\\boxed{}` sees a large "gain", because the base checkpoints rarely box.

| model | checkpoint | rows | true accuracy | boxed share | boxed and correct* | no answer |
|---|---|---:|---:|---:|---:|---:|
@TABLE@

\\* "boxed and correct" is the share of rows that are truly correct *and* contain a `\\boxed{}`: a
rough upper bound for what a box-only reader can score. Real readers differ (equivalent forms,
self-corrections, `\\boxed{\\text{B}}` ...); that difference is what the platform measures.

Per benchmark (both families pooled):

| benchmark | checkpoint | rows | true accuracy | boxed share | boxed and correct |
|---|---|---:|---:|---:|---:|
@BENCH@

## Row format (canonical JSONL, one object per line)

| field | |
|---|---|
| `id` | unique, `<model>:<checkpoint>:<question id>`, e.g. `orca-7b:rl:mmlu-007` |
| `model`, `checkpoint` | family name; `base` or `rl` |
| `benchmark` | `mmlu` (4 options, letters A-D by position) or `math` (short answer) |
| `prompt` | prompt id (`@PROMPT@`) |
| `question` | question text (maths uses `$...$` LaTeX) |
| `choices` | MC only: option texts; letter = position |
| `gold` | MC: the letter; maths: LaTeX/plain string (`72`, `\\frac{3}{4}`, `2\\sqrt{3}`, `(1, 3)`, \
`[2, 3]`, `50`, `10001`) |
| `response` | the raw model output, verbatim (may contain `<think>...</think>`) |
| `meta` | ground truth written by the generator, see below |

`meta` fields:

- `intended_answer`: what the response really commits to, exactly as it appears in the
  response (MC: the letter, also for option-text answers; maths: the committed string, e.g.
  `0.75`, `\\$1,234`, `50\\%`, `10,000`). `null` when it commits to nothing (truncated, two options,
  "cannot determine").
- `correct`: the generator's verdict (maths: equivalent forms such as `0.75` for `\\frac{3}{4}`,
  `\\$1,234` for `1234` or `50\\%` for `50` are correct; `10001` for `10000` is not).
- `style`: how the answer is given (table below); `boxed`: the response contains `\\boxed`.
- `think`: the response has a `<think>` section; `truncated`: cut off inside it.
- `wrapper` (hard cases): the answer wrapper used; `form` (maths): `gold`, the equivalent-form
  label (`decimal`, `dfrac`, `slash`, `unsimplified`, `thousands`, `currency`, `percent`,
  `inequality`, `units`, ...), or `wrong*`.
- `first_answer` (self-corrections): the answer given first and then retracted;
  `continuation_answer` (run-ons): the answer of the invented follow-up question;
  `candidates` (two options); `intended_text` (option text); `variant` (MC boxes: `letter`,
  `text`, `paren`); `not_question` (MC "Which ... is NOT ..." questions); `subject`.

Styles:

| style | meaning |
|---|---|
| `boxed` | `\\boxed{B}`, `\\boxed{\\text{B}}`, `\\boxed{(B)}`, `$\\boxed{72}$`, `\\[\\boxed{...}\\]` |
| `prose` | "The answer is (B).", "Therefore, the correct answer is B.", "The final answer is $\\frac{3}{4}$." |
| `answer_colon` | "Answer: B", "Final answer: 72" |
| `hash` | GSM8K-style `#### 72` (maths) |
| `bold` | `**C**`, `**Answer: C**` |
| `option_text` | the option text instead of the letter ("**Answer:** Max Weber") |
| `json` | `{"answer": "C"}` (sometimes in a fenced block) |
| `chinese` | `答案是 C`, `所以答案是 72。` |
| `self_correction` | commits, then "Wait, on reflection ..." and commits again; the *last* answer counts |
| `truncated` | cut mid-thinking: `<think>` without `</think>` and no final answer |
| `two_options` | commits to two letters ("The answer is B or C", `\\boxed{B, C}`): no answer |
| `cannot_determine` | refuses ("I cannot determine ...", `\\boxed{\\text{Cannot determine}}`): no answer |
| `runon` | base model answers, then invents the next few-shot question and answers that too; \
the *first* answer counts |
| `equivalent_form` | maths answer in a different but equal form (`0.75`, `\\dfrac{3}{4}`, `3/4`, \
`\\sqrt{12}`, `x = 1, y = 3`) |
| `currency`, `percent`, `thousands` | `\\$1,234` / `$24,200`, `50\\%`, `86,400` |
| `off_by_one` | a large integer off by one (gold `10000`, answer `10001`): incorrect |

Style counts per model/checkpoint:

@STYLES@
"""


def render_readme(rows: list[dict], sha: str) -> str:
    st = stats(rows)
    lines = []
    for fam in [f["name"] for f in FAMILIES] + ["all"]:
        for ckpt in CHECKPOINTS:
            s = st[(fam, ckpt, "all")]
            lines.append(
                f"| {fam} | {ckpt} | {s['n']} | {pct(s['accuracy'])} | {pct(s['boxed_share'])} | "
                f"{pct(s['boxed_and_correct'])} | {pct(s['no_answer'])} |"
            )
    bench_lines = []
    for bench in ("mmlu", "math"):
        for ckpt in CHECKPOINTS:
            s = st[("all", ckpt, bench)]
            bench_lines.append(
                f"| {bench} | {ckpt} | {s['n']} | {pct(s['accuracy'])} | {pct(s['boxed_share'])} | "
                f"{pct(s['boxed_and_correct'])} |"
            )
    table = style_table(rows)
    keys = sorted(table)
    all_styles = sorted({s for c in table.values() for s in c})
    style_lines = ["| style | " + " | ".join(f"{m} {c}" for m, c in keys) + " |", "|---|" + "---:|" * len(keys)]
    for s in all_styles:
        style_lines.append(f"| `{s}` | " + " | ".join(str(table[k][s]) for k in keys) + " |")
    n_mc = len({r["question"] for r in rows if r["benchmark"] == "mmlu"})
    n_math = len({r["question"] for r in rows if r["benchmark"] == "math"})
    return fill(
        README_TEMPLATE,
        SHA=sha,
        NROWS=str(len(rows)),
        NMC=str(n_mc),
        NMATH=str(n_math),
        PROMPT=PROMPT_ID,
        TABLE="\n".join(lines),
        BENCH="\n".join(bench_lines),
        STYLES="\n".join(style_lines),
    )


def print_report(rows: list[dict]) -> None:
    st = stats(rows)
    print(f"rows: {len(rows)}")
    print("\nper model / checkpoint / benchmark: n, true acc, boxed share, boxed&correct")
    for (fam, ckpt, bench), s in st.items():
        print(
            f"  {fam:9s} {ckpt:4s} {bench:5s} n={s['n']:3d} acc={pct(s['accuracy']):>5s} "
            f"boxed={pct(s['boxed_share']):>5s} boxed&correct={pct(s['boxed_and_correct']):>5s} "
            f"no_answer={pct(s['no_answer']):>5s}"
        )
    print("\nstyles per model / checkpoint:")
    for key, counter in sorted(style_table(rows).items()):
        print(f"  {key[0]} {key[1]}: " + ", ".join(f"{k}={v}" for k, v in sorted(counter.items())))
    b, r = st[("all", "base", "all")], st[("all", "rl", "all")]
    print(
        f"\ntrue accuracy: base {pct(b['accuracy'])}  rl {pct(r['accuracy'])}  "
        f"(gain {pct(r['accuracy'] - b['accuracy'])} points)"
    )
    print(f"boxed share:   base {pct(b['boxed_share'])}  rl {pct(r['boxed_share'])}")
    print(
        f"boxed&correct: base {pct(b['boxed_and_correct'])}  rl {pct(r['boxed_and_correct'])}  "
        f"(box-only 'gain' ~ {pct(r['boxed_and_correct'] - b['boxed_and_correct'])} points)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="verify the files on disk match a fresh build")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    rows = build_rows()
    validate(rows)
    data = serialise(rows)
    sha = hashlib.sha256(data.encode("utf-8")).hexdigest()
    readme = render_readme(rows, sha)
    if args.check:
        ok = (
            OUT_JSONL.exists()
            and OUT_JSONL.read_text(encoding="utf-8") == data
            and OUT_README.exists()
            and OUT_README.read_text(encoding="utf-8") == readme
        )
        print("up to date" if ok else "STALE: rerun build_sample.py")
        return 0 if ok else 1
    OUT_JSONL.write_text(data, encoding="utf-8", newline="\n")
    OUT_README.write_text(readme, encoding="utf-8", newline="\n")
    if not args.quiet:
        print_report(rows)
        print(f"\nwrote {OUT_JSONL} ({len(data.encode('utf-8'))} bytes, sha256 {sha[:16]}) and {OUT_README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
