"""The results side: what a user does with a ``pm.sample`` result (summaries, predictive, LOO, plots,
W2 diagnostics, label-invariant views, save/load), reading it through ``reader`` only. See
docs/architecture.md."""
