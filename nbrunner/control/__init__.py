"""The control layer: what runs against Redis to take a job from submission to a worker.

:mod:`.submit` validates a request, snapshots the notebook and records the job;
:mod:`.queues` hands jobs to rq; :mod:`.registration` knows the live workers and their
slots; :mod:`.grants` holds slots and tells each job its grant; :mod:`.scheduler` is the
allocator loop (read the state, ask the pure policy and placement in ``core``, write the
answer back); :mod:`.sweeps` advances sweeps; :mod:`.runtime` is the running job's handle
(``nbrunner.record``)::

    from nbrunner.control import submit
    record = submit.submit(store, settings, {"notebook": "train.ipynb", "max_gpus": 2})
"""
__all__ = ["grants", "queues", "registration", "runtime", "scheduler", "submit", "sweeps"]
