from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"
    verbose_name = "Adjudication"
    default_auto_field = "django.db.models.BigAutoField"
