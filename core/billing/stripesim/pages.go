package stripesim

import (
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The hosted payment page, the receipts and a dashboard with the knobs:
// plain forms, no script.

var pages = template.Must(template.New("").Funcs(template.FuncMap{"price": price}).Parse(`
{{define "head"}}<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.}} · simulated Stripe</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1a1f36}
.card{border:1px solid #e3e8ee;border-radius:8px;padding:1.5rem;margin:1rem 0}
.amount{font-size:2rem;font-weight:600} .note{color:#697386;font-size:.9rem}
button{font:inherit;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #cdd4dc;background:#fff;cursor:pointer;margin:.2rem}
button.primary{background:#635bff;color:#fff;border-color:#635bff}
.problem{color:#b3093c;font-weight:600} table{border-collapse:collapse;width:100%;font-size:.85rem}
td,th{border-bottom:1px solid #e3e8ee;padding:.3rem;text-align:left;vertical-align:top} code{font-size:.8rem}
</style></head><body>
<p class="note">Simulated Stripe · test mode · no card is charged</p>{{end}}

{{define "pay"}}{{template "head" "Pay"}}
<main class="card">
  <p>{{.S.Name}}</p>
  <p class="amount" id="amount">{{price .S.Amount .S.Currency}}</p>
  {{if .S.Email}}<p>Email: {{.S.Email}}</p>{{end}}
  {{if eq .S.Status "open"}}
    {{if .S.Declined}}<p class="problem" id="declined">Your card was declined. Try another card, or go back.</p>{{end}}
    <p>Card: 4242 4242 4242 4242 · 12/34 · 123</p>
    <form method="post">
      <button class="primary" name="action" value="pay" id="pay">Pay {{price .S.Amount .S.Currency}}</button>
      <button name="action" value="decline" id="decline">Decline</button>
      <button name="action" value="later" id="later">Pay later (bank debit)</button>
    </form>
    <p><a href="{{.S.Cancel}}" id="back">← Back</a></p>
  {{else if eq .S.Status "complete"}}
    {{if eq .S.PaymentStatus "paid"}}<p id="state">Paid. Thank you.</p><p><a href="{{.S.Success}}">Return to the merchant</a></p>
    {{else if eq .Intent "processing"}}<p id="state">Your bank debit is on its way.</p>
      <form method="post" action="/sessions/{{.S.ID}}/settle">
        <button class="primary" name="ok" value="true" id="settle-ok">The debit succeeds</button>
        <button name="ok" value="false" id="settle-fail">The debit fails</button>
      </form><p><a href="{{.S.Success}}">Return to the merchant</a></p>
    {{else}}<p id="state" class="problem">The bank debit failed.</p>{{end}}
  {{else}}<p id="state">This payment page has expired.</p>{{end}}
</main></body></html>{{end}}

{{define "receipt"}}{{template "head" "Receipt"}}
<main class="card"><h1>Receipt</h1>
<p class="amount">{{price .Amount .Currency}}</p>
<p>Charge <code>{{.ID}}</code> · payment <code>{{.Intent}}</code></p>
{{if .Refunded}}<p>Refunded: {{price .Refunded .Currency}}</p>{{end}}
</main></body></html>{{end}}

{{define "dashboard"}}{{template "head" "Dashboard"}}
<h1>Dashboard</h1>
<form method="post" action="/faults" class="card"><h2>Delivery faults</h2>
{{with .Faults}}
<label><input type="checkbox" name="twice" {{if .Twice}}checked{{end}}> deliver each event twice, at once</label><br>
<label>deliver late by <input name="delay" value="{{.Delay}}" size="6"></label><br>
<label><input type="checkbox" name="hold" {{if .Hold}}checked{{end}}> hold events (release them out of order)</label><br>
<label><input type="checkbox" name="bad_signature" {{if .BadSignature}}checked{{end}}> sign with a wrong secret</label><br>
<label><input type="checkbox" name="stale" {{if .Stale}}checked{{end}}> sign with a stale timestamp</label><br>
<label><input type="checkbox" name="wrong_amount" {{if .WrongAmount}}checked{{end}}> send a wrong amount</label><br>
<label><input type="checkbox" name="drop" {{if .Drop}}checked{{end}}> lose events (never send them)</label><br>
<label><input type="checkbox" name="stall_api" {{if .StallAPI}}checked{{end}}> stall the API's reads</label><br>
{{end}}
<button class="primary">Set</button></form>
<form method="post" action="/release"><button>Release held events ({{.Held}})</button></form>
<h2>Checkout Sessions</h2><table><tr><th>Session</th><th>Order</th><th>Amount</th><th>Status</th><th></th></tr>
{{range .Sessions}}<tr><td><a href="/pay/{{.ID}}"><code>{{.ID}}</code></a></td><td><code>{{.ClientRef}}</code></td>
<td>{{price .Amount .Currency}}</td><td>{{.Status}} / {{.PaymentStatus}}</td><td>
<form method="post" action="/sessions/{{.ID}}/refund"><button>Refund</button> <input name="amount" size="6" placeholder="all"></form>
<form method="post" action="/sessions/{{.ID}}/expire"><button>Expire</button></form></td></tr>{{end}}</table>
<h2>Events</h2><table><tr><th>Event</th><th>Type</th><th>Deliveries</th><th></th></tr>
{{range .Events}}<tr><td><code>{{.ID}}</code></td><td>{{.Type}}</td><td>{{range .Attempts}}{{.At.Format "15:04:05"}} {{if .Error}}{{.Error}}{{else}}{{.Status}}{{end}}<br>{{end}}</td>
<td><form method="post" action="/events/{{.ID}}/resend"><button>Resend</button></form></td></tr>{{end}}</table>
</body></html>{{end}}
`))

// price writes an amount in the smallest unit (cents) with its currency.
func price(amount int64, currency string) string {
	exp := 2
	switch {
	case strings.Contains(" bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf ", " "+currency+" "):
		exp = 0
	case strings.Contains(" bhd jod kwd omr tnd ", " "+currency+" "):
		exp = 3
	}
	s := fmt.Sprintf("%0*d", exp+1, amount)
	if exp > 0 {
		s = s[:len(s)-exp] + "." + s[len(s)-exp:]
	}
	return s + " " + strings.ToUpper(currency)
}

func render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (s *Server) payPage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ss := s.sessions[r.PathValue("id")]
	var data struct {
		S      session
		Intent string
	}
	if ss != nil {
		data.S = *ss
		if pi := s.intents[ss.Intent]; pi != nil {
			data.Intent = pi.Status
		}
	}
	s.mu.Unlock()
	if ss == nil {
		http.Error(w, "no such payment page", http.StatusNotFound)
		return
	}
	render(w, "pay", data)
}

