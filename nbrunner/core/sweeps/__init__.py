"""Sweeps without I/O: the spec (:mod:`.spec`), its trials (:mod:`.trials`), early
stopping (:mod:`.asha`) and the leaderboard (:mod:`.leaderboard`)::

    from nbrunner.core.sweeps.spec import parse_spec
    from nbrunner.core.sweeps.trials import generate_trials
    generate_trials(parse_spec({"parameters": {"lr": [0.1, 0.01]}, "objective": {"metric": "acc", "mode": "max"}}))
"""
__all__ = ["asha", "leaderboard", "spec", "trials"]
