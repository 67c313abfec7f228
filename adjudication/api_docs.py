"""The browsable API docs page (/api/docs/): Swagger UI from drf-spectacular-sidecar (this site's
static files, no CDN), its initialisation script a file of its own (the CSP allows no inline
script), for every logged-in role, like the schema it shows."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import redirect_to_login
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework import exceptions


class ApiDocsView(SpectacularSwaggerSplitView):
    """Swagger UI over /api/schema/. A visitor who is not logged in is sent to the login page, as
    on every other page; the template is this project's (drf-spectacular's has an inline <style>)."""

    template_name = "api/swagger_ui.html"
    url_name = "api-schema"
    title = "Adjudication platform API"

    def finalize_response(self, request: Any, response: Any, *args: Any, **kwargs: Any) -> Any:
        # Swagger UI's own stylesheet (a static file of this site) draws its icons as data: images.
        # This page alone also allows images from data: URLs: they load nothing from elsewhere and
        # cannot run script, and the page shows no model text, only the schema. Scripts and styles
        # stay 'self' only, nothing inline.
        response = super().finalize_response(request, response, *args, **kwargs)
        response._csp_update = {"img-src": ["data:"]}
        return response

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, exceptions.NotAuthenticated):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)
