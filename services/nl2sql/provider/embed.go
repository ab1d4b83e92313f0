package provider

import (
	"html/template"
	"net/http"
)

// embedPage is the chat page the embed URL opens: it asks questions in the chat with the
// temporary token (never the API key) and shows the SQL run and the rows.
var embedPage = template.Must(template.New("embed").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>ShopMind NL2SQL</title>
<meta name="referrer" content="no-referrer">
<style>body{font:14px sans-serif;margin:1em}pre{background:#f4f4f4;padding:.5em;overflow:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>
</head><body>
<h3>Ask your data</h3>
<form id="f"><input id="q" size="60" maxlength="2000" placeholder="GMV by shop over the last 7 days" autofocus> <button>Ask</button></form>
<div id="out"></div>
<script>
const chatId = {{.ChatID}}, token = {{.Token}};
document.getElementById('f').onsubmit = async (e) => {
  e.preventDefault();
  const out = document.getElementById('out'), q = document.getElementById('q').value;
  const r = await fetch('/v1/chats/' + encodeURIComponent(chatId) + '/messages', {method: 'POST',
    headers: {'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'}, body: JSON.stringify({question: q})});
  const m = await r.json();
  const div = document.createElement('div');
  if (!r.ok) { div.textContent = 'Error: ' + (m.message || r.status); out.prepend(div); return; }
  const p = document.createElement('p'); p.textContent = m.content.text; div.append(p);
  const pre = document.createElement('pre'); pre.textContent = m.content.sql; div.append(pre);
  const t = document.createElement('table'), h = t.insertRow();
  (m.content.columns || []).forEach(c => { const th = document.createElement('th'); th.textContent = c; h.append(th); });
  (m.content.rows || []).forEach(row => { const tr = t.insertRow(); row.forEach(v => { tr.insertCell().textContent = v; }); });
  div.append(t); out.prepend(div);
};
</script></body></html>`))

// embed serves the chat page for ?chatId=&apiKey= (the token is checked by the API calls
// the page makes, not here: the page itself holds no data).
func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	chatID, token := r.URL.Query().Get("chatId"), r.URL.Query().Get("apiKey")
	if !idRe.MatchString(chatID) || token == "" || len(token) > 4096 {
		http.Error(w, "embed needs chatId and apiKey", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
	_ = embedPage.Execute(w, map[string]string{"ChatID": chatID, "Token": token})
}
