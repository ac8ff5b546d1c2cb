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

  // -- search by picture: drop, paste or pick one; POST /api/similar ---------
  // (the picture is hashed and discarded, never ingested; the answer is
  // what the user may read, in the words of 'loupe similar --file')
  var byPic = document.getElementById("by-picture");
  function csrfHeader() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return { "X-CSRF-Token": meta ? meta.content : "" };
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function showSimilar(status, j, name) {
    results.textContent = "";
    if (status !== 200) {
      var msg = typeof j.detail === "string" ? j.detail : JSON.stringify(j.detail);
      var p = el("p", "error", "Not searched by " + name + ": " + msg);
      p.setAttribute("role", "alert");
      results.appendChild(p);
      return;
    }
    var v = el("p", "verdict verdict-" + j.verdict, j.verdict_text);
    v.id = "verdict";
    v.dataset.verdict = j.verdict; v.dataset.total = j.total; v.dataset.q = j.query;
    results.appendChild(v);
    (j.notices || []).forEach(function (n) { results.appendChild(el("p", "notice", n)); });
    var grid = el("ul", "grid"); grid.id = "grid";
    j.hits.forEach(function (h) {
      var li = el("li", "tile"), a = el("a");
      a.href = "/assets/" + h.asset_id;
      a.dataset.rank = h.rank;
      var img = el("img"); img.src = h.thumbnail_url; img.alt = ""; img.width = 160; img.height = 160;
      a.appendChild(img);
      a.appendChild(el("span", "title", h.title));
      a.appendChild(el("span", "distance", h.distance !== null ? h.distance + " bits"
                                                              : "looks alike (image lane)"));
      li.appendChild(a); grid.appendChild(li);
    });
    results.appendChild(grid);
  }
  function searchByPicture(file) {
    if (!file) return;
    var name = file.name || "pasted picture";
    var data = new FormData();
    data.append("file", file, name);
    results.textContent = "";
    results.appendChild(el("p", "notice", "Looking for pictures like " + name + "…"));
    fetch("/api/similar", { method: "POST", body: data, credentials: "same-origin",
                            headers: csrfHeader() })
      .then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
      .then(function (res) { showSimilar(res[0], res[1], name); })
      .catch(function (e) { results.textContent = "Search by picture failed: " + e; });
  }
  if (byPic && results) {
    var pick = document.getElementById("picture");
    byPic.addEventListener("submit", function (e) { e.preventDefault(); searchByPicture(pick.files[0]); });
    pick.addEventListener("change", function () { searchByPicture(pick.files[0]); });
    ["dragenter", "dragover"].forEach(function (t) {
      byPic.addEventListener(t, function (e) { e.preventDefault(); byPic.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (t) {
      byPic.addEventListener(t, function (e) { e.preventDefault(); byPic.classList.remove("over"); });
    });
    byPic.addEventListener("drop", function (e) { searchByPicture(e.dataTransfer.files[0]); });
    document.addEventListener("paste", function (e) {
      var files = (e.clipboardData && e.clipboardData.files) || [];
      for (var i = 0; i < files.length; i++) {
        if (/^image\//.test(files[i].type)) { e.preventDefault(); searchByPicture(files[i]); return; }
      }
    });
  }

  // -- the status page follows the server's background work ------------------
  var bg = document.getElementById("background");
  if (bg && bg.dataset.live) {
    var poll = function () {
      fetch("/api/status", { credentials: "same-origin" })
        .then(function (r) { return r.json(); })
        .then(function (s) {
          document.getElementById("background-now").textContent = s.background_text;
          var w = document.getElementById("waiting"), lanes = Object.keys(s.vectors_waiting || {});
          w.textContent = "";
          lanes.forEach(function (lane) {
            var n = s.vectors_waiting[lane];
            w.appendChild(el("p", "", lane + " lane: " + n.toLocaleString("en") + " " +
                             (n === 1 ? "asset still waits" : "assets still wait") + " for vectors."));
          });
          if (!lanes.length) w.appendChild(el("p", "", "No asset waits for vectors."));
          setTimeout(poll, 2000);
        })
        .catch(function () { setTimeout(poll, 10000); });
    };
    setTimeout(poll, 2000);
  }

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
