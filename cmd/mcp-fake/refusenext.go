package main

import (
	"net/http"
	"sync/atomic"
)

// A protected server refuses, once, the next request after
// POST /refuse-next, whatever its token: as a resource server does that
// rotated its keys or revoked a token, so that a test sees its client
// get a new token and try once more.

// refuseNextHandler arms the refusal of the next guarded request.
func refuseNextHandler(armed *atomic.Bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		armed.Store(true)
		w.WriteHeader(http.StatusNoContent)
	}
}

// refusedOnce answers 401, with the challenge naming metadataURL and an
// invalid_token error, when armed was set; it disarms it.
func refusedOnce(armed *atomic.Bool, w http.ResponseWriter, metadataURL string) bool {
	if !armed.CompareAndSwap(true, false) {
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+metadataURL+`", error="invalid_token", error_description="refused once (POST /refuse-next)"`)
	http.Error(w, "refused once", http.StatusUnauthorized)
	return true
}
