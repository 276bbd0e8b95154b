"""The documentation site builds with Sphinx, warnings as errors, and its generated reference
pages hold what the code declares (slow: runs sphinx-build)."""
import subprocess
import sys
import time

import pytest

from pages import DOCS

pytestmark = pytest.mark.slow


def test_the_site_builds_without_warnings(tmp_path):
    out = tmp_path / "html"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
                          capture_output=True, text=True, timeout=300)
    print(f"sphinx-build took {time.monotonic() - start:.1f} s")
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("index", "tutorials/first-job", "admin/jupyterhub", "reference/cli", "reference/rest",
                 "reference/python", "reference/configuration", "explanation/architecture"):
        assert (out / f"{page}.html").is_file(), page
    cli = (out / "reference" / "cli.html").read_text()
    assert "--report-mode" in cli and "sweep-show" in cli
    python_api = (out / "reference" / "python.html").read_text()
    assert "nbrunner.client.cluster.Cluster.sweeps" in python_api  # autodoc read the docstrings
    assert "NBRUNNER_SERVICE_URL" in (out / "reference" / "configuration.html").read_text()
    assert "/jobs/{id}/rerun" in (out / "reference" / "rest.html").read_text()
