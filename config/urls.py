from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("adjudication.accounts.urls")),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("adjudication.api_urls")),
    path("", include("adjudication.urls")),
]

# Under /api/ a missing URL or a crash answers in the API's error body; pages keep Django's.
handler404 = "adjudication.api_errors.not_found"
handler500 = "adjudication.api_errors.server_error"
