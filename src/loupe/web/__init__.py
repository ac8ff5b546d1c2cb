"""The web app and REST API (``loupe serve``): FastAPI routers over
:class:`loupe.Library`, server-rendered Jinja2 pages with a little vanilla
JavaScript (no build step). See :func:`loupe.web.app.create_app`."""

__all__ = ["create_app"]


def __getattr__(name: str):
    # imported on first use: every `loupe` command imports this package (for
    # `serve`), and FastAPI takes about half a second to import
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
