"""Manager pages of the metamorphic verifier audit: start one on a dataset's golds (/audit/) and
read its report (/audit/<id>/)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from adjudication.audit.figures import audit_figures
from adjudication.audit.selectors import (
    audit_claim_is_stale,
    audit_last_seen,
    audit_lease_seconds,
    default_audit_readers,
)
from adjudication.audit.services import audit_run_resume, audit_run_start
from adjudication.forms import query_id
from adjudication.models import AuditRun, Dataset
from adjudication.permissions import role_required
from readers.audit.contracts import seed_stratum_label
from readers.audit.runner import BUCKETS, audit_reader_choices


def _pct(x: Any, digits: int = 1) -> str:
    return "n/a" if x is None else f"{100 * x:.{digits}f} %"


def _ci(ci: Any) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


@role_required("manager")
def audit_home(request: HttpRequest) -> HttpResponse:
    choices = audit_reader_choices()
    errors: list[str] = []
    selected_dataset = None
    selected = default_audit_readers()
    wanted = query_id(request.GET, "dataset")
    if request.method == "GET" and wanted is not None:
        # A dataset's card links here with its id: the form opens with that dataset chosen.
        selected_dataset = Dataset.objects.filter(pk=wanted).first()
    if request.method == "POST":
        selected = [n for n in request.POST.getlist("reader") if n in choices]
        dataset_id = query_id(request.POST, "dataset")
        selected_dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id is not None else None
        if selected_dataset is None:
            errors.append("Choose a dataset.")
        if not selected:
            errors.append("Choose at least one reader.")
        if not errors:
            assert selected_dataset is not None  # "Choose a dataset." otherwise
            run = audit_run_start(dataset=selected_dataset, reader_names=selected, user=request.user)
            return redirect("audit:report", audit_id=run.pk)
    now = timezone.now()
    listed = AuditRun.objects.select_related("dataset").order_by("-created_at", "-id")
    if request.method == "GET" and selected_dataset is not None:
        listed = listed.filter(dataset=selected_dataset)
    runs = [(run, audit_claim_is_stale(run, now=now)) for run in listed[:50]]
    return render(
        request,
        "audit/home.html",
        {
            "datasets": Dataset.objects.order_by("name"),
            "choices": choices,
            "selected": selected,
            "selected_dataset": selected_dataset,
            "runs": runs,
            "errors": errors,
        },
        status=400 if errors else 200,
    )


def _report_context(summary: dict[str, Any]) -> dict[str, Any]:
    readers = list(summary.get("readers", {}))
    self_validation = []
    for name, r in summary["readers"].items():
        adv = r.get("adversarial", {})
        self_validation.append(
            {
                "reader": name,
                "n": r["n"],
                "self_validation": _pct(r["self_validation"]),
                "self_validation_ci": _ci(r.get("self_validation_ci")),
                "coverage": _pct(r["coverage"]),
                "judged": _pct(r["judged"]),
                "judged_ci": _ci(r.get("judged_ci")),
                "not_judged": r.get("not_judged", 0),
                "contract": ", ".join(r.get("contract", [])) or "—",
                "fp": _pct(adv.get("false_positive_rate")),
                "fp_n": adv.get("judged", 0),
            }
        )
    budget = []
    for name in readers:
        eb = summary.get("error_budget", {}).get(name, {"failures": 0, "strata": {}})
        budget.append(
            {
                "reader": name,
                "failures": eb["failures"],
                "strata": [
                    {
                        "stratum": s,
                        "failures": c["failures"],
                        "share": _pct(c["share"]),
                        "width": round(100 * c["share"], 1),
                        "rejected": c["rejected"],
                        "not_judged": c["not_judged"],
                        "n": c["n"],
                    }
                    for s, c in eb["strata"].items()
                ],
            }
        )
    magnitude = []
    totals = summary.get("off_by_one_total", {})
    judged = {(row["reader"], row["bucket"]): row["judged"] for row in summary.get("magnitude_rows", [])}
    for name in readers:
        ob = summary.get("off_by_one", {}).get(name, {})
        t = totals.get(name, {})
        magnitude.append(
            {
                "reader": name,
                "cells": [{"rate": _pct(ob.get(b), 0), "n": judged.get((name, b), 0)} for b in BUCKETS],
                "total": _pct(t.get("rate")),
                "n": t.get("judged", 0),
            }
        )
    dis = summary.get("disagreement", {})
    disagreement = [
        {
            "reader": a,
            "cells": [
                {
                    "rate": "—" if a == b else _pct(dis.get(a, {}).get(b, {}).get("rate")),
                    "support": dis.get(a, {}).get(b, {}).get("support", 0),
                }
                for b in readers
            ],
        }
        for a in readers
    ]
    strata_rows = [
        dict(
            row, rate_pct=_pct(row["rate"]), coverage_pct=_pct(row["coverage"]), ci=_ci([row["ci_low"], row["ci_high"]])
        )
        for row in summary.get("strata_rows", [])
    ]
    in_contract = [r for r in strata_rows if r["scope"] == "in-contract" and r["class"] != "CONTRACT-DEP"]
    contract_dep = [r for r in strata_rows if r["class"] == "CONTRACT-DEP"]
    out_of_contract = [r for r in strata_rows if r["scope"] == "out-of-contract" and r["class"] != "CONTRACT-DEP"]
    punctuation = []
    for name in readers:
        for t, c in summary.get("punctuation_effect", {}).get(name, {}).items():
            punctuation.append(
                {
                    "reader": name,
                    "transform": t,
                    "baseline": c["baseline"],
                    "n": c["n"],
                    "base": _pct(c["baseline_rate"]),
                    "variant": _pct(c["variant_rate"]),
                    "lost": c["lost"],
                    "gained": c["gained"],
                }
            )
    examples = [{"reader": name, **e} for name in readers for e in summary.get("examples", {}).get(name, [])]
    identity = [{"reader": name, **summary.get("reader_identity", {}).get(name, {})} for name in readers]
    by_source = []
    for source, per_reader in summary.get("self_validation_by_source", {}).items():
        for name in readers:
            c = per_reader.get(name, {})
            if c.get("n"):
                by_source.append(
                    {
                        "source": source,
                        "reader": name,
                        "n": c["n"],
                        "self_validation": _pct(c.get("self_validation")),
                        "ci": _ci(c.get("ci")),
                        "coverage": _pct(c.get("coverage")),
                        "judged": _pct(c.get("judged")),
                    }
                )
    for b in budget:
        for s in b["strata"]:
            s["seed"] = seed_stratum_label(s["stratum"])
    for row in strata_rows:
        row.setdefault("seed_stratum", seed_stratum_label(row["stratum"]))
    # SVG built by audit_figures from numbers; every data string in it is escaped there.
    figures = {k: mark_safe(v) for k, v in audit_figures(summary).items()}  # noqa: S308
    return {
        **figures,
        "identity": identity,
        "overrides": summary.get("contract_overrides", []),
        "by_source": by_source,
        "gold_sources": summary.get("gold_sources", {}),
        "seed_strata": summary.get("seed_strata", {}),
        "readers": readers,
        "self_validation": self_validation,
        "budget": budget,
        "buckets": BUCKETS,
        "magnitude": magnitude,
        "disagreement": disagreement,
        "in_contract": in_contract,
        "contract_dep": contract_dep,
        "out_of_contract": out_of_contract,
        "punctuation": punctuation,
        "examples": examples,
        "throughput": summary.get("throughput", {}),
        "suite": summary.get("suite", {}),
        "n_variants": summary.get("variants"),
        "n_verdicts": summary.get("verdicts"),
    }


@role_required("manager")
def audit_report(request: HttpRequest, audit_id: int) -> HttpResponse:
    run = get_object_or_404(AuditRun.objects.select_related("dataset"), pk=audit_id)
    now = timezone.now()
    stale = audit_claim_is_stale(run, now=now)
    seen = audit_last_seen(run)
    context: dict[str, Any] = {
        "run": run,
        "stale": stale,
        "lease_seconds": round(audit_lease_seconds()),
        "silent_seconds": round((now - seen).total_seconds()) if stale and seen else None,
        # Only while something is happening: a finished, failed or stale run would refresh forever.
        "refreshing": run.status == AuditRun.Status.QUEUED or (run.status == AuditRun.Status.RUNNING and not stale),
    }
    if run.status == AuditRun.Status.DONE and run.summary:
        context.update(_report_context(run.summary))
    return render(request, "audit/report.html", context)


@require_POST
@role_required("manager")
def audit_resume(request: HttpRequest, audit_id: int) -> HttpResponse:
    run = get_object_or_404(AuditRun, pk=audit_id)
    audit_run_resume(run=run)
    return redirect("audit:report", audit_id=run.pk)
