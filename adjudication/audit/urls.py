from django.urls import path

from adjudication.audit import views

app_name = "audit"
urlpatterns = [
    path("audit/", views.audit_home, name="home"),
    path("audit/<int:audit_id>/", views.audit_report, name="report"),
    path("audit/<int:audit_id>/resume/", views.audit_resume, name="resume"),
]
