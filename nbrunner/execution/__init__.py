"""The execution layer: the processes that run jobs.

:mod:`.worker` is the rq worker (heartbeat, slots, settling a job after its work horse);
:mod:`.execute` runs one notebook with papermill; :mod:`.learner_agent` starts learners for
drivers on other hosts; :mod:`.redis_server` is the embedded Redis and :mod:`.supervisor`
starts and watches Redis, the scheduler, workers and JupyterLab (``nbrunner up``)::

    from nbrunner.execution.worker import run_worker
    run_worker(settings, gpus=2)        # what `nbrunner worker --gpus 2` does
"""
__all__ = ["execute", "learner_agent", "redis_server", "supervisor", "worker"]
