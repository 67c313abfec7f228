"""The item browser's pages. Their URL names are in the `review:` namespace (`review:items`,
`review:item-detail`), where templates, tests and links have always found them: adjudication.review.urls
includes these patterns."""

from django.urls import path

from adjudication.browse import views

urlpatterns = [
    path("items/", views.item_list, name="items"),
    path("items/<int:response_id>/", views.item_view, name="item-detail"),
]
