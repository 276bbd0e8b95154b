"""The REST routes of a user's notifications (mixins: :mod:`.handlers` serves them with its
``BaseHandler``): ``GET``/``PUT /me/notifications`` and ``GET /me/notifications/log``."""
from __future__ import annotations

from tornado import web


class NotificationsRoute:
    """``GET``/``PUT /me/notifications``: the caller's ``{"targets", "on"}`` (control.notifications)."""

    @web.authenticated
    def get(self) -> None:
        from ..control.notifications import user_settings

        self.reply(user_settings(self.api.store.r, self.caller.name))

    @web.authenticated
    def put(self) -> None:
        from ..control.notifications import set_user_settings

        self.reply(set_user_settings(self.api.store.r, self.caller.name, self.body()))


class NotificationLogRoute:
    """``GET /me/notifications/log``: the caller's deliveries, newest first (secrets masked)."""

    @web.authenticated
    def get(self) -> None:
        from ..control.notifications import delivery_log

        self.reply({"log": delivery_log(self.api.store.r, self.caller.name)})
