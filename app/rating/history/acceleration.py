"""Anderson acceleration of a history's sweeps: the slow global mode, solved for.

A sweep (the package's iteration) is a contraction x → G(x) on the messages. On a long
history its slowest mode contracts at a rate close to 1 (on bench/history.py's 10k history,
about 0.991 a sweep: the common level of skills that only priors pin down), so plain sweeps
make small steps far from the answer. Anderson acceleration (type II, memory m) takes the
combination of the last m+1 sweeps' outputs whose residuals G(x) − x cancel best, in the
least-squares sense, as the next iterate:

    x⁺ = G(x_k) − ΔG·γ,  γ = argmin ‖f_k − ΔF·γ‖,  f = G(x) − x,

with ΔF, ΔG the differences of successive residuals and outputs. The state is the means'
part of the messages only (precision·mean of every game's message to a skill, and of every
forward message): precisions settle within a few sweeps, and leaving them to the sweeps
keeps every posterior and every cavity proper whatever the extrapolation does. Backward
messages are not state: the backward pass sets each one from the next skill before any game
reads it, so a sweep's output depends on the games' and forward messages only.

Safeguard: when a residual grows to more than twice the last one, the memory is dropped
and the plain sweep's output kept.

Memory: the differences and the last residual are kept in float32 (they shrink with the
steps, so their rounding is relative to a step, not to a skill), the last output in float64:
2m·4 + 12 bytes per state element (m = 3: 36; a state element per game entry and one per
skill), and a sweep's input, output and extrapolation (8 bytes each) while it is taken.
Histories whose state exceeds LARGE elements keep m = 1 (20 + 24 bytes an element), so that
a 5M-game history's accelerator stays within ~0.9 GB.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from app.rating.history.structure import Array, Flat

Single = npt.NDArray[np.float32]

MEMORY = 3
LARGE = 4_000_000
# Tikhonov regularisation of the small least-squares system, relative to its diagonal.
RIDGE = 1e-12
# A residual this many times the last one resets the memory.
GROWTH = 2.0


def size(flat: Flat) -> int:
    return len(flat.own_tau) + len(flat.fwd_tau)


def read(flat: Flat) -> Array:
    return np.concatenate((flat.own_tau, flat.fwd_tau))


def write(flat: Flat, x: Array) -> None:
    entries = len(flat.own_tau)
    flat.own_tau[:] = x[:entries]
    flat.fwd_tau[:] = x[entries:]
    # A skill's games' message is the sum of its entries' (messages.py).
    flat.lik_tau[:] = np.bincount(flat.entry_skill, flat.own_tau, flat.skills)


class Anderson:
    """The memory of one convergence run. `step(x, g)` takes a sweep's input and output and
    returns the next iterate (g itself until two sweeps are known, or after a reset)."""

    def __init__(self, size: int, memory: int = MEMORY) -> None:
        self.memory = memory if size <= LARGE else 1
        self.d_f: list[Single] = []
        self.d_g: list[Single] = []
        self.last_f: Single | None = None
        self.last_g: Array | None = None
        self.last_norm = np.inf
        self.engaged = False  # set by the caller once the sweeps contract linearly

    def step(self, x: Array, g: Array) -> Array:
        """x is overwritten (it becomes the residual)."""
        np.subtract(g, x, out=x)
        f = x
        norm = float(np.sqrt(np.dot(f, f)))
        if self.last_f is None or self.last_g is None or norm > GROWTH * self.last_norm:
            self.d_f.clear()
            self.d_g.clear()
        else:
            self.d_f.append(np.subtract(f, self.last_f, dtype=np.float32))
            self.d_g.append((g - self.last_g).astype(np.float32))
            if len(self.d_f) > self.memory:
                self.d_f.pop(0)
                self.d_g.pop(0)
        self.last_f, self.last_g, self.last_norm = f.astype(np.float32), g, norm
        if not self.d_f:
            return g
        # np.dot, not @: on 1-D arrays matmul is hundreds of times slower here (threads).
        gram = np.array([[float(np.dot(a, b)) for b in self.d_f] for a in self.d_f], dtype=np.float64)
        rhs = np.array([float(np.dot(a.astype(np.float64), f)) for a in self.d_f])
        gram[np.diag_indices_from(gram)] += RIDGE * max(float(np.trace(gram)), 1e-300)
        try:
            gamma = np.linalg.solve(gram, rhs)
        except np.linalg.LinAlgError:
            return g
        out = g.copy()
        for coefficient, column in zip(gamma.tolist(), self.d_g, strict=True):
            out -= coefficient * column
        return out
