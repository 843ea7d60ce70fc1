// The live page of `clampai serve` (`GET /`, docs/SERVE.md): compiled in, holding no secret. Its
// one style (the HTML report's, clampai/report/live_charts.hpp, and a few rules of its own) and
// its one script are inline, allowed by their SHA-256 in the Content-Security-Policy, which
// allows nothing else but requests to the server itself. The script asks for the token once,
// keeps it in the tab's sessionStorage, and polls `GET /v1/live` with it every second; the
// charts it shows are the report's, drawn by the server (RunCharts), not by the page.
#include <openssl/evp.h>

#include <array>
#include <string>

#include "clampai/report/live_charts.hpp"
#include "live.hpp"

namespace clampai::server {

namespace {

// The page's own rules, after the report's stylesheet.
constexpr const char* kLiveStyle = R"CSS(
form.login{margin:1rem 0;padding:.75rem 1rem;border:1px solid var(--line)}
form.login input{font:inherit;padding:.2rem .4rem;min-width:22rem}
form.login button,button.plain{font:inherit;padding:.2rem .8rem}
#status{min-height:1.5em}
section.task h2 .badge{font-size:.8rem;vertical-align:middle}
table.recent td.outcome-executed,table.recent td.outcome-approved{color:#00684d;font-weight:600}
table.recent td.outcome-rejected,table.recent td.outcome-denied{color:#a33f00;font-weight:600}
table.recent td.outcome-pending,table.recent td.outcome-rolled_back{color:#7a5400;font-weight:600}
)CSS";

// The page's script. Every text from the server goes into the page as text (textContent); the
// charts are the server's HTML fragments (RunCharts: markup and numbers only, every text in them
// escaped), parsed by DOMParser, which runs nothing, and replaced only when they change.
constexpr const char* kLiveScript = R"JS(
(function(){
  "use strict";
  var KEY="clampai-serve-token",PERIOD=1000;
  var form=document.getElementById("login"),input=document.getElementById("token");
  var forget=document.getElementById("forget"),status=document.getElementById("status");
  var tasks=document.getElementById("tasks"),pools=document.getElementById("pools");
  var token=null,timer=null,running=false,round=0,drawn=new WeakMap();
  function read(){try{return sessionStorage.getItem(KEY);}catch(e){return null;}}
  function keep(t){try{if(t===null)sessionStorage.removeItem(KEY);else sessionStorage.setItem(KEY,t);}catch(e){}}
  function say(text,bad){status.textContent=text;status.className=bad?"status-bad":"";}
  function el(tag,text,cls){var e=document.createElement(tag);if(text!==undefined&&text!==null)e.textContent=String(text);if(cls)e.className=cls;return e;}
  function table(cls,heads,rows){var t=el("table",null,cls),th=el("thead"),tb=el("tbody"),hr=el("tr");
    heads.forEach(function(h){var c=el("th",h);c.setAttribute("scope","col");hr.appendChild(c);});th.appendChild(hr);t.appendChild(th);
    rows.forEach(function(r){tb.appendChild(r);});t.appendChild(tb);return t;}
  function facts(pairs){var t=el("table",null,"facts"),tb=el("tbody");pairs.forEach(function(p){var tr=el("tr"),h=el("th",p[0]);h.setAttribute("scope","row");tr.appendChild(h);var d=el("td",p[1]);if(p[2])d.dataset.figure=p[2];tr.appendChild(d);tb.appendChild(tr);});t.appendChild(tb);return t;}
  function fragment(html){var doc=new DOMParser().parseFromString("<!DOCTYPE html><body>"+html,"text/html"),f=document.createDocumentFragment();
    while(doc.body.firstChild)f.appendChild(document.adoptNode(doc.body.firstChild));return f;}
  function chart(box,html){if(drawn.get(box)===html)return;drawn.set(box,html);box.replaceChildren(fragment(html));}
  function when(us){var d=new Date(us/1000);return isNaN(d.getTime())?"":d.toISOString().replace("T"," ").replace(/\.\d+Z$/,"Z");}
  function section(name){var id="task-"+name,s=document.getElementById(id);if(s)return s;
    s=el("section",null,"task");s.id=id;s.dataset.task=name;s.setAttribute("aria-labelledby",id+"-h");
    var h=el("h2");h.id=id+"-h";h.appendChild(el("span","Task "+name));s.appendChild(h);
    [["Budget","facts","spend"],["Decisions","decisions","timeline"],["Rejections by reason","reasons"],["Recent decisions","recent"]].forEach(function(part){
      s.appendChild(el("h3",part[0]));part.slice(1).forEach(function(p){s.appendChild(el("div",null,"part-"+p));});});
    tasks.appendChild(s);return s;}
  function show(t){var s=section(t.task),st=t.status,b=st.budget;
    s.dataset.events=String(t.events);
    var h=s.querySelector("h2");while(h.childNodes.length>1)h.removeChild(h.lastChild);
    if(st.sealed){h.appendChild(document.createTextNode(" "));h.appendChild(el("span","sealed","badge bad"));}
    if(st.goal_reached){h.appendChild(document.createTextNode(" "));h.appendChild(el("span","✓ goal reached","badge ok"));}
    s.querySelector(".part-facts").replaceChildren(facts([["net spend",b.net,"net"],["gross spend",b.gross,"gross"],["budget",b.total,"total"],["remaining",b.remaining,"remaining"],
      ["steps",st.steps+" of at most "+st.step_limit+" (T2), emergency steps "+st.emergency_steps,"steps"],["trace entries",st.trace_entries,"entries"]]));
    s.querySelector(".part-decisions").replaceChildren(facts([["approved",t.decisions.approved,"approved"],["rejected",t.decisions.rejected,"rejected"],["rolled back",t.decisions.rollbacks,"rollbacks"]]));
    chart(s.querySelector(".part-spend"),t.charts.spend);
    chart(s.querySelector(".part-timeline"),t.charts.timeline);
    chart(s.querySelector(".part-reasons"),t.charts.reasons);
    var rows=t.recent.map(function(e){var tr=el("tr");tr.dataset.id=String(e.id);tr.dataset.action=e.action;tr.dataset.outcome=e.outcome;tr.dataset.endpoint=e.endpoint;
      tr.appendChild(el("td",e.id,"num"));tr.appendChild(el("td",when(e.time_us)));tr.appendChild(el("td",e.endpoint));
      var a=el("td");a.appendChild(el("code",e.action));tr.appendChild(a);tr.appendChild(el("td",e.outcome.replace("_"," "),"outcome-"+e.outcome));
      tr.appendChild(el("td",e.reasons.map(function(r){return r.code+": "+r.message;}).join("; ")));
      tr.appendChild(el("td",e.cost,"num"));tr.appendChild(el("td",e.principal===null?"":e.principal));
      tr.appendChild(el("td",e.sequence===null?"":e.sequence,"num"));return tr;});
    var box=s.querySelector(".part-recent");
    if(rows.length===0)box.replaceChildren(el("p","No decision yet.","note"));
    else{var d=el("div",null,"scroll");d.appendChild(table("list recent",["#","time (UTC)","endpoint","action","outcome","reasons","cost","principal","trace entry"],rows));box.replaceChildren(d);}}
  function showPools(list){pools.hidden=list.length===0;if(list.length===0)return;
    var rows=list.map(function(p){var tr=el("tr");tr.dataset.pool=p.name;[p.name,p.parent===null?"":p.parent,p.total,p.net,p.gross,p.remaining,p.tasks].forEach(function(c,i){tr.appendChild(el("td",c,i>1?"num":""));});return tr;});
    pools.querySelector(".part-pools").replaceChildren(table("list pools",["pool","parent","total","net","gross","remaining","tasks"],rows));}
  function render(doc){var seen={};doc.tasks.forEach(function(t){seen["task-"+t.task]=true;show(t);});
    Array.prototype.slice.call(tasks.children).forEach(function(s){if(!seen[s.id])s.remove();});
    showPools(doc.pools);
    if(doc.tasks.length===0)say("No task you may read is served.",false);
    else say("Updated "+new Date().toISOString().replace("T"," ").replace(/\.\d+Z$/,"Z")+" ("+doc.tasks.length+" task"+(doc.tasks.length===1?"":"s")+").",false);
    document.body.dataset.updates=String(Number(document.body.dataset.updates||"0")+1);}
  function poll(){timer=null;var mine=round,h={"Accept":"application/json"};if(token)h.Authorization="Bearer "+token;
    fetch("/v1/live",{headers:h,cache:"no-store",credentials:"omit",redirect:"error"}).then(function(r){
      if(mine!==round)return;
      if(r.status===401){stop("The server refused the token (401): enter it again.");return;}
      if(r.status===403){stop("This token may not read any task (403: the right `read` is needed).");return;}
      return r.json().then(function(doc){if(!r.ok)throw new Error(doc&&doc.error?doc.error.message:"HTTP "+r.status);if(running&&mine===round)render(doc);});
    }).catch(function(e){if(mine===round)say("Cannot read the server ("+e.message+"); trying again.",true);})
    .then(function(){if(running&&mine===round)timer=setTimeout(poll,PERIOD);});}
  function start(t){round++;token=t;keep(t);running=true;form.hidden=true;forget.hidden=false;say("Connecting…",false);poll();}
  function stop(why){round++;running=false;if(timer!==null)clearTimeout(timer);timer=null;token=null;keep(null);
    form.hidden=false;forget.hidden=true;tasks.replaceChildren();pools.hidden=true;say(why,true);input.value="";input.focus();}
  form.addEventListener("submit",function(e){e.preventDefault();start(input.value.trim());input.value="";});
  forget.addEventListener("click",function(){stop("The token is forgotten.");});
  var saved=read();
  if(saved!==null)start(saved);else input.focus();
})();
)JS";

// `sha256-BASE64` of `text`, as a Content-Security-Policy source names an inline element.
std::string csp_hash(const std::string& text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("cannot compute SHA-256");
  std::string b64(4 * ((size + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(
      reinterpret_cast<unsigned char*>(b64.data()), digest.data(), static_cast<int>(size));
  b64.resize(static_cast<std::size_t>(n));
  return "'sha256-" + b64 + "'";
}

struct Page {
  std::string html;
  std::string policy;
};

const Page& page() {
  static const Page p = [] {
    const std::string style = std::string(report::html_style()) + kLiveStyle;
    const std::string script = kLiveScript;
    Page out;
    out.policy = "default-src 'none'; script-src " + csp_hash(script) + "; style-src " +
                 csp_hash(style) +
                 "; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                 "frame-ancestors 'none'";
    out.html =
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"referrer\" content=\"no-referrer\">\n"
        "<meta name=\"generator\" content=\"clampai " CLAMPAI_VERSION
        "\">\n"
        "<title>ClampAI serve: live</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>" +
        style +
        "</style>\n</head>\n<body>\n<a class=\"skip\" href=\"#main\">Skip to the tasks</a>\n"
        "<header><h1>ClampAI serve: live</h1><p id=\"status\" role=\"status\" "
        "aria-live=\"polite\"></p></header>\n<main id=\"main\">\n"
        "<form id=\"login\" class=\"login\" autocomplete=\"off\"><p><label for=\"token\">The "
        "server's bearer token</label> <input id=\"token\" name=\"token\" type=\"password\" "
        "autocomplete=\"off\" spellcheck=\"false\"> <button type=\"submit\">Watch</button></p>"
        "<p class=\"note\">It needs the right <code>read</code>; it stays in this tab "
        "(sessionStorage) and goes only to this server, in the <code>Authorization</code> "
        "header. Leave it empty for a server without authentication.</p></form>\n"
        "<p><button type=\"button\" id=\"forget\" class=\"plain\" hidden>Forget the "
        "token</button></p>\n<section id=\"pools\" aria-labelledby=\"pools-h\" hidden><h2 "
        "id=\"pools-h\">Budget pools</h2><div class=\"part-pools\"></div></section>\n"
        "<div id=\"tasks\"></div>\n</main>\n<footer>Served by <code>clampai "
        "serve</code> " CLAMPAI_VERSION
        ": each task's budget, decisions and rejections since the server began serving it, "
        "read from <code>GET /v1/live</code> every second; the charts are those of "
        "<code>clampai report</code>.</footer>\n<script>" +
        script + "</script>\n</body>\n</html>\n";
    return out;
  }();
  return p;
}

}  // namespace

const std::string& live_page_policy() { return page().policy; }

Response live_page() {
  Response r{200, "text/html; charset=utf-8", page().html, {}};
  r.headers = {{"Content-Security-Policy", page().policy},
               {"X-Content-Type-Options", "nosniff"},
               {"X-Frame-Options", "DENY"},
               {"Referrer-Policy", "no-referrer"},
               {"Cache-Control", "no-store"}};
  return r;
}

}  // namespace clampai::server
