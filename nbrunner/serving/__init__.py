"""The serving layer: trained models by name and version, and the HTTP scoring server.

    from nbrunner.serving.registry import register_model
    from nbrunner.serving.serve import make_server
    register_model(settings, job_id, "digits")       # `nbrunner model register JOB digits`
    make_server("digits:1", port=8000).serve_forever()   # `nbrunner serve digits:1 --port 8000`
"""
__all__ = ["registry", "serve"]
