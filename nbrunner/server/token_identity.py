"""The identity of a request that carries the server's token, made once per server.

Jupyter's stock identity providers, on every request authenticated by the token in its
``Authorization`` header and sent without a login cookie (every API client's request), make up a
new random anonymous user and sign a login cookie for it: the largest part of such a request's CPU
time before the handler runs.  When nbrunner does not tell users apart (not ``multi_user``: every
caller is the server's OS user), that user is never looked at, so :class:`TokenIdentity` gives
these requests one user made the first time, with no cookie, after the same token check; every
other request (a cookie, a ``?token=`` argument, no or another token, a custom provider) goes to
the server's provider as before.  The request stays marked as token-authenticated, so Jupyter's
origin and XSRF checks treat it as before.
"""
from __future__ import annotations

import hmac
from typing import Any

from jupyter_server.auth.identity import IdentityProvider, PasswordIdentityProvider, User

# The providers whose token check this one repeats (their get_user_token: the header's token
# equals the server's); a subclass may authenticate otherwise, so it is always asked.
_STOCK = (IdentityProvider, PasswordIdentityProvider)


class TokenIdentity:
    """The server's identity provider ``provider``, except for the requests described above."""

    def __init__(self, provider: IdentityProvider):
        self._provider = provider
        self._user: User | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def get_user(self, handler: Any) -> Any:
        """The token's user for a cookieless request with the server's token in its header; else
        what the server's provider says."""
        user = self._token_user(handler)
        return user if user is not None else self._provider.get_user(handler)

    def _token_user(self, handler: Any) -> User | None:
        provider = self._provider
        token = provider.token
        if not token or type(provider) not in _STOCK:
            return None
        request = handler.request
        if "Cookie" in request.headers or "token" in request.arguments:
            return None
        match = provider.auth_header_pat.match(request.headers.get("Authorization", ""))
        if match is None or not hmac.compare_digest(match.group(2).encode(), token.encode()):
            return None
        if self._user is None:
            self._user = provider.generate_anonymous_user(handler)
        handler._token_authenticated = True  # as the provider marks it: origin and XSRF checks follow
        return self._user


def token_identity(settings: dict[str, Any]) -> TokenIdentity:
    """The application's :class:`TokenIdentity` around its ``identity_provider`` (made on first use)."""
    wrapped = settings.get("nbrunner_token_identity")
    if wrapped is None:
        wrapped = settings.setdefault("nbrunner_token_identity", TokenIdentity(settings["identity_provider"]))
    return wrapped
