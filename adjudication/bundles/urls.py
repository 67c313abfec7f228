from django.urls import path

from adjudication.bundles import views

app_name = "bundles"
urlpatterns = [
    path("bundles/analytics/<int:dataset_id>/", views.analytics_bundle, name="analytics"),
    path("bundles/audit/<int:audit_id>/", views.audit_bundle, name="audit"),
]
