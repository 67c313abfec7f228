"""The login forms (the site's and the admin's): every username, however hostile, reaches
authenticate(), so that django-axes counts the attempt and the answer is the ordinary failure."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.validators import ProhibitNullCharactersValidator


class _EveryUsernameCounted:
    """Django's form refuses a NUL in the username itself, before authenticate(): django-axes never
    saw those attempts, so one address could repeat them without ever being locked out. The login
    backend refuses such a name (adjudication.auth_backends) without a lookup or a hash."""

    fields: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        username = self.fields["username"]
        username.validators = [v for v in username.validators if not isinstance(v, ProhibitNullCharactersValidator)]


class LoginForm(_EveryUsernameCounted, AuthenticationForm):
    pass


class AdminLoginForm(_EveryUsernameCounted, AdminAuthenticationForm):
    pass
