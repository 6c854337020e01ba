"""PyMC-facing adapter: distributions, step methods, result groups."""
