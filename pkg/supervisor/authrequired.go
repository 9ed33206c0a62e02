package supervisor

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// A remote server that answers 401 Unauthorized is reachable, and wants a
// credential musterd does not hold for it. That is no failure: retrying
// on the backoff would only knock on the same door, and count failures
// the server never had. Its state is Auth Required (muster's), with no
// retry of its own: it stays so until its spec changes or a start is
// asked for (a restart, say), which tries again.

// AuthRequiredError is the error of a start whose server answered 401
// Unauthorized. Its fields come from the server's WWW-Authenticate
// challenge (RFC 6750, RFC 9728), where it sent one.
type AuthRequiredError struct {
	// URL is the server's, as declared.
	URL string
	// ResourceMetadata is the URL of the server's protected-resource
	// metadata (RFC 9728), which names its authorization servers; "" when
	// the challenge gave none.
	ResourceMetadata string
	// Scope is the scope the challenge asked for; "" for none.
	Scope string
	// msg is the error's text, scrubbed of the spec's secrets.
	msg string
}

func (e *AuthRequiredError) Error() string { return e.msg }

// challengeRecorder notes the first 401 answer of a remote server's
// connection, as its transport sees it: the go-sdk reports one as text.
type challengeRecorder struct {
	first atomic.Pointer[http.Header]
}

func (c *challengeRecorder) note(resp *http.Response) {
	if resp.StatusCode == http.StatusUnauthorized {
		header := resp.Header.Clone()
		c.first.CompareAndSwap(nil, &header)
	}
}

// authRequired is the error of inst's start when its server answered 401
// Unauthorized, nil when it did not.
func (inst *instance) authRequired() *AuthRequiredError {
	if inst.challenges == nil {
		return nil
	}
	header := inst.challenges.first.Load()
	if header == nil {
		return nil
	}
	e := &AuthRequiredError{URL: inst.spec.URL}
	// A malformed challenge still means 401: the parameters are then
	// unknown, not the state.
	challenges, _ := oauthex.ParseWWWAuthenticate(header.Values("WWW-Authenticate"))
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			e.ResourceMetadata, e.Scope = c.Params["resource_metadata"], c.Params["scope"]
			break
		}
	}
	msg := fmt.Sprintf("authorization required: %s answered 401 Unauthorized", inst.spec.URL)
	var more []string
	if e.ResourceMetadata != "" {
		more = append(more, "resource metadata "+e.ResourceMetadata)
	}
	if e.Scope != "" {
		more = append(more, "scope "+e.Scope)
	}
	if len(more) > 0 {
		msg += " (" + strings.Join(more, ", ") + ")"
	}
	if inst.user != nil {
		msg += "; it refused the user's token" // users.go
	} else {
		msg += "; musterd holds no credential for it"
	}
	e.msg = inst.scrub.clean(msg)
	return e
}
