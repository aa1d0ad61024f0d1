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
  // keepPreviews carries the streamed text of a call still under way from
  // the element a fragment replaces to the one that replaces it.
  function keepPreviews(from, to) {
    from.querySelectorAll("pre.preview").forEach(function (old) {
      var sel = 'pre.preview[data-call="' + CSS.escape(old.dataset.call) + '"]';
      var pre = to.querySelector(sel);
      if (!pre) return;
      pre.textContent = old.textContent;
      pre.dataset.attempt = old.dataset.attempt;
      pre.hidden = old.hidden;
      var call = pre.closest(".call");
      if (call) call.classList.toggle("streaming", !pre.hidden);
    });
  }
  es.addEventListener("steps", function (e) {
    var steps = document.getElementById("steps");
    fragments(e.data).forEach(function (el) {
      var old = document.getElementById(el.id);
      if (old) {
        keepPreviews(old, el);
        old.replaceWith(el);
      } else steps.appendChild(el);
    });
  });
  es.addEventListener("status", function (e) {
    fragments(e.data).forEach(function (el) {
      var old = document.getElementById(el.id);
      if (old) old.replaceWith(el);
    });
  });
  // A preview shows the text of the current attempt of a call; a whole
  // text, or a text of another attempt, replaces it; a superseded attempt
  // (0: every attempt) is dropped. The call's record, when it lands, replaces the element.
  es.addEventListener("preview", function (e) {
    var p = JSON.parse(e.data);
    var sel = 'pre.preview[data-call="' + CSS.escape(p.call_id) + '"]';
    var pre = document.querySelector(sel);
    if (!pre) return;
    var attempt = String(p.attempt);
    if (p.superseded) {
      if (p.attempt === 0 || pre.dataset.attempt === attempt) {
        pre.textContent = "";
        pre.dataset.attempt = "";
      }
    } else {
      if (p.whole || pre.dataset.attempt !== attempt) {
        pre.textContent = "";
        pre.dataset.attempt = attempt;
      }
      pre.textContent += p.text || "";
    }
    pre.hidden = pre.textContent === "";
    var call = pre.closest(".call");
    if (call) call.classList.toggle("streaming", !pre.hidden);
  });
  es.addEventListener("end", function () {
    es.close();
    var mark = document.getElementById("livemark");
    if (mark) mark.textContent = "finished";
  });
})();
