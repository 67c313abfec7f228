from django.apps import AppConfig


class JudgesConfig(AppConfig):
    name = "judges"
    verbose_name = "LLM judges and regeneration"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Adjudication never imports judges: run_readers finds Answer Regeneration through this,
        # and the dataset page the judges it may run.
        from adjudication.pipeline.producers import endpoint_producer_register, judge_runs_register
        from judges.management.regeneration import regeneration_run
        from judges.page_runs import JUDGE_RUNS

        endpoint_producer_register(name="regeneration", run=regeneration_run)
        judge_runs_register(runs=JUDGE_RUNS)
