"""Part 9's page: part 9's steps and capacity (CUDA graphs for decode-only forwards)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..stats import MISSING, Value
from ..text import pct
from . import chapter
from .data import collect, newest, per_rows


def serving_saving(d: Path) -> tuple[float, float] | None:
    """Medians over the pairs: the fused mixed step's saving on the chunked one's (p50s), and the
    share of the chunked engine's run its mixed steps filled; None without pairs."""
    c = newest("capacity", d, "part9")
    runs = chapter.pair_runs(c) if "n_mixed_steps" in c else c.iloc[:0]
    if not len(runs):
        return None
    w = runs.pivot_table(index="round", columns="engine", values=["mixed_step_s_p50", "n_mixed_steps", "span_s"])
    return (float((1 - w["mixed_step_s_p50"]["fused"] / w["mixed_step_s_p50"]["chunked"]).median()),
            float((w["n_mixed_steps"]["chunked"] * w["mixed_step_s_p50"]["chunked"] / w["span_s"]["chunked"]).median()))


@per_rows
def readings(d: Path) -> tuple[pd.DataFrame, dict[str, Value]]:
    """The page's conclusions, each chosen from the figures it rests on."""
    s8, s9 = chapter.steps("part8", d=d)[1], chapter.steps("part9", d=d)[1]
    gain = chapter.capacity("part9", d=d)[1]["p09_fusion_gain"]
    (fused, fp), (two, _) = (chapter.change(s9[f"p09_{k}"], s8[f"p08_{k}"]) for k in ("mixed_wall", "mixed_chunked_wall"))
    now, before = s9["p09_mixed_saving"].value, s8["p08_mixed_saving"].value  # % shorter than the chunked step
    # the fused step's change on the chunked one's in each part, over their repeats' ranges (negative: it leads)
    ln, lb = (chapter.change(s[f"{p}_mixed_wall"], s[f"{p}_mixed_chunked_wall"])[1] for p, s in (("p09", s9), ("p08", s8)))
    lead = None if None in (ln.value, lb.value) else "not resolved against" if ln.lo <= lb.hi and lb.lo <= ln.hi else \
        "larger than" if ln.value < lb.value else "smaller than"
    if MISSING in (fused, two) or lead is None:
        mixed = "These rows hold no mixed steps with their ranges in parts 8 and 9."
    else:
        mixed = (f"Against part 8's census mixed steps (their repeats' ranges), the fused engine's is {fused.text} and the "
                 f"chunked engine's {two.text}; the fused step's lead over the chunked one is {lead} part 8's"
                 + (", not smaller as the ballpark expected." if lead == "larger than" else
                    ", as the ballpark expected." if lead == "smaller than" else ".")
                 + (" These rows do not say why the eager fused mixed step shortened." if fp.resolved and fp.value < 0 else ""))
    if now is None or gain.value is None:
        cap = "These rows hold no mixed steps and paired capacity runs to set side by side."
    elif now > 0 and not gain.resolved:
        cap = ("In the census the fused mixed step is still the shorter" + ("" if ln.resolved else
               " by its median (the repeats' ranges overlap)") + ", yet in capacity neither engine is resolved ahead.")
        if (served := serving_saving(d)) is not None:
            expect = 100 * (1 / (1 - served[0] * served[1]) - 1)
            cap += (f" Serving, the fused engine's mixed step ran {pct(abs(100 * served[0]))} "
                    f"{'shorter' if served[0] >= 0 else 'longer'} than the chunked engine's (medians over the pairs), "
                    f"whose mixed steps filled {pct(100 * served[1])} of its run: capacity then stands to "
                    f"{'gain' if expect >= 0 else 'lose'} about {pct(abs(expect))}, " +
                    ("inside the pairs' interval." if gain.lo <= expect <= gain.hi else "outside the pairs' interval."))
    elif now > 0 and gain.lo > 0:
        cap = "The fused mixed step is still the shorter, and in capacity the fused engine serves more."
    else:
        cap = ("The fused mixed step is " + ("the shorter" if now > 0 else "not the shorter") + ", and in capacity "
               + ("the fused engine serves more." if gain.resolved and gain.lo > 0 else
                  "the chunked engine serves more." if gain.resolved else "neither engine is resolved ahead."))
    return pd.DataFrame(), {"p09_mixed_reading": Value(now, mixed), "p09_capacity_reading": Value(now, cap)}


def figures(d: str | Path | None = None):
    return collect(steps=chapter.steps("part9", d=d), capacity=chapter.capacity("part9", d=d), readings=readings(d=d))
