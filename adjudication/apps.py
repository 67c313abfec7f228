from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"
    verbose_name = "Adjudication"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Each capability's tasks, registered under their names in every process, web or worker:
        # services send some of them by name (adjudication.task_names), and Celery's autodiscovery
        # looks only for an app's top-level tasks module.
        from django.core.signals import request_finished, request_started

        import adjudication.analytics.tasks
        import adjudication.audit.tasks
        import adjudication.bundles.tasks
        import adjudication.pipeline.tasks
        import adjudication.routing.tasks  # noqa: F401
        from adjudication import after_response

        # On the embedded default, a task a page sends runs after the response (after_response).
        request_started.connect(after_response.request_started, dispatch_uid="after_response.started")
        request_finished.connect(after_response.request_finished, dispatch_uid="after_response.finished")
