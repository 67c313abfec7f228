"""The managers' item browser pages: the filtered list and one item. Thin: the form parses the
query string, the selectors read."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from adjudication.browse.forms import ItemFilterForm
from adjudication.browse.selectors import STATES, item_detail, items_page, reader_names
from adjudication.forms import form_errors
from adjudication.models import Verdict
from adjudication.permissions import role_required


@role_required("manager")
def item_list(request: HttpRequest) -> HttpResponse:
    """`/items/`: responses by id or text, run identity, queue, review state, reader verdicts and
    annotator disagreement (docs/review.md, "The item browser"). A bad parameter is a 400 page that
    names it, with the form still filled in."""
    form = ItemFilterForm(request.GET)
    valid = form.is_valid()
    page = items_page(filters=form.filters(), page=form.page_number()) if valid else None
    context = {
        "form": form,
        "error": "" if valid else form_errors(form),
        "page": page,
        "kept": form.kept(),
        "options": form.options(),
        "states": STATES,
        "verdict_options": [f"{name}:{v}" for name in reader_names() for v in Verdict.values],
        "state_links": [(s, form.query(status=s)) for s in STATES] if valid else [],
        "previous_query": form.query(page=page.number - 1) if page and page.has_previous else "",
        "next_query": form.query(page=page.number + 1) if page and page.has_next else "",
    }
    return render(request, "browse/items.html", context, status=200 if valid else 400)


@role_required("manager")
def item_view(request: HttpRequest, response_id: int) -> HttpResponse:
    """`/items/<response id>/`: one response with every reading, label and final label."""
    detail = item_detail(response_id=response_id)
    if detail is None:
        raise Http404("no such response")
    return render(request, "browse/item_detail.html", detail)
