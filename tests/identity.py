"""A Jupyter IdentityProvider for multi-user tests: ``Authorization: token user:<name>`` is user <name>.

It stands where JupyterHub's identity provider stands in a real multi-user deployment: the
extension only reads ``handler.current_user``.
"""
from jupyter_server.auth.identity import IdentityProvider, User


class HeaderUsers(IdentityProvider):
    def get_user(self, handler):
        auth = handler.request.headers.get("Authorization", "")
        if auth.startswith("token user:"):
            name = auth.split(":", 1)[1].strip()
            handler._token_authenticated = True  # a header token, not a cookie: no XSRF check
            return User(username=name, name=name)
        return None

    @property
    def auth_enabled(self):
        return True
