"""The review pages, by room: the annotator's (annotate), the adjudicator's (adjudicate), the
managers' queues (queues), and the item browser (adjudication.browse), whose names stay in this
namespace (`review:items`, `review:item-detail`)."""

from django.urls import path

from adjudication.browse import urls as browse_urls
from adjudication.review.adjudicate import views as adjudicate_views
from adjudication.review.annotate import views as annotate_views
from adjudication.review.queues import views as queues_views

app_name = "review"
urlpatterns = [
    path("review/", annotate_views.review_home, name="home"),
    path("review/item/<int:lease_id>/", annotate_views.review_item, name="item"),
    path("review/queues/<int:queue_id>/mine/", annotate_views.review_mine, name="mine"),
    path("review/queues/<int:queue_id>/guidelines/", annotate_views.guidelines_page, name="guidelines"),
    path("queues/<int:queue_id>/guidelines/", queues_views.guidelines_edit, name="guidelines-edit"),
    path("adjudicate/", adjudicate_views.adjudicate_list, name="adjudicate"),
    path("adjudicate/<int:item_id>/", adjudicate_views.adjudicate_item, name="adjudicate-item"),
    path("queues/", queues_views.queue_list, name="queues"),
    path("queues/new/", queues_views.queue_new, name="queue-new"),
    path("queues/<int:queue_id>/", queues_views.queue_detail, name="queue"),
    path("queues/<int:queue_id>/state/", queues_views.queue_state, name="queue-state"),
    path("queues/<int:queue_id>/title/", queues_views.queue_title, name="queue-title"),
    path("queues/<int:queue_id>/annotators/", queues_views.queue_annotators, name="queue-annotators"),
    path("queues/<int:queue_id>/sync/", queues_views.queue_sync_view, name="queue-sync"),
    path("queues/<int:queue_id>/reopen-skips/", queues_views.queue_reopen_skips, name="queue-reopen-skips"),
    path("queues/<int:queue_id>/final-labels.<str:fmt>", queues_views.queue_export, name="queue-export"),
    path("queues/<int:queue_id>/labels.<str:fmt>", queues_views.queue_labels_export, name="queue-labels-export"),
]
urlpatterns += browse_urls.urlpatterns
