"""The lowest layer: records, configuration, errors, Redis key names, the job store and
the pure decisions (allocation policy, placement, sweep specs, trials, ASHA, leaderboard).

Nothing here starts a process or imports another layer; everything above builds on it::

    from nbrunner.core.allocate import allocate
    allocate(8, [{"id": "a", "min_gpus": 1, "max_gpus": 8, "priority": 5000, "submitted_at": 0}])
    from nbrunner.core.placement import pick
    pick({("h1", 0), ("h1", 1), ("h2", 0)}, 2, prefer=[])   # [("h1", 0), ("h1", 1)]
    from nbrunner.core.accounts import parse_accounts       # an accounts file, checked
    from nbrunner.core.shares import account_shares          # allocation down it, per-account rows
"""
__all__ = ["accounts", "allocate", "config", "errors", "keys", "models", "placement", "shares", "store", "sweeps"]
