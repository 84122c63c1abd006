// The report's own script: draw each figure with Vega, sort tables, save records back out.
(function () {
  "use strict";
  function drawFigures() {
    var boxes = document.querySelectorAll("div.vega[data-spec]");
    boxes.forEach(function (box) {
      var spec = JSON.parse(document.getElementById(box.dataset.spec).textContent);
      if (typeof window.vegaEmbed !== "function") {
        box.textContent = "Vega did not load: the plot cannot be drawn.";
        box.className += " plot-error";
        return;
      }
      // A single or layered view fills the page's width (the spec's own width is for
      // images: --plots); a composed one keeps its widths. No action menu: the report is
      // for reading, and --plots writes the figures as PNG and SVG.
      if (typeof spec.width === "number" && !spec.hconcat && !spec.vconcat &&
          !spec.concat && !spec.facet && !spec.repeat) {
        spec.width = "container";
        spec.autosize = {type: "fit-x", contains: "padding"};
      }
      window.vegaEmbed(box, spec, {
        renderer: "svg",
        actions: false
      }).then(function () { box.dataset.drawn = "yes"; }, function (err) {
        box.textContent = "This plot could not be drawn: " + err;
        box.className += " plot-error";
        console.error(err);
      });
    });
  }
  function sortValue(td) {
    var v = td.dataset.sort;
    var n = Number(v);
    return v !== "" && !isNaN(n) ? n : v;
  }
  function sortBy(th) {
    var table = th.closest("table");
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortValue(a.cells[index]), y = sortValue(b.cells[index]);
      if (typeof x === typeof y) { return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1); }
      return (typeof x === "number" ? -1 : 1) * (ascending ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(th); } });
  });
  // The record as --json wrote it (parsed and written again: the same data).
  window.attnprofRecordText = function (id) {
    return JSON.stringify(JSON.parse(document.getElementById(id).textContent), null, 2) + "\n";
  };
  document.querySelectorAll("button.save-json").forEach(function (button) {
    button.addEventListener("click", function () {
      var text = window.attnprofRecordText(button.dataset.record);
      var data = JSON.parse(text);
      var link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([text], {type: "application/json"}));
      link.download = (data.kind || "record") + "-" + (data.run_id || "attnprof") + ".json";
      document.body.appendChild(link);
      link.click();
      link.remove();
    });
  });
  drawFigures();
})();
