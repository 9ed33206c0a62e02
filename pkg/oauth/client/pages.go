package client

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"

	"github.com/musterd/musterd/pkg/redact"
)

// The browser's side of a login: the start URL sends it to the provider,
// the callback finishes the login and answers a small page, muster's
// texts. Any refusal is a 400 with the reason in the user's words; the
// log gets the cause, never a secret.

var (
	successPage = template.Must(template.New("success").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8"><title>Authentication Successful - musterd</title></head>
<body><h1>Authentication Successful</h1>
<p>You have been authenticated to <strong>{{.}}</strong>.</p>
<p>You can now close this window and return to your IDE.</p>
<p>Retry the previous command to continue.</p></body></html>
`))
	errorPage = template.Must(template.New("error").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8"><title>Authentication Failed - musterd</title></head>
<body><h1>Authentication Failed</h1>
<p>{{.}}</p></body></html>
`))
)

// serveStart sends the browser to the authorization URL stored with the
// state. The state stays for the callback; only a known, live one leads
// anywhere, so the request cannot steer the redirect.
func (c *Client) serveStart(w http.ResponseWriter, r *http.Request) {
	nonce := r.URL.Query().Get("state")
	if nonce == "" {
		c.page(w, http.StatusBadRequest, errorPage, textBadStart)
		return
	}
	st, ok, err := c.store.State(r.Context(), nonce, c.now())
	if err != nil || !ok || st.AuthURL == "" {
		if err != nil {
			c.log.Warn("oauth login start: read the state store", "error", redact.String(err.Error()))
		}
		c.page(w, http.StatusBadRequest, errorPage, textExpired)
		return
	}
	http.Redirect(w, r, st.AuthURL, http.StatusFound)
}

// serveCallback finishes a login and tells OnLogin.
func (c *Client) serveCallback(w http.ResponseWriter, r *http.Request) {
	st, err := c.finish(r.Context(), r.URL.Query())
	if err != nil {
		page := textFailed
		var le *errLogin
		if errors.As(err, &le) {
			page = le.page
		}
		c.log.Warn("oauth login refused", "server", st.Server, "issuer", st.Issuer, "owner", ownerLog(st.Owner), "cause", redact.String(err.Error()))
		c.page(w, http.StatusBadRequest, errorPage, page)
		return
	}
	c.log.Info("oauth login finished", "server", st.Server, "issuer", st.Issuer, "owner", ownerLog(st.Owner))
	if c.opts.OnLogin != nil {
		// Told before the page says the user may go on (Options.OnLogin).
		c.opts.OnLogin(Login{Owner: st.Owner, Issuer: st.Issuer, Server: st.Server})
	}
	c.page(w, http.StatusOK, successPage, st.Server)
}

// page answers an HTML page, with headers that keep it out of frames
// and caches.
func (c *Client) page(w http.ResponseWriter, status int, t *template.Template, data string) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