// payAction is the hosted page's buttons: Pay sends the person to the
// merchant's success page, Decline shows the card declined (the page stays
// open, as Stripe's does), Pay later completes the checkout with a payment
// on its way.
func (s *Server) payAction(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var to string
	err := s.act(id, func(ss *session) error {
		switch r.PostFormValue("action") {
		case "pay", "later":
			if err := s.pay(ss, r.PostFormValue("action") == "later"); err != nil {
				return err
			}
			to = ss.Success
		case "decline":
			if ss.Status != "open" {
				return fmt.Errorf("the session is %s", ss.Status)
			}
			ss.Declined = true
			to = "/pay/" + ss.ID
		default:
			return fmt.Errorf("unknown action")
		}
		return nil
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (s *Server) sessionAction(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var err error
	switch r.PathValue("action") {
	case "settle":
		err = s.Settle(id, r.PostFormValue("ok") == "true")
	case "expire":
		err = s.Expire(id)
	case "refund":
		var amount int64
		if a := strings.TrimSpace(r.PostFormValue("amount")); a != "" {
			amount, err = strconv.ParseInt(a, 10, 64)
		}
		if err == nil {
			err = s.Refund(id, amount)
		}
	default:
		err = fmt.Errorf("unknown action")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	back := r.Referer()
	if back == "" {
		back = "/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func (s *Server) receipt(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c := s.charges[r.PathValue("id")]
	var cp charge
	if c != nil {
		cp = *c
	}
	s.mu.Unlock()
	if c == nil {
		http.Error(w, "no such receipt", http.StatusNotFound)
		return
	}
	render(w, "receipt", cp)
}

func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var data struct {
		Faults   Faults
		Held     int
		Sessions []session
	}
	data.Faults, data.Held = s.faults, len(s.held)
	for _, id := range slices.Backward(s.order) {
		data.Sessions = append(data.Sessions, *s.sessions[id])
	}
	s.mu.Unlock()
	evs := s.Events()
	slices.Reverse(evs)
	render(w, "dashboard", struct {
		Faults   Faults
		Held     int
		Sessions []session
		Events   []EventInfo
	}{data.Faults, data.Held, data.Sessions, evs})
}

func (s *Server) setFaults(w http.ResponseWriter, r *http.Request) {
	on := func(k string) bool { return r.PostFormValue(k) != "" }
	f := Faults{Twice: on("twice"), Hold: on("hold"), BadSignature: on("bad_signature"), Stale: on("stale"),
		WrongAmount: on("wrong_amount"), Drop: on("drop"), StallAPI: on("stall_api")}
	if d := strings.TrimSpace(r.PostFormValue("delay")); d != "" {
		var err error
		if f.Delay, err = time.ParseDuration(d); err != nil {
			http.Error(w, "delay: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	s.SetFaults(f)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	s.Release()
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) resend(w http.ResponseWriter, r *http.Request) {
	if !s.Resend(r.PathValue("id")) {
		http.Error(w, "no such event", http.StatusNotFound)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
