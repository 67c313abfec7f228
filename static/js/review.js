// Keyboard-first labelling, view toggle, candidate highlighting and KaTeX rendering.
// No inline scripts anywhere: the response is model text and is only ever inserted escaped.
(function () {
  "use strict";
  const $ = (sel) => document.querySelector(sel);
  const $$ = (sel) => Array.from(document.querySelectorAll(sel));

  // KaTeX over the rendered view and the question: text nodes only, never HTML from the model.
  function renderMath() {
    if (typeof window.renderMathInElement !== "function") return;
    for (const el of $$("#response-rendered, .question-text")) {
      window.renderMathInElement(el, {
        delimiters: [
          {left: "$$", right: "$$", display: true}, {left: "\\[", right: "\\]", display: true},
          {left: "$", right: "$", display: false}, {left: "\\(", right: "\\)", display: false},
        ],
        throwOnError: false, trust: false, strict: "ignore",
      });
    }
  }
  window.addEventListener("load", renderMath);

  function showView(name) {
    const rendered = $("#response-rendered"), source = $("#response-source");
    if (!rendered || !source) return;
    rendered.hidden = name !== "rendered";
    source.hidden = name !== "source";
  }
  for (const b of $$("[data-view]")) b.addEventListener("click", () => showView(b.dataset.view));

  function highlight(number, on) {
    for (const m of $$(`mark[data-candidate="${number}"]`)) m.classList.toggle("active", on);
  }
  for (const b of $$("button.candidate")) {
    b.addEventListener("mouseenter", () => highlight(b.dataset.candidate, true));
    b.addEventListener("mouseleave", () => highlight(b.dataset.candidate, false));
    b.addEventListener("click", () => {
      showView("source");
      const first = $(`mark[data-candidate="${b.dataset.candidate}"]`);
      highlight(b.dataset.candidate, true);
      if (first) first.scrollIntoView({block: "center"});
    });
  }

  const form = $("#label-form");
  if (!form) {
    // Pages without a label form (the adjudicator's) still switch views with v, as they advertise.
    document.addEventListener("keydown", (event) => {
      if (["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) return;
      if (event.key !== "v" || event.ctrlKey || event.metaKey || event.altKey) return;
      const rendered = $("#response-rendered");
      if (rendered) { event.preventDefault(); showView(rendered.hidden ? "rendered" : "source"); }
    });
    return;
  }
  const free = $("#free-text");
  let skipping = false;

  function fillHidden() {
    const pick = form.querySelector("input[name=pick]:checked");
    if (!pick) return false;
    const [kind, ...rest] = pick.value.split(":");
    $("#kind").value = kind;
    $("#answer").value = pick.id === "pick-free" ? (free ? free.value : "") : rest.join(":");
    return true;
  }

  form.addEventListener("submit", (event) => {
    if (skipping) { $("#action").value = "skip"; return; }
    if (!fillHidden()) { event.preventDefault(); $("#hints").classList.add("warn"); }
  });

  function startSkip() {
    skipping = true;
    $("#skip-box").hidden = false;
    $("#skip-reason").focus();
  }
  $("#skip").addEventListener("click", startSkip);
  if (free) free.addEventListener("focus", () => { $("#pick-free").checked = true; });

  document.addEventListener("keydown", (event) => {
    const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName) &&
                   document.activeElement.type !== "radio";
    if (event.key === "Escape") { document.activeElement.blur(); return; }
    if (event.key === "Enter") {
      if (event.isComposing) return;
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key;
    const byKey = form.querySelector(`input[name=pick][data-key="${key}"]`) ||
                  form.querySelector(`input[name=pick][data-shortcut="${key}"]`);
    if (byKey) { byKey.checked = true; event.preventDefault(); return; }
    if (key === "t" && free) { event.preventDefault(); free.focus(); return; }
    if (key === "c" || key === "i") {
      const r = form.querySelector(`input[name=correctness][value=${key === "c" ? "correct" : "incorrect"}]`);
      if (r) { r.checked = true; event.preventDefault(); }
      return;
    }
    if (key === "s") { event.preventDefault(); startSkip(); return; }
    if (key === "v") {
      event.preventDefault();
      showView($("#response-rendered").hidden ? "rendered" : "source");
      return;
    }
    if (key === "?") { event.preventDefault(); $("#shortcuts").hidden = !$("#shortcuts").hidden; }
  });
})();
