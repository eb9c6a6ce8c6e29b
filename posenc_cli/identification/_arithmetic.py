"""Which arithmetic made a matched table: posenc's exact one (every value correctly rounded), or the float32
operation sequence of the framework the kind follows (``--arithmetic framework``; RoPE also ``ggml``).

A table matched by its exact hypothesis "within float32 rounding" was made by some float32 pipeline. The kind's
framework tables of the same parameters are then made and compared with it too, and one is named in the regenerate
command when the stored table is **nearly** that table:

- at least :data:`NEARLY_SHARE` (70 %) of its entries are bit-identical to it, at least as many as to the exact
  table (as many: the framework's table is the exact one, MAE's float64 sincos rounded once, and a float32
  pipeline made the stored one), and
- every entry is within :data:`NEARLY_ULPS` (4) units in the last place of the framework table's entry.

What is left is the platform's own float32 ``exp``/``pow``/``cos`` (within about an ulp of correct rounding: torch's
SLEEF, glibc's ``sinf``), which posenc's framework tables round correctly; a frequency that torch's ``pow`` misrounds
drifts by a few ulps over a few dozen rows (Qwen2.5's theta 1e6). Among several nearly-identical tables, the one
with the most bit-identical entries is named. A table bit-identical to the exact one, or rounded once from float64,
is exact: no framework table is tried.

The framework tables tried (:func:`variants`): the hypothesis with each framework arithmetic of its kind; for a
sinusoid, with each equivalent preset too (ddpm, whisper and tensor2tensor share one exact table, not one framework
table: the framework arithmetic tells them apart); for ``ggml``, also with the theta read rounded (ggml's running
product ``theta *= theta_scale`` bends the frequencies, so its caches read as theta 9999.97 for 10000).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ._compare import Comparison
from ._hypothesis import Hypothesis
from ._readoff import nice_numbers

__all__ = ["MADE_COST", "NEARLY_SHARE", "NEARLY_ULPS", "arithmetics", "closeness", "nearly", "variants"]

#: The least share of bit-identical entries of a table nearly the framework's (the issue's bar for RoPE goldens).
NEARLY_SHARE = 0.7
#: The most units in the last place (of the framework table's entry) any entry of such a table may be off.
NEARLY_ULPS = 4.0
#: Entries of work per entry made, by arithmetic: framework RoPE emulates float32 operations one by one (about 2.5
#: times the exact cost), and so do the others.
MADE_COST = 3


def arithmetics(command: str) -> tuple[str, ...]:
    """The arithmetics other than ``exact`` that ``command``'s kind makes (none for a kind without the option)."""
    from ..kinds import KINDS

    for param in KINDS[command].inputs:
        if param.name == "arithmetic":
            return tuple(c for c in param.type.choices if c != "exact")  # type: ignore[attr-defined]
    return ()


def variants(hypothesis: Hypothesis) -> Iterator[Hypothesis]:
    """The hypothesis with each non-exact arithmetic (and, per :mod:`this module <._arithmetic>`, each equivalent
    preset, and ggml's rounded theta), simplest first."""
    presets = [hypothesis.preset, *hypothesis.equivalent] if hypothesis.preset else [None]
    for arithmetic in arithmetics(hypothesis.command):
        for preset in presets:
            values = {**hypothesis.values, "arithmetic": arithmetic}
            if preset is not None:
                values["preset"] = preset
            found = dataclasses.replace(hypothesis, values=values, equivalent=())
            if arithmetic == "ggml" and "theta" in values:
                theta = float(values["theta"])
                for rounded in nice_numbers(theta, 1e-5)[:1]:
                    if rounded != theta:
                        plain = {k: v for k, v in values.items() if k != "theta" or rounded != 10000.0}
                        yield dataclasses.replace(
                            found, values={**plain, **({"theta": rounded} if rounded != 10000.0 else {})}
                        )
            yield found


def nearly(comparison: Comparison, exact: Comparison) -> bool:
    """Whether ``comparison`` (the stored table against a framework table) says the stored table is nearly that
    table, at least as close as to the exact table (``exact``)."""
    if comparison.identical == 1.0:
        return True
    return (
        comparison.identical >= NEARLY_SHARE
        and comparison.identical >= exact.identical
        and comparison.max_ulp_error <= NEARLY_ULPS
    )


def closeness(comparison: Comparison) -> dict[str, float]:
    """How close the stored table is to one arithmetic's table (the JSON form)."""
    return {
        "bit_identical_share": round(comparison.identical, 6),
        "max_abs_error": comparison.max_abs_error,
        "max_ulp_error": comparison.max_ulp_error,
    }


def phrase(name: str, comparison: Comparison) -> str:
    """``framework: bit-identical on 96.7 %, within 1 ulp``, ``exact: max 3.1e-04 off``."""
    if comparison.identical == 1.0:
        return f"{name}: bit-identical"
    share = f"bit-identical on {100 * comparison.identical:.1f} %"
    if comparison.max_ulp_error <= NEARLY_ULPS:
        return f"{name}: {share}, within {comparison.max_ulp_error:.0f} ulp"
    return f"{name}: {share}, max {comparison.max_abs_error:.2g} off"
