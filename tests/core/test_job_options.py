"""The job options are declared once (nbrunner.core.models.JOB_OPTIONS, typed by JobRequest):
sweeps, schedules and pipeline steps take theirs from it, and every model or signature that
names one gives it JobRequest's type and default; the priority bounds are declared once too."""
from __future__ import annotations

import inspect

from msgspec import inspect as mi

from nbrunner.core import demands
from nbrunner.core.models import JOB_OPTIONS, PRIORITY_DEFAULT, PRIORITY_MAX, PRIORITY_MIN, JobRequest
from nbrunner.core.pipelines import spec as pipeline_spec
from nbrunner.core import schedules

REQUEST = {f.name: f for f in mi.type_info(JobRequest).fields}


def test_every_job_option_is_a_request_field():
    assert set(JOB_OPTIONS) <= set(REQUEST)


def test_sweeps_and_schedules_take_the_one_declaration():
    from nbrunner.control import sweeps

    assert sweeps.JOB_OPTIONS is JOB_OPTIONS
    assert schedules.JOB_OPTIONS == tuple(k for k in JOB_OPTIONS if k != "kernel")  # runs use the notebook's kernel
    assert set(schedules.JOB_OPTIONS) <= set(schedules.EDITABLE)
    assert pipeline_spec.SWEEP_OPTIONS == tuple(k for k in JOB_OPTIONS if k != "name")  # the step names its job
    assert set(pipeline_spec.STEP_OPTIONS) - set(JOB_OPTIONS) == {"retries", "inputs"}
    assert set(pipeline_spec.STEP_OPTIONS) <= set(REQUEST)


def test_a_schedule_request_types_its_job_options_as_a_job_request_does():
    for name in schedules.JOB_OPTIONS:
        field = schedules.ScheduleSpec.model_fields[name]
        assert mi.type_info(field.annotation) == REQUEST[name].type, name
        assert field.default == REQUEST[name].default, name


def test_the_python_and_cli_submit_take_the_requests_defaults():
    from nbrunner.client.cli import job_commands
    from nbrunner.client.cluster import Cluster

    params = inspect.signature(Cluster.submit).parameters
    cli = inspect.signature(job_commands.submit).parameters
    for name in JOB_OPTIONS:
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params[name].default == REQUEST[name].default, name
        assert cli[name].default.default == REQUEST[name].default, name  # a typer.Option's default


def test_priority_bounds_are_declared_once():
    assert (demands.MIN_PRIORITY, demands.MAX_PRIORITY) == (PRIORITY_MIN, PRIORITY_MAX)
    assert demands.MIN_PRIORITY is PRIORITY_MIN and demands.MAX_PRIORITY is PRIORITY_MAX
    assert REQUEST["priority"].default == PRIORITY_DEFAULT
    assert "priority" in JOB_OPTIONS
