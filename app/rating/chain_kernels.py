"""Straight-line EP sweeps over TrueSkill's chain of truncation factors, one per chain length.

`inference.chain_sweeps` runs the schedule of seed 000 Fig. 1 as a loop over lists. A factor
visit is about forty float operations, and in CPython the loop's list reads and writes, index
arithmetic and branches cost a third as much again. Chains in games are short (an 8-player
free-for-all has 7 factors), so for up to MAX_LINKS factors `kernel(links)` writes every visit
of a sweep out once, with the chain's whole state in local variables, compiles that function
the first time a chain of that length is rated, and keeps it. Same schedule, same fixed point:
tests/rating/test_chain_kernels.py holds the two kernels to each other on random chains.

The algebra is chain_sweeps's, kept in moment form. Each variable x_k holds two cavities:

    a_k = prior_k × (message from factor k − 1)    what factor k sees of x_k
    b_k = prior_k × (message from factor k)        what factor k − 1 sees of x_k

Factor k's cavity on d_k = x_k − x_{k+1} is N(mean, var) = N(a_mean_k − b_mean_{k+1},
a_var_k + b_var_{k+1}); its truncation gives V and W (seed 000 Table 1), so its message to d_k
is N(mean + c·V/W, var·(1 − W)/W) with c = sqrt(var). Going forward, the message to x_{k+1} is
folded straight into x_{k+1}'s cavity: with q = var·(1 − W) and D = q + W·a_var_k,

    a_var_{k+1}  = D / (pi_{k+1}·D + W)
    a_mean_{k+1} = (tau_{k+1}·D + W·b_mean_{k+1} − c·V) / (pi_{k+1}·D + W)

(pi, tau: the prior's precision and precision·mean), and going backward the message to x_k
likewise, with D = q + W·b_var_{k+1} and + c·V. No division by W, so a factor that learns
nothing (W = 0) leaves the prior as it is. A sweep is forward over every factor, then back
over the inner ones; the last factor also refreshes the cavity of x_{k} on its left, since no
backward visit does.

The sweeps stop after a forward pass in which every factor's V and W moved by
dV² + dW² <= tolerance²/2 (so |dV| + |dW| <= tolerance, chain_sweeps's test) since its
forward update one sweep before. The forward pass visits every factor, so this is the same
whole-sweep test, read where it can first pass: the last backward pass, which could only
confirm it, is not run. On 3,000 random matches of 3-10 teams with ties, weights and priors
the results stay as close to the fixed point as chain_sweeps's (worst 1.5e-9).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

from app.rating import truncation
from app.rating.normal import CONTINUED_FRACTION_FROM, INV_SQRT_2PI, SQRT2

# Longer chains (tournaments) use inference.chain_sweeps: a kernel's size grows with its length.
MAX_LINKS = 24

# (prior variances, prior means, margins, ties, tolerance, max sweeps) in chain order ->
# each variable's message from the chain, as (precision, precision·mean).
Kernel = Callable[
    [list[float], list[float], list[float], list[bool], float, int], tuple[list[float], list[float]]
]

# V, W and 1 − W of truncation.win and truncation.draw. A draw window that straddles the
# mean, and is not narrow, is written out: truncation.draw's own expressions (erf on both
# edges, so no sign flip is needed) without the cost of a call.
_TRUNCATE = """\
mean = am{k} - bm{j}
var = av{k} + bv{j}
c = sqrt(var)
if tie{k}:
    t = mean / c
    e = eps{k} / c
    if narrow < e and -e < t < e:
        a = -e - t
        b = e - t
        pa = inv_sqrt_2pi * exp(-0.5 * a * a)
        pb = inv_sqrt_2pi * exp(-0.5 * b * b)
        z = 0.5 * (erf(b / sqrt2) - erf(a / sqrt2))
        v = (pa - pb) / z
        w = v * v + (b * pb - a * pa) / z
        rest = 1.0 - w
    else:
        v, w, rest = draw(t, e)
else:
    x = (mean - eps{k}) / c
    if x > far:
        v = two_phi0 * exp(-0.5 * x * x) / erfc(x * minus_inv_sqrt2)
        w = v * (v + x)
        rest = 1.0 - w
    else:
        v, w, rest = win(x, 0.0)
"""

# The message to x_{k+1}, folded into its cavity a_{k+1}.
_FORWARD = """\
d = var * rest + w * av{k}
den = 1.0 / (pi{j} * d + w)
av{j} = d * den
am{j} = (tau{j} * d + w * bm{j} - c * v) * den
"""

# The message to x_k, folded into its cavity b_k.
_BACKWARD = """\
d = var * rest + w * bv{j}
den = 1.0 / (pi{k} * d + w)
bv{k} = d * den
bm{k} = (tau{k} * d + w * am{k} + c * v) * den
"""

# Nothing in the sweeps reads x_0's b cavity (no factor lies left of x_0) or the last
# variable's a cavity, so the first and last factors keep what those need from their latest
# visit, and both are formed once, after the sweeps.
_KEEP_FIRST = """\
d_first = var * rest + w * bv{j}
cv_first = c * v
"""

_KEEP_LAST = """\
d_last = var * rest + w * av{k}
cv_last = c * v
"""

_SETTLED = """\
dv = v - v{k}
dw = w - w{k}
dv = dv * dv + dw * dw
if dv > moved:
    moved = dv
