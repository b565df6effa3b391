// ffsession ui: the filter box and search as you type. Served as a file
// (the page's Content-Security-Policy allows no inline script).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var base = document.body.dataset.base;
  var filter = document.getElementById("filter");
  if (filter) {
    filter.addEventListener("input", function () {
      var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
      document.querySelectorAll("tr.tab").forEach(function (row) {
        var text = row.textContent.toLowerCase();
        row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
      });
    });
  }
  var q = document.getElementById("q");
  var results = document.getElementById("results");
  if (q && results) {
    var timer = null;
    var asked = 0;
    q.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var n = ++asked;
        fetch(base + "/search?part=1&q=" + encodeURIComponent(q.value), { credentials: "same-origin" })
          .then(function (r) { return r.text(); })
          .then(function (html) {
            // Server-rendered and escaped; the newest answer only.
            if (n === asked) { results.innerHTML = html; }
          });
      }, 200);
    });
  }
});
