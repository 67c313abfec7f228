"""The login page, with the form that lets django-axes count every attempt (accounts/forms.py).
The URL name stays un-namespaced ("login"): LOGIN_URL and the templates name it so."""

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import path

from adjudication.accounts.forms import LoginForm

urlpatterns = [
    path("login/", login_not_required(auth_views.LoginView.as_view(authentication_form=LoginForm)), name="login"),
]
