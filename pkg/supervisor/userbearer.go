package supervisor

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/oauth2"
)

// A user connection (users.go) carries its user's bearer token on every
// HTTP request, asked of the user's token source for each one: a token the
// source refreshed is used from the next request on, without a new
// session. The token is set on the request as it leaves, never kept in a
// spec, a header map or an error: the only copies musterd keeps are the
// source's and, to scrub them from messages, the connection's secretSet.
//
// A 401 answer means the server refused the token. A source that can be
// told so (RefusedTokenSource: a provider's token, which it then refreshes
// whatever its expiry says) is told, and the source is asked again: a
// token other than the refused one gets the request one more try. A 401 to that too, or the same
// token again, is the server's last word: the user's token is no good,
// and the connection ends (errTokenRefused) for the user to log in again.
// A source that gives no token (its refresh failed) ends it the same way.

// errTokenRefused is the cause that ends a user connection whose server
// refused its user's token, or whose token source gave none.
var errTokenRefused = errors.New("the server refused the user's token")

// RefusedTokenSource is a token source that can be told a server refused
// a token it gave, so that it gets another (refreshes, exchanges again)
// although the token is not yet expired by the clock. Refused must not
// drop a token other than the one named: another request may have got a
// new one meanwhile.
type RefusedTokenSource interface {
	oauth2.TokenSource
	Refused(accessToken string)
}

// bearer is a user connection's credential: its user's token source, and
// the tokens it handed out.
type bearer struct {
	source atomic.Pointer[oauth2.TokenSource] // replaced by a later ConnectAs of the same user
	seen   *secretSet
	// refuse ends the connection with errTokenRefused and why (scrubbed
	// by the connection's instance).
	refuse func(why string)
}

func newBearer(source oauth2.TokenSource) *bearer {
	b := &bearer{seen: &secretSet{}, refuse: func(string) {}}
	b.use(source)
	return b
}

// use makes source the one asked from the next request on.
func (b *bearer) use(source oauth2.TokenSource) { b.source.Store(&source) }

// token asks the source for the access token to send now.
func (b *bearer) token() (string, error) {
	tok, err := (*b.source.Load()).Token()
	if err != nil {
		return "", err
	}
	if tok == nil || tok.AccessToken == "" {
		return "", errors.New("it gave an empty token")
	}
	b.seen.add(tok.AccessToken)
	return tok.AccessToken, nil
}

// roundTrip sends req, whose other headers are set, with the user's token,
// and settles a 401 as the comment at the top of this file says. A 401
// that stands is returned as it came, so that the go-sdk fails what it
// was for; the connection's context has been cancelled by then.
func (b *bearer) roundTrip(base http.RoundTripper, req *http.Request, challenges *challengeRecorder) (*http.Response, error) {
	tok, err := b.token()
	if err != nil {
		b.refuse("its token source gave no token: " + err.Error())
		return nil, fmt.Errorf("no token for the user's connection: %w", errTokenRefused)
	}
	// A retry needs the body again: the go-sdk's requests can give it
	// (GetBody), and a GET has none.
	retryable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	var retry *http.Request
	if retryable {
		retry = req.Clone(req.Context())
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if refusable, ok := (*b.source.Load()).(RefusedTokenSource); ok {
		refusable.Refused(tok)
	}
	if again, err := b.token(); err == nil && again != tok && retryable {
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err == nil {
				retry.Body = body
			} else {
				retryable = false
			}
		}
		if retryable {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
			retry.Header.Set("Authorization", "Bearer "+again)
			resp, err = base.RoundTrip(retry)
			if err != nil || resp.StatusCode != http.StatusUnauthorized {
				return resp, err
			}
		}
	}
	challenges.note(resp)
	b.refuse("401 Unauthorized to the token its source gave, asked twice")
	return resp, nil
}

// maxSeenTokens bounds the tokens a user connection remembers to scrub:
// the current one and those it refreshed from, which a server's error may
// still echo.
const maxSeenTokens = 8

// secretSet holds values to scrub from messages that no spec holds: a
// user connection's tokens. Its methods are safe on a nil set, which
// scrubs nothing.
type secretSet struct {
	mu     sync.Mutex
	values []string // most recent last
}

func (s *secretSet) add(v string) {
	if len(v) < minScrubbedLength {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.values, v); i >= 0 {
		s.values = slices.Delete(s.values, i, i+1)
	}
	s.values = append(s.values, v)
	if len(s.values) > maxSeenTokens {
		s.values = slices.Delete(s.values, 0, len(s.values)-maxSeenTokens)
	}
}

// scrub replaces every value of s in msg, longest first.
func (s *secretSet) scrub(msg string) string {
	if s == nil {
		return msg
	}
	s.mu.Lock()
	values := slices.Clone(s.values)
	s.mu.Unlock()
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		msg = strings.ReplaceAll(msg, v, "[redacted]")
	}
	return msg
}
