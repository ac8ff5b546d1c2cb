// Loupe: instant search, grid paging by scrolling, drag-and-drop upload.
// Plain JavaScript, no build step; every page also works without it.
(function () {
  "use strict";

  function debounce(fn, ms) {
    var t;
    return function () { clearTimeout(t); var a = arguments; t = setTimeout(function () { fn.apply(null, a); }, ms); };
  }

  // -- instant search: the results region is re-rendered by the server --------
  var form = document.getElementById("search");
  var results = document.getElementById("results");
  var seq = 0;
  function query() {
    var params = new URLSearchParams(new FormData(form));
    if (!params.get("scope")) params.delete("scope");
    if (!params.get("lang")) params.delete("lang");
    if (!params.get("filters")) params.delete("filters");
    return params;
  }
  function refresh() {
    var params = query(), mine = ++seq;
    var some = params.get("q").trim() || params.get("filters") || params.get("scope");
    history.replaceState(null, "", some ? "/?" + params.toString() : "/");
    // (with nothing typed and no filter, the server answers with the library
    // itself, newest first: the same page as a plain "/")
    fetch("/results?" + params.toString(), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) { if (mine === seq) { results.innerHTML = html; watchMore(); } });
  }
  if (form && results) {
    var q = document.getElementById("q");
    q.addEventListener("input", debounce(refresh, 250));
    form.addEventListener("change", function (e) { if (e.target.id !== "q") refresh(); });
    form.addEventListener("submit", function (e) { e.preventDefault(); refresh(); });
  }

  // -- the grid loads the next page when its end scrolls into view ------------
  var observer = null;
  function watchMore() {
    if (observer) observer.disconnect();
    var next = document.getElementById("next-page");
    if (!next || !("IntersectionObserver" in window)) return;
    observer = new IntersectionObserver(function (entries) {
      if (!entries[0].isIntersecting) return;
      observer.disconnect();
      var link = document.getElementById("next-page");
      fetch(link.dataset.more, { credentials: "same-origin" })
        .then(function (r) { return r.text(); })
        .then(function (html) {
          document.getElementById("grid").insertAdjacentHTML("beforeend", html);
          var u = new URL(link.dataset.more, location.href), page = +u.searchParams.get("page");
          var pages = +(document.querySelector(".pager span").textContent.split(" of ")[1]);
          document.querySelector(".pager span").textContent = "Page 1–" + page + " of " + pages;
          if (page >= pages) { link.remove(); return; }
          u.searchParams.set("page", page + 1);
          link.dataset.more = u.pathname + u.search;
          u.pathname = "/"; u.searchParams.delete("grid_only");
          link.href = u.pathname + u.search;
          watchMore();
        });
    }, { rootMargin: "200px" });
    observer.observe(next);
  }
  watchMore();

  // -- upload: drop files or choose them; sent to the API -------------------
  var up = document.getElementById("upload");
  if (up) {
    var zone = document.getElementById("dropzone"), input = document.getElementById("files");
    var out = document.getElementById("upload-result");
    function send(files) {
      if (!files.length) { out.textContent = "Choose or drop at least one file."; return; }
      var data = new FormData();
      for (var i = 0; i < files.length; i++) data.append("files", files[i]);
      out.textContent = "Uploading " + files.length + " file(s)…";
      var meta = document.querySelector('meta[name="csrf-token"]');
      fetch("/api/upload", { method: "POST", body: data, credentials: "same-origin",
                             headers: { "X-CSRF-Token": meta ? meta.content : "" } })
        .then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
        .then(function (res) {
          var j = res[1];
          if (res[0] !== 200) { out.textContent = "Upload refused: " + (typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail)); return; }
          var s = j.ingest, html;
          if (s) {  // an admin's reply: the ingest summary and the assets
            html = "<p>Ingested " + s.files_seen + " file(s): " + s.new_assets + " new, " +
              s.duplicates + " duplicate(s), " + s.failed + " failed.</p>" +
              (j.already_in_library ? "<p>" + j.already_in_library + " file(s) were copies of assets already in the library.</p>" : "") + "<ul>";
            j.asset_ids.forEach(function (id) { html += '<li><a href="/assets/' + id + '">Asset ' + id + "</a></li>"; });
          } else {  // a member's reply: what was stored and what was refused
            html = "<p>Stored " + j.stored + " of " + j.files_seen + " image(s), " + j.failed + " refused.</p><ul>";
          }
          (j.failures || (s && s.failures) || []).forEach(function (f) {
            var li = document.createElement("li"); li.textContent = (f.file || f.path) + ": " + f.reason; html += li.outerHTML;
          });
          out.innerHTML = html + "</ul>";
        })
        .catch(function (e) { out.textContent = "Upload failed: " + e; });
    }
    up.addEventListener("submit", function (e) { e.preventDefault(); send(input.files); });
    ["dragenter", "dragover"].forEach(function (t) {
      zone.addEventListener(t, function (e) { e.preventDefault(); zone.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (t) {
      zone.addEventListener(t, function (e) { e.preventDefault(); zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (e) { send(e.dataTransfer.files); });
  }
})();
