"""Couplings of partition-valued Markov chains."""
