"""Read-mostly admin: stored responses and readings are evidence, so they are not edited here.

Access follows the platform's roles, not Django's per-model permissions: managers (staff by
add_user) see every model here and edit the editable ones; deleting stays with superusers."""

from django.contrib import admin

from adjudication.accounts.forms import AdminLoginForm
from adjudication.models import Dataset, Question, ReaderSpec, Reading, Response, Run, TaskBatch
from adjudication.permissions import is_manager

# The admin's login too hands every username to authenticate(), for django-axes to count.
admin.site.login_form = AdminLoginForm


class ManagerAdmin(admin.ModelAdmin):
    def has_module_permission(self, request) -> bool:
        return is_manager(request.user)

    def has_view_permission(self, request, obj=None) -> bool:
        return is_manager(request.user)

    def has_add_permission(self, request) -> bool:
        return is_manager(request.user)

    def has_change_permission(self, request, obj=None) -> bool:
        return is_manager(request.user)


class ReadOnlyAdmin(ManagerAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Dataset)
class DatasetAdmin(ManagerAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)
    fields = ("name", "description")


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("dataset", "model", "checkpoint", "benchmark", "prompt")
    list_filter = ("dataset", "checkpoint", "benchmark")
    search_fields = ("model",)


@admin.register(Question)
class QuestionAdmin(ReadOnlyAdmin):
    list_display = ("id", "dataset", "benchmark", "short_text", "gold")
    list_filter = ("dataset", "benchmark")
    search_fields = ("text",)

    @admin.display(description="question")
    def short_text(self, obj: Question) -> str:
        return obj.text[:80]


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "dataset", "run", "content_hash")
    list_filter = ("dataset", "run__checkpoint", "run__benchmark")
    search_fields = ("external_id",)
    list_select_related = ("dataset", "run")
    raw_id_fields = ("question", "run")


@admin.register(ReaderSpec)
class ReaderSpecAdmin(ReadOnlyAdmin):
    list_display = ("name", "version", "kind", "config_hash", "created_at")
    list_filter = ("kind",)


@admin.register(Reading)
class ReadingAdmin(ReadOnlyAdmin):
    list_display = ("response", "reader_spec", "verdict", "answer", "elapsed_ms")
    list_filter = ("verdict", "reader_spec__name")
    list_select_related = ("response", "reader_spec")
    raw_id_fields = ("response",)


@admin.register(TaskBatch)
class TaskBatchAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "kind", "dataset", "responses", "status", "deliveries", "run")
    list_filter = ("status", "kind")
    search_fields = ("run",)
    list_select_related = ("dataset",)
