// Polls the dataset's progress endpoint and draws one bar per reader; stops when all are done.
(function () {
  const box = document.getElementById("progress");
  if (!box) return;
  function draw(data) {
    box.replaceChildren();
    for (const r of data.readers) {
      const row = document.createElement("div");
      row.className = "bar-row";
      const label = document.createElement("span");
      label.textContent = `${r.reader} ${r.done}/${r.total}`;
      const bar = document.createElement("progress");
      bar.max = r.total || 1;
      bar.value = r.done;
      row.append(bar, label);
      box.append(row);
    }
    return data.done < data.total;
  }
  async function tick() {
    try {
      const resp = await fetch(box.dataset.url, {headers: {Accept: "application/json"}, credentials: "same-origin"});
      if (!resp.ok) return;
      if (draw(await resp.json())) setTimeout(tick, 2000);
    } catch (e) { setTimeout(tick, 5000); }
  }
  tick();
})();
