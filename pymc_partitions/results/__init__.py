"""The results side: what a user does with a ``pm.sample`` result (see docs/architecture.md)."""
