"""How much work a draw should do, from the autocorrelation of the chain during tuning.

A draw of ``pm.sample`` costs a fixed overhead (PyMC's loop, the other steps, storing the draw)
plus the sampler's work. When one sweep moves the label-invariant quantities (number of
clusters, largest share, log joint) little, the draws are strongly autocorrelated and most of the
time goes to overhead and to storing near-copies; doing about one integrated autocorrelation
time of sweeps per draw makes the draws nearly independent at the same cost per effective
sample of the sweeps themselves. The number is chosen once, at the end of tuning, from the
tuning draws (then frozen: the kept draws come from one fixed, exact kernel).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["autocorrelation_time", "sweeps_for"]


def autocorrelation_time(x) -> float:
    """Integrated autocorrelation time of a scalar series (>= 1): 1 + 2 sum of autocorrelations
    up to Sokal's adaptive window (the first lag M with M >= 5 tau(M)); 1.0 for a constant or
    too short series. FFT, O(len log len).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> round(autocorrelation_time(rng.normal(size=4000)), 1)
    1.0
    >>> x = np.zeros(4000)
    >>> for t in range(1, 4000):
    ...     x[t] = 0.9 * x[t - 1] + rng.normal()
    >>> 14 < autocorrelation_time(x) < 24  # (1 + 0.9) / (1 - 0.9) = 19
    True
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    m = x.shape[0]
    if m < 4 or not np.all(np.isfinite(x)):
        return 1.0
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * m)
    acov = np.fft.irfft(f * np.conj(f))[:m]
    if acov[0] <= 1e-12 * m * max(1.0, float(np.abs(x).max()) ** 2):
        return 1.0
    taus = 2.0 * np.cumsum(acov / acov[0]) - 1.0
    ok = np.flatnonzero(np.arange(m) >= 5.0 * taus)
    tau = float(taus[ok[0]] if len(ok) else taus[-1])
    return max(1.0, tau)


def sweeps_for(traces, sweeps_per_draw: int, cap: int) -> int:
    """Sweeps per draw that make the draws about one autocorrelation time apart: the largest
    integrated autocorrelation time (in draws) of ``traces`` (series recorded at
    ``sweeps_per_draw`` sweeps per draw; their second half is used, the first being burn-in), in
    sweeps, rounded, within [1, cap].

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> ar = np.zeros(20000)
    >>> for t in range(1, 20000):
    ...     ar[t] = 0.8 * ar[t - 1] + rng.normal()
    >>> 7 <= sweeps_for([ar, rng.normal(size=20000)], 1, cap=100) <= 11  # tau = (1 + 0.8) / (1 - 0.8) = 9
    True
    >>> sweeps_for([ar[::3]], 3, cap=100) >= 7, sweeps_for([ar], 1, cap=4)  # thinned by 3; capped
    (True, 4)
    >>> sweeps_for([rng.normal(size=2000)], 1, cap=100)
    1
    """
    taus = [autocorrelation_time(np.asarray(t, np.float64)[len(t) // 2:]) for t in traces]
    tau = max(taus, default=1.0) * sweeps_per_draw
    return int(min(max(1, round(tau)), max(1, cap)))
