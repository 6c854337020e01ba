"""The model side: what a user puts into a ``pm.Model`` and ``pm.sample`` (distributions, model terms,
step methods, ARM's population step, sample_unbiased), the wrappers of PyMC internals (``guards``) and
the PyMC 5/6 differences (``compat``). See docs/architecture.md."""
