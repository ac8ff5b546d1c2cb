"""The web app and REST API (``loupe serve``): FastAPI routers over
:class:`loupe.Library`, server-rendered Jinja2 pages with a little vanilla
JavaScript (no build step). See :func:`loupe.web.app.create_app`."""

from .app import create_app

__all__ = ["create_app"]
