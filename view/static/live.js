// polyloop view: follows an unfinished run's log (server-sent events).
// The server renders every fragment with html/template; this script only
// puts the fragments in place and shows streamed previews as text.
"use strict";
(function () {
  var run = document.getElementById("run");
  var url = run && run.dataset.live;
  if (!url || !window.EventSource) return;
  var es = new EventSource(url);
  function fragments(html) {
    var t = document.createElement("template");
    t.innerHTML = html;
    return Array.prototype.slice.call(t.content.children);
  }
  es.addEventListener("steps", function (e) {
    var steps = document.getElementById("steps");
    fragments(e.data).forEach(function (el) {
      var old = document.getElementById(el.id);
      if (old) old.replaceWith(el); else steps.appendChild(el);
    });
  });
  es.addEventListener("status", function (e) {
    fragments(e.data).forEach(function (el) {
      var old = document.getElementById(el.id);
      if (old) old.replaceWith(el);
    });
  });
  es.addEventListener("preview", function (e) {
    var p = JSON.parse(e.data);
    var sel = 'pre.preview[data-call="' + CSS.escape(p.call_id) + '"]';
    var pre = document.querySelector(sel);
    if (!pre) return;
    if (p.superseded || pre.dataset.attempt !== String(p.attempt)) {
      pre.textContent = "";
      pre.dataset.attempt = String(p.attempt);
    }
    if (!p.superseded) pre.textContent += p.text || "";
    pre.hidden = pre.textContent === "";
  });
  es.addEventListener("end", function () {
    es.close();
    var mark = document.getElementById("livemark");
    if (mark) mark.textContent = "finished";
  });
})();
