"""JupyterHub with nbrunner as a hub service, to try it (docs/admin/jupyterhub-reference.md); for a
server with Unix accounts follow the checklist in docs/admin/jupyterhub.md instead.

Users reach the cluster only through `nbrunner service`, which alone holds the Redis URL and
password: the hub starts it with the cluster's variables, and gives every user the scope to
call it with their own identity.  Start the hub where the cluster's variables are set:

    NBRUNNER_REDIS_URL=redis://:PASSWORD@redis-host:6379/0 NBRUNNER_WORKSPACE=/srv/nbrunner \
        jupyterhub -f jupyterhub_config.py

The first part is what nbrunner needs; the second is a small hub to try it (shared-password
login: HUB_USER_PASSWORD is every user's password, HUB_ADMIN_PASSWORD, at least 32 characters, the
password of the admin user `admin`; servers as local processes of the hub's own user): replace it
with your site's authenticator and spawner.
"""
import os

c = get_config()  # noqa: F821 (defined by JupyterHub's config loader)

# ---- nbrunner ---------------------------------------------------------------------------------
NBRUNNER_PORT = 10101
NBRUNNER_ADMIN_GROUP = "nbrunner-admins"  # its members see and change every user's jobs, as hub admins do
CLUSTER_VARIABLES = ("NBRUNNER_REDIS_URL", "NBRUNNER_WORKSPACE", "NBRUNNER_STORAGE")

c.JupyterHub.services = [{
    "name": "nbrunner",
    "url": f"http://127.0.0.1:{NBRUNNER_PORT}",
    "command": ["nbrunner", "service", "--port", str(NBRUNNER_PORT), "--admin-group", NBRUNNER_ADMIN_GROUP],
    # the cluster's Redis URL and password go to the service only, never to a user's server
    "environment": {name: os.environ[name] for name in CLUSTER_VARIABLES if name in os.environ},
    "oauth_no_confirm": True,  # a browser that logs in to the service is not asked to confirm
}]
# every user may call the service (with their own identity: the service sees whose token it is)
c.JupyterHub.load_roles = [
    {"name": "user", "scopes": ["self", "access:services!service=nbrunner"]},
]
# the admin group exists from the start; add members on the hub's admin page or its REST API
c.JupyterHub.load_groups = {NBRUNNER_ADMIN_GROUP: {"users": []}}
# users' servers: their nbrunner extension (and the CLI and Python API inside them) forward to the
# service with the user's own token, which needs the service's scope; no Redis URL reaches them
c.Spawner.environment = {"NBRUNNER_SERVICE_URL": f"http://127.0.0.1:{NBRUNNER_PORT}/services/nbrunner/"}
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", "access:services!service=nbrunner"]

# ---- the rest of the hub: replace with your site's ---------------------------------------------
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ.get("HUB_USER_PASSWORD") or None
c.SharedPasswordAuthenticator.admin_password = os.environ.get("HUB_ADMIN_PASSWORD") or None
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {"admin"}
c.JupyterHub.spawner_class = "simple"  # servers as local processes of the hub's user, homes in /tmp
