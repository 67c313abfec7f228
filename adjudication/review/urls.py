from django.urls import path

from adjudication.review import browse_views, views

app_name = "review"
urlpatterns = [
    path("review/", views.review_home, name="home"),
    path("review/item/<int:lease_id>/", views.review_item, name="item"),
    path("review/queues/<int:queue_id>/mine/", views.review_mine, name="mine"),
    path("review/queues/<int:queue_id>/guidelines/", views.guidelines_page, name="guidelines"),
    path("queues/<int:queue_id>/guidelines/", views.guidelines_edit, name="guidelines-edit"),
    path("adjudicate/", views.adjudicate_list, name="adjudicate"),
    path("adjudicate/<int:item_id>/", views.adjudicate_item, name="adjudicate-item"),
    path("queues/", views.queue_list, name="queues"),
    path("queues/new/", views.queue_new, name="queue-new"),
    path("queues/<int:queue_id>/", views.queue_detail, name="queue"),
    path("queues/<int:queue_id>/state/", views.queue_state, name="queue-state"),
    path("queues/<int:queue_id>/title/", views.queue_title, name="queue-title"),
    path("queues/<int:queue_id>/annotators/", views.queue_annotators, name="queue-annotators"),
    path("queues/<int:queue_id>/sync/", views.queue_sync_view, name="queue-sync"),
    path("queues/<int:queue_id>/reopen-skips/", views.queue_reopen_skips, name="queue-reopen-skips"),
    path("queues/<int:queue_id>/final-labels.<str:fmt>", views.queue_export, name="queue-export"),
    path("queues/<int:queue_id>/labels.<str:fmt>", views.queue_labels_export, name="queue-labels-export"),
]
urlpatterns += [
    path("items/", browse_views.item_list, name="items"),
    path("items/<int:response_id>/", browse_views.item_view, name="item-detail"),
]
