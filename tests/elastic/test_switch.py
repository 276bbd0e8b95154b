"""Two learner processes in one generation: they form its process group, agree through the
control all-reduce on the newest plan rank 0 saw and on the step's global loss, wrap the
model in DDP, and dissolve the group; twice, as consecutive generations do."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
import torch.distributed as dist

pytestmark = pytest.mark.slow

RANK = r"""
import json, sys
from datetime import timedelta
import torch, torch.distributed as dist
from nbrunner.elastic.group import GenerationGroup
from nbrunner.elastic.protocol import Plan
from nbrunner.elastic.switch import SwitchAgreement

port, rank = int(sys.argv[1]), int(sys.argv[2])
store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=60))
group, agreement = GenerationGroup(print), SwitchAgreement()
out = []
for g in (1, 2):
    group.form(Plan(gen=g, members=["L1", "L2"], source="L1", mode="live"), rank, store, torch.device("cpu"), 60)
    agreement.launch(10 * g if rank == 0 else 0, torch.tensor(1.0 + rank), 5, 100.0 + rank, 2, rank)
    pending = agreement.pending
    agreed = agreement.drain()
    agreement.launch(10 * g + 1 if rank == 0 else 0, torch.tensor(4.0), 6, 200.0, 2, rank)
    dist.barrier()  # gloo runs collectives in order: the control all-reduce has completed
    settled, lost = agreement.settle()
    net = group.wrap(torch.nn.Linear(2, 1), torch.device("cpu"))
    net(torch.ones(3, 2)).sum().backward()
    del net
    group.dissolve()
    agreement.release()
    out.append({"pending": pending, "agreed": list(agreed), "settled": list(settled), "lost": lost,
                "after": [agreement.pending, agreement.drain(), dist.is_initialized(), group.net]})
print(json.dumps(out), flush=True)
"""


def test_two_learners_agree_on_the_newest_plan_and_the_global_loss():
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=60))
    procs = [subprocess.Popen([sys.executable, "-c", RANK, str(store.port), str(r)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    for rank, gens in enumerate(results):
        for g, r in zip((1, 2), gens):
            assert r["pending"] is True and r["lost"] is False
            # rank 0's plan and the mean of the learners' losses, on both learners
            assert r["agreed"] == [10 * g, 1.5, 5, 100.0 + rank, 2, rank, []]  # no extra values summed
            assert r["settled"] == [10 * g + 1, 4.0, 6, 200.0, 2, rank, []]
            assert r["after"] == [False, None, False, None]
