// Keyboard-first labelling, view toggle, candidate highlighting and guarded KaTeX rendering.
// No inline scripts anywhere: the response is model text and is only ever inserted escaped.
// Two independent parts: labelling first, then maths, so that nothing in the maths (a KaTeX
// error, a missing script, a pathological formula) can keep the shortcuts and the form from working.
(function () {
  "use strict";
  const $ = (sel) => document.querySelector(sel);
  const $$ = (sel) => Array.from(document.querySelectorAll(sel));

  function showView(name) {
    const rendered = $("#response-rendered"), source = $("#response-source");
    if (!rendered || !source) return;
    rendered.hidden = name !== "rendered";
    source.hidden = name !== "source";
  }
  for (const b of $$("[data-view]")) b.addEventListener("click", () => showView(b.dataset.view));

  // A clicked candidate stays highlighted (pinned) until another is clicked: switching to the
  // source view moves the list under the pointer, and hover must not then light up a neighbour.
  let pinned = null;
  function highlight(number, on) {
    for (const m of $$(`mark[data-candidate="${number}"]`)) m.classList.toggle("active", on);
  }
  for (const b of $$("button.candidate")) {
    b.addEventListener("mouseenter", () => { if (pinned === null) highlight(b.dataset.candidate, true); });
    b.addEventListener("mouseleave", () => { if (pinned === null) highlight(b.dataset.candidate, false); });
    b.addEventListener("click", () => {
      for (const m of $$("mark.active")) m.classList.remove("active");
      pinned = b.dataset.candidate;
      showView("source");
      highlight(pinned, true);
      const first = $(`#response-source mark[data-candidate="${pinned}"]`);
      const box = $("#response-source");
      // Scroll the response box only, not the page: the button stays where the pointer is.
      if (first && box) box.scrollTop += first.getBoundingClientRect().top - box.getBoundingClientRect().top - box.clientHeight / 3;
    });
  }

  // The lease's end in the reader's own time zone (the server writes UTC with its zone).
  const expiry = $("#lease-expiry");
  if (expiry) {
    const at = new Date(expiry.getAttribute("datetime"));
    if (!Number.isNaN(at.getTime())) {
      expiry.textContent = at.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", timeZoneName: "short"});
    }
  }

  // One scheme on every item page: letters pick answers (A-Z: an option, or an open-ended item's
  // candidate; either case), so no action sits on a letter: ` switches the view, ? lists the keys.
  const letter = (event) => (/^[a-z]$/i.test(event.key) ? event.key.toUpperCase() : null);
  const toggleView = () => showView($("#response-rendered").hidden ? "rendered" : "source");

  const adjudicate = $("#adjudicate-form");
  if (adjudicate) {
    // The adjudicator's page: 1-9 accepts Annotator N's label, a letter an option, Enter records.
    const fill = (kind, answer, correctness) => {
      $("#final-kind").value = kind;
      $("#final-answer").value = answer;
      const c = $("#final-correctness");
      if (c && correctness !== undefined) c.value = correctness;
      for (const row of $$("#annotator-labels tr")) row.classList.remove("accepted");
    };
    for (const b of $$("button.accept")) {
      b.addEventListener("click", () => { fill(b.dataset.kind, b.dataset.answer, b.dataset.correctness); b.closest("tr").classList.add("accepted"); });
    }
    for (const b of $$("button.option-pick")) b.addEventListener("click", () => fill(b.dataset.kind, b.dataset.answer));
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape") { document.activeElement.blur(); return; }
      if (["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const accept = $(`button.accept[data-key="${event.key}"]`);
      if (accept) { event.preventDefault(); accept.click(); return; }
      const key = letter(event);
      const option = key ? $(`button.option-pick[data-key="${key}"]`) : null;
      if (option) { event.preventDefault(); option.click(); return; }
      if (event.key === "Enter") { event.preventDefault(); adjudicate.requestSubmit($("#adjudicate-submit")); return; }
      if (event.key === "`") { event.preventDefault(); toggleView(); return; }
      if (event.key === "?") { event.preventDefault(); $("#shortcuts").hidden = !$("#shortcuts").hidden; }
    });
    return;
  }
  const form = $("#label-form");
  if (!form) {
    // Pages without a label form (the item browser's) still switch views with `, as they advertise.
    document.addEventListener("keydown", (event) => {
      if (["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName)) return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const start = $(`#queue-list a.start-queue[data-key="${event.key}"]`);  // the annotators' landing page
      if (start) { event.preventDefault(); window.location.assign(start.href); return; }
      if (event.key !== "`") return;
      if ($("#response-rendered")) { event.preventDefault(); toggleView(); }
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
    if (!fillHidden()) {
      event.preventDefault();
      $("#hints").classList.add("warn");
      $("#pick-first").hidden = false;
    }
  });

  function startSkip() {
    skipping = true;
    $("#skip-box").hidden = false;
    $("#skip-reason").focus();
  }
  // Esc, or picking an answer, leaves skip mode: a skip is only ever what the annotator ends with.
  function cancelSkip() {
    if (!skipping) return;
    skipping = false;
    $("#skip-box").hidden = true;
    $("#skip-reason").value = "";
  }
  if ($("#skip")) $("#skip").addEventListener("click", startSkip);
  if (free) free.addEventListener("focus", () => { $("#pick-free").checked = true; });
  for (const radio of form.querySelectorAll("input[name=pick]")) radio.addEventListener("change", cancelSkip);

  document.addEventListener("keydown", (event) => {
    const typing = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName) &&
                   document.activeElement.type !== "radio";
    if (event.key === "Escape") { cancelSkip(); document.activeElement.blur(); return; }
    if (event.key === "Enter") {
      if (event.isComposing || !$("#submit")) return;  // a locked label has nothing to submit
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.shiftKey && /^Digit[1-5]$/.test(event.code)) {
      event.preventDefault();
      $("#confidence").value = event.code.slice(-1);
      return;
    }
    const key = letter(event) || event.key;
    const byKey = form.querySelector(`input[name=pick][data-key="${CSS.escape(key)}"]`);
    if (byKey) { cancelSkip(); byKey.checked = true; $("#pick-first").hidden = true; event.preventDefault(); return; }
    if (key === "/" && free) { cancelSkip(); event.preventDefault(); free.focus(); return; }
    if (key === "+" || key === "=" || key === "-") {  // "=" is "+" without Shift on most layouts
      const r = form.querySelector(`input[name=correctness][value=${key === "-" ? "incorrect" : "correct"}]`);
      if (r) { r.checked = true; event.preventDefault(); }
      return;
    }
    if (key === ">" && $("#skip")) { event.preventDefault(); startSkip(); return; }
    if (key === "Backspace") {
      // Undo: back to the annotator's previous item of this queue, where the label can be revised.
      const previous = $("#previous-item");
      if (previous) { event.preventDefault(); window.location.assign(previous.href); }
      return;
    }
    if (key === "`") { event.preventDefault(); toggleView(); return; }
    if (key === ";" && $("#guidelines")) { event.preventDefault(); $("#guidelines").open = !$("#guidelines").open; return; }
    if (key === "?") { event.preventDefault(); $("#shortcuts").hidden = !$("#shortcuts").hidden; }
  });
})();

// KaTeX over the formulas the server marked: each `<span class="math-tex">` holds one formula's TeX
// as escaped text (adjudication/review/markup.py found it before Markdown could touch it), with
// its delimiters in data-source. Never HTML from the model: KaTeX reads textContent. Guarded,
// because model text can hold formulas that crash the tab (`\frac{1}{` nested a few hundred deep:
// Chromium's layout overflows its stack on the box tree KaTeX builds) or hold the main thread
// (tens of thousands of characters, thousands of formulas). Each formula is:
//   - checked before KaTeX sees it: length and group nesting depth ({…}, \left…\right,
//     \begin…\end); measured in headless Chromium on Linux, the tab crashed from about 150 nested
//     \frac, 60-80 nested \underbrace, 20-24 nested \underbrace{\overbrace{\boxed{\sqrt{ (80-96
//     groups) up, at a typeset box tree 800-1000 elements deep; the limit is 20 groups;
//   - typeset into a detached element (no layout yet) with KaTeX's own limits on macro expansion
//     and sizes; a formula whose box tree is still deeper than 300, whose typesetting throws (its
//     parser's own recursion overflows near 1,000 groups) or that KaTeX marks as an error, is shown
//     as its source (text, so escaped) with a visible note;
//   - past the page's budget (formulas, characters), left as source text under one note.
// Formulas are typeset in time slices, so keys and clicks are handled between them; a formula
// shows its source until typeset. `document.body.dataset.math` is "done" at the end.
(function () {
  "use strict";
  // Per formula: characters, group nesting, depth of the typeset box tree. Per page: formulas and
  // characters typeset (each typeset character costs a few DOM nodes for as long as the page lives).
  const LIMITS = {chars: 4000, depth: 20, boxDepth: 300, formulas: 2000, pageChars: 100000, sliceMs: 25};
  // throwOnError: a formula KaTeX cannot read (an unknown command, unbalanced braces) is shown as its
  // source with the reason, never as KaTeX's red error text or a half-typeset formula.
  const KATEX_OPTIONS = {throwOnError: true, trust: false, strict: "ignore", maxExpand: 500, maxSize: 20};
  // Commands models and datasets write that KaTeX lacks (physics, amsmath extras, siunitx, text-mode
  // symbols), as TeX it has. Each formula gets a copy: a \gdef in one must not reach the next.
  const op = (name) => `\\operatorname{${name}}`;
  const MACROS = Object.freeze({
    "\\norm": "\\left\\lVert #1\\right\\rVert", "\\abs": "\\left\\lvert #1\\right\\rvert",
    "\\floor": "\\left\\lfloor #1\\right\\rfloor", "\\ceil": "\\left\\lceil #1\\right\\rceil",
    "\\inner": "\\left\\langle #1\\right\\rangle", "\\set": "\\left\\{ #1\\right\\}",
    "\\argmin": "\\operatorname*{arg\\,min}", "\\argmax": "\\operatorname*{arg\\,max}",
    "\\Var": op("Var"), "\\Cov": op("Cov"), "\\Corr": op("Corr"), "\\E": "\\mathbb{E}", "\\tr": op("tr"),
    "\\Tr": op("Tr"), "\\rank": op("rank"), "\\diag": op("diag"), "\\sgn": op("sgn"), "\\sign": op("sign"),
    "\\lcm": op("lcm"), "\\sech": op("sech"), "\\csch": op("csch"), "\\arccot": op("arccot"),
    "\\arcsec": op("arcsec"), "\\arccsc": op("arccsc"), "\\arsinh": op("arsinh"), "\\arcosh": op("arcosh"),
    "\\artanh": op("artanh"), "\\Res": op("Res"), "\\proj": op("proj"), "\\Span": op("span"),
    "\\Q": "\\mathbb{Q}", "\\C": "\\mathbb{C}", "\\mathds": "\\mathbb{#1}", "\\mathbbm": "\\mathbb{#1}",
    "\\dd": "\\mathrm{d}", "\\grad": "\\nabla", "\\vb": "\\mathbf{#1}", "\\vu": "\\hat{\\mathbf{#1}}",
    "\\mbox": "\\text{#1}", "\\textcent": "\\text{¢}", "\\textdegree": "{}^{\\circ}", "\\textmu": "\\mu",
    "\\textpm": "\\pm", "\\textphi": "\\phi", "\\texttimes": "\\times",
    "\\cancelto": "\\overset{#1}{\\cancel{#2}}", "\\eqref": "(\\text{#1})", "\\ref": "\\text{#1}",
    "\\si": "\\mathrm{#1}", "\\unit": "\\mathrm{#1}", "\\SI": "#1\\,\\mathrm{#2}", "\\num": "#1",
    "\\qty": "#1\\,\\mathrm{#2}", "\\ang": "#1^{\\circ}", "\\ce": "\\mathrm{#1}", "\\pu": "\\mathrm{#1}",
    // KaTeX reads a middle dot as \cdotp, which it defines in maths only: `\text{eV·s}` failed.
    "\\cdotp": "\\TextOrMath{\\char\"B7}{\\mathpunct{\\char\"22C5}}",
  });
  // The page's macros, read-only, for the tests that check which commands were left raw.
  window.reviewMathMacros = MACROS;
  const UNDEFINED = /^KaTeX parse error: Undefined control sequence: \\([A-Za-z]+)/;

  function knows(name) {
    try {
      window.katex.renderToString(`\\${name}`, {...KATEX_OPTIONS, macros: {...MACROS}});
      return true;
    } catch (err) {
      return !UNDEFINED.test(err.message);  // it knows the command and wanted an argument
    }
  }

  // A name KaTeX does not know that is a command glued to a one- or two-letter variable by a lost
  // space (\DeltaE, \omegax, \leqi): the command and the variable, when KaTeX knows the command.
  function unglued(math, err) {
    const undefined = UNDEFINED.exec(err.message);
    if (!undefined) return null;
    const name = undefined[1];
    const glued = new RegExp(`\\\\${name}(?![A-Za-z])`, "g");
    for (let cut = name.length - 1; cut >= Math.max(2, name.length - 2); cut--) {
      if (knows(name.slice(0, cut))) return math.replace(glued, `\\${name.slice(0, cut)} ${name.slice(cut)}`);
    }
    // Any other unknown name is shown as written, in the typeset formula, as MathJax shows one: the
    // rest of the formula stays readable instead of the whole formula falling back to source.
    return math.replace(glued, `\\textcolor{#b00}{\\texttt{\\textbackslash{}${name}}}`);
  }

  // Deepest nesting of the groups KaTeX turns into nested boxes, in one pass.
  function nestingDepth(math) {
    let depth = 0, deepest = 0;
    for (let i = 0; i < math.length; i++) {
      const c = math[i];
      if (c === "\\") {
        let j = i + 1;
        while (j < math.length && isLetter(math.charCodeAt(j))) j++;
        const word = math.slice(i + 1, j);
        if (word === "left" || word === "begin") depth++;
        else if (word === "right" || word === "end") depth = Math.max(0, depth - 1);
        i = j === i + 1 ? i + 1 : j - 1;  // a control symbol (\{, \\, \$) is one character
      } else if (c === "{") depth++;
      else if (c === "}") depth = Math.max(0, depth - 1);
      if (depth > deepest) deepest = depth;
    }
    return deepest;
  }

  function isLetter(code) {
    return (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
  }

  function boxDepth(root) {
    let deepest = 0;
    const stack = [[root, 0]];
    while (stack.length) {
      const [el, d] = stack.pop();
      if (d > deepest) deepest = d;
      for (const child of el.children) stack.push([child, d + 1]);
    }
    return deepest;
  }

  function showSource(holder, piece, reason) {
    const code = document.createElement("code");
    code.textContent = piece.raw;
    const note = document.createElement("small");
    note.className = "math-note muted";
    note.textContent = ` [formula shown as source: ${reason}]`;
    holder.className = "math-guarded";
    holder.replaceChildren(code, note);
  }

  function typeset(holder, piece) {
    const depth = nestingDepth(piece.math);
    if (depth > LIMITS.depth) return showSource(holder, piece, `nested ${depth} deep, over the limit of ${LIMITS.depth}`);
    if (piece.math.length > LIMITS.chars) {
      return showSource(holder, piece, `${piece.math.length} characters, over the limit of ${LIMITS.chars}`);
    }
    const box = document.createElement("span");
    let math = piece.math;
    for (let attempt = 0; ; attempt++) {
      try {
        // A fresh macro table per formula: a \gdef in one span must not redefine the next.
        window.katex.render(math, box, {...KATEX_OPTIONS, displayMode: piece.display, macros: {...MACROS}});
        break;
      } catch (err) {
        if (!(err instanceof window.katex.ParseError)) return showSource(holder, piece, "KaTeX could not typeset it");
        const again = attempt < 8 ? unglued(math, err) : null;  // it gave up: stack, limits
        if (again === null) return showSource(holder, piece, "KaTeX cannot read it");
        math = again;
      }
    }
    const boxes = boxDepth(box);
    if (boxes > LIMITS.boxDepth) {
      return showSource(holder, piece, `typeset ${boxes} boxes deep, over the limit of ${LIMITS.boxDepth}`);
    }
    holder.className = piece.display ? "math math-display" : "math";
    holder.replaceChildren(box);
  }

  // [holder, piece] pairs in document order, within each region's budget; the rest stay source.
  function collect(region, queue) {
    let chars = 0, overflow = false;
    for (const holder of region.querySelectorAll("span.math-tex")) {
      const math = holder.textContent;
      const piece = {math, display: holder.dataset.display === "1", raw: holder.dataset.source || math};
      // A formula over the per-formula limit is only checked, never typeset: it costs no budget.
      const cost = math.length <= LIMITS.chars ? math.length : 0;
      holder.textContent = piece.raw;
      if (queue.length >= LIMITS.formulas || chars + cost > LIMITS.pageChars) {
        overflow = true;
        holder.className = "math-over-budget";
        continue;
      }
      chars += cost;
      holder.className = "math-pending";
      queue.push([holder, piece]);
    }
    if (overflow) {
      const note = document.createElement("p");
      note.className = "math-overflow muted";
      note.textContent = `Only the first ${LIMITS.formulas} formulas (${LIMITS.pageChars} characters of ` +
                         "maths) on this page are typeset; the rest are shown as source.";
      region.prepend(note);
    }
  }

  // An inline formula that cannot break (a number of a thousand digits) scrolls in a box of its
  // own instead of widening the page; every width is read before any class is set (one layout).
  function fitWide() {
    const inline = Array.from(document.querySelectorAll(".math:not(.math-display)"));
    const wide = inline.filter((m) => {
      const block = m.closest("p, li, td, th, blockquote, dd, div");
      return block && m.getBoundingClientRect().right > block.getBoundingClientRect().right + 1;
    });
    for (const m of wide) m.classList.add("math-wide");
  }

  function renderMath() {
    const queue = [];
    if (window.katex && typeof window.katex.render === "function") {
      for (const region of document.querySelectorAll("#response-rendered, .question, .candidates, .label-form, #annotator-labels, #my-labels")) {
        try { collect(region, queue); } catch (err) { console.error("math: ", err); }
      }
    }
    let next = 0;
    function slice() {
      const until = performance.now() + LIMITS.sliceMs;
      while (next < queue.length && performance.now() < until) {
        const [holder, piece] = queue[next++];
        try { typeset(holder, piece); } catch (err) { showSource(holder, piece, "it could not be typeset"); }
      }
      if (next < queue.length) setTimeout(slice, 0);
      else { fitWide(); document.body.dataset.math = "done"; }
    }
    slice();
  }
  window.addEventListener("load", renderMath);
})();