v{k} = v
w{k} = w
"""


def _names(stem: str, count: int) -> str:
    return ", ".join(f"{stem}{i}" for i in range(count))


def _source(links: int) -> str:
    """The kernel for a chain of `links` factors (links + 1 variables), as Python source."""
    size = links + 1
    head = [
        f"{_names('pv', size)}, = prior_var",
        f"{_names('pm', size)}, = prior_mean",
        f"{_names('eps', links)}, = margins",
        f"{_names('tie', links)}, = ties",
    ]
    tail = [f"return [{_names('to_pi', size)}], [{_names('to_tau', size)}]"]
    signature = "prior_var, prior_mean, margins, ties, tolerance, max_sweeps"
    return function_source(signature, head + sweep_lines(links) + tail, KERNEL_GLOBALS)


def sweep_lines(links: int) -> list[str]:
    """The body that takes each variable's prior pv{i}, pm{i}, each factor's eps{k} and
    tie{k}, and `tolerance` and `max_sweeps`, to each variable's message from the chain,
    to_pi{i} and to_tau{i} (precision and precision·mean). It also leaves pi{i} and tau{i},
    the priors' precision and precision·mean."""
    size = links + 1
    last = links - 1
    head = []
    for i in range(size):
        head += [f"pi{i} = 1.0 / pv{i}", f"tau{i} = pm{i} * pi{i}"]
        head += [f"av{i} = bv{i} = pv{i}", f"am{i} = bm{i} = pm{i}"]
    head += [f"v{k} = w{k} = 0.0" for k in range(links)]
    sweep = ["moved = 0.0"]
    for k in range(links):
        text = _TRUNCATE
        text += _KEEP_FIRST if k == 0 else ""
        text += _KEEP_LAST + (_BACKWARD if k > 0 else "") if k == last else _FORWARD
        sweep += (text + _SETTLED).format(k=k, j=k + 1).splitlines()
    sweep += ["if moved <= settled:", "    break"]
    for k in range(links - 2, 0, -1):
        sweep += (_TRUNCATE + _BACKWARD).format(k=k, j=k + 1).splitlines()
    closing = [
        "den = 1.0 / (pi0 * d_first + w0)",
        "bv0 = d_first * den",
        "bm0 = (tau0 * d_first + w0 * pm0 + cv_first) * den",
        f"den = 1.0 / (pi{links} * d_last + w{last})",
        f"av{links} = d_last * den",
        f"am{links} = (tau{links} * d_last + w{last} * pm{links} - cv_last) * den",
    ]
    # The messages: a cavity and a b cavity each hold the prior once.
    tail = [*closing, "to_pi0 = 1.0 / bv0 - pi0", "to_tau0 = bm0 / bv0 - tau0"]
    for i in range(1, links):
        tail += [
            f"to_pi{i} = 1.0 / av{i} + 1.0 / bv{i} - 2.0 * pi{i}",
            f"to_tau{i} = am{i} / av{i} + bm{i} / bv{i} - 2.0 * tau{i}",
        ]
    tail += [
        f"to_pi{links} = 1.0 / av{links} - pi{links}",
        f"to_tau{links} = am{links} / av{links} - tau{links}",
    ]
    return [
        *head,
        "settled = 0.5 * tolerance * tolerance",
        "for _ in range(max_sweeps):",
        *("    " + line for line in sweep),
        *tail,
    ]


def function_source(signature: str, body: list[str], bound: dict[str, Any]) -> str:
    """`def kernel(signature)` around `body`, with `bound`'s names as keyword-only default
    arguments: locals, bound once, not looked up on every call. compile_kernel supplies them."""
    defaults = ", ".join(f"{name}={name.upper()}" for name in bound)
    lines = [f"def kernel({signature}, *, {defaults}):", *("    " + line for line in body)]
    return "\n".join(lines) + "\n"


def compile_kernel(source: str, bound: dict[str, Any], label: str) -> Any:
    """The function `source` defines, its default arguments taken from `bound`."""
    namespace: dict[str, Any] = {name.upper(): value for name, value in bound.items()}
    exec(compile(source, label, "exec"), namespace)
    return namespace["kernel"]


KERNEL_GLOBALS = {
    "sqrt": math.sqrt,
    "exp": math.exp,
    "erf": math.erf,
    "erfc": math.erfc,
    "draw": truncation.draw,
    "win": truncation.win,
    "narrow": truncation.NARROW_WINDOW,
    "inv_sqrt_2pi": INV_SQRT_2PI,
    "sqrt2": SQRT2,
    # Beyond this the win's V and W come from truncation.win's continued fraction.
    "far": -CONTINUED_FRACTION_FROM * SQRT2,
    "two_phi0": 2.0 * INV_SQRT_2PI,
    "minus_inv_sqrt2": -1.0 / SQRT2,
}


@cache
def kernel(links: int) -> Kernel:
    """The straight-line sweeps for a chain of 1 <= links <= MAX_LINKS factors."""
    if not 1 <= links <= MAX_LINKS:
        raise ValueError(f"chain kernels cover 1 to {MAX_LINKS} factors, got {links}")
    built: Kernel = compile_kernel(_source(links), KERNEL_GLOBALS, f"<chain kernel, {links} factors>")
    return built
