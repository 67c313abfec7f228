from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"
    verbose_name = "Adjudication"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Each capability's tasks, registered under their names in every process, web or worker:
        # services send some of them by name (adjudication.task_names), and Celery's autodiscovery
        # looks only for an app's top-level tasks module.
        import adjudication.analytics.tasks
        import adjudication.audit.tasks
        import adjudication.pipeline.tasks
        import adjudication.routing.tasks  # noqa: F401
