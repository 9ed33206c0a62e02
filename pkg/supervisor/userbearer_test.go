package supervisor

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// queuedSource gives its tokens in turn, the last for good; an empty
// string is an error.
type queuedSource struct {
	mu    sync.Mutex
	queue []string
	asked int
}

func (s *queuedSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	tok := s.queue[0]
	if len(s.queue) > 1 {
		s.queue = s.queue[1:]
	}
	if tok == "" {
		return nil, errors.New("refresh failed")
	}
	return &oauth2.Token{AccessToken: tok}, nil
}

// tokenServer answers 200 to the tokens it takes and 401 to others, and
// keeps what each request carried.
type tokenServer struct {
	takes map[string]bool
	seen  []string // "Authorization header|body" per request
}

func (s *tokenServer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	auth := req.Header.Get("Authorization")
	s.seen = append(s.seen, auth+"|"+string(body))
	if req.Header.Get("X-Spec") != "" {
		s.seen[len(s.seen)-1] += "|X-Spec"
	}
	status := http.StatusUnauthorized
	header := http.Header{"Www-Authenticate": {`Bearer resource_metadata="https://x/prm", scope="read"`}}
	if s.takes[strings.TrimPrefix(auth, "Bearer ")] {
		status, header = http.StatusOK, http.Header{}
	}
	return &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

func TestTheBearerSettlesA401ByAskingItsSourceOnceMore(t *testing.T) {
	cases := []struct {
		name    string
		tokens  []string
		want    int
		seen    []string
		refused string // "" when the connection goes on
	}{
		{name: "taken", tokens: []string{"good-token"}, want: 200,
			seen: []string{"Bearer good-token|{}|X-Spec"}},
		{name: "refused, then a fresh token is taken", tokens: []string{"stale-token", "good-token"}, want: 200,
			seen: []string{"Bearer stale-token|{}|X-Spec", "Bearer good-token|{}|X-Spec"}},
		{name: "refused, and the same token again", tokens: []string{"stale-token"}, want: 401,
			seen: []string{"Bearer stale-token|{}|X-Spec"}, refused: "401 Unauthorized to the token its source gave, asked twice"},
		{name: "refused twice", tokens: []string{"stale-token", "other-token"}, want: 401,
			seen: []string{"Bearer stale-token|{}|X-Spec", "Bearer other-token|{}|X-Spec"}, refused: "401 Unauthorized to the token its source gave, asked twice"},
		{name: "no token", tokens: []string{""}, refused: "its token source gave no token: refresh failed"},
		{name: "no token when asked again", tokens: []string{"stale-token", ""}, want: 401,
			seen: []string{"Bearer stale-token|{}|X-Spec"}, refused: "401 Unauthorized to the token its source gave, asked twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server := &tokenServer{takes: map[string]bool{"good-token": true}}
			source := &queuedSource{queue: c.tokens}
			b := newBearer(source)
			var refused string
			b.refuse = func(why string) { refused = why }
			challenges := &challengeRecorder{}
			req, err := http.NewRequest(http.MethodPost, "http://server/mcp", strings.NewReader("{}"))
			require.NoError(t, err)
			transport := &headerTransport{origin: "http://server", base: server, header: http.Header{"X-Spec": {"v"}}, challenges: challenges, bearer: b}
			resp, err := transport.RoundTrip(req)
			if c.want == 0 {
				require.ErrorIs(t, err, errTokenRefused)
				assert.Empty(t, server.seen, "nothing sent without a token")
			} else {
				require.NoError(t, err)
				assert.Equal(t, c.want, resp.StatusCode)
			}
			assert.Equal(t, c.seen, server.seen)
			assert.Equal(t, c.refused, refused)
			assert.Equal(t, c.refused != "" && c.want == 401, challenges.first.Load() != nil, "the challenge of a 401 that stands is noted")
			assert.Empty(t, req.Header.Get("Authorization"), "the caller's request is not changed")
		})
	}
}

// A GET (the event stream) has no body to send again.
func TestTheBearerRetriesARequestWithoutBody(t *testing.T) {
	server := &tokenServer{takes: map[string]bool{"good-token": true}}
	b := newBearer(&queuedSource{queue: []string{"stale-token", "good-token"}})
	req, err := http.NewRequest(http.MethodGet, "http://server/mcp", nil)
	require.NoError(t, err)
	resp, err := (&headerTransport{origin: "http://server", base: server, challenges: &challengeRecorder{}, bearer: b}).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, []string{"Bearer stale-token|", "Bearer good-token|"}, server.seen)
}

// A later ConnectAs's source is asked from the next request on.
func TestTheBearerTakesANewSource(t *testing.T) {
	server := &tokenServer{takes: map[string]bool{"good-token": true, "new-token": true}}
	b := newBearer(&queuedSource{queue: []string{"good-token"}})
	b.use(&queuedSource{queue: []string{"new-token"}})
	req, err := http.NewRequest(http.MethodGet, "http://server/mcp", nil)
	require.NoError(t, err)
	_, err = (&headerTransport{origin: "http://server", base: server, challenges: &challengeRecorder{}, bearer: b}).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, []string{"Bearer new-token|"}, server.seen)
}

// The tokens a user connection sent are scrubbed from its messages, the
// last maxSeenTokens of them, longest first; short values are left, as a
// spec's are.
func TestAUserConnectionsTokensAreScrubbed(t *testing.T) {
	var nilSet *secretSet
	assert.Equal(t, "msg", nilSet.scrub("msg"))
	set := &secretSet{}
	set.add("abc")
	set.add("secret-token")
	set.add("secret-token-longer")
	sc := scrubber{tokens: set}
	assert.Equal(t, "abc refused [redacted] and [redacted]", sc.clean("abc refused secret-token-longer and secret-token"))
	for i := range maxSeenTokens {
		set.add(fmt.Sprintf("later-token-%d", i))
	}
	assert.Equal(t, "secret-token [redacted]", sc.clean("secret-token later-token-0"), "the oldest are forgotten")
}

// The user's token is the Authorization a request carries, whatever the
// spec's headers say.
func TestTheUsersTokenWinsOverTheSpecsAuthorization(t *testing.T) {
	server := &tokenServer{takes: map[string]bool{"user-token": true}}
	b := newBearer(&queuedSource{queue: []string{"user-token"}})
	transport := &headerTransport{origin: "http://server", base: server, header: http.Header{"Authorization": {"Bearer spec-token"}}, challenges: &challengeRecorder{}, bearer: b}
	req, err := http.NewRequest(http.MethodGet, "http://server/mcp", nil)
	require.NoError(t, err)
	resp, err := transport.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, []string{"Bearer user-token|"}, server.seen)
}

// A request to another origin than the server's (an SSE endpoint naming
// another host) carries neither the spec's headers nor the user's token.
func TestTheServersCredentialsStayWithItsOrigin(t *testing.T) {
	server := &tokenServer{takes: map[string]bool{"good-token": true}}
	b := newBearer(&queuedSource{queue: []string{"good-token"}})
	transport := &headerTransport{origin: "http://server", base: server, header: http.Header{"X-Spec": {"v"}}, challenges: &challengeRecorder{}, bearer: b}
	req, err := http.NewRequest(http.MethodGet, "http://elsewhere/mcp", nil)
	require.NoError(t, err)
	_, err = transport.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, []string{"|"}, server.seen, "no token, no header")
}

// refusableSource gives its current token until it is told the server
// refused it; then it gives the next (as a provider's token refreshed
// before its expiry).
type refusableSource struct {
	mu      sync.Mutex
	tokens  []string
	refused []string
}

func (s *refusableSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &oauth2.Token{AccessToken: s.tokens[0]}, nil
}

func (s *refusableSource) Refused(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, token)
	if token == s.tokens[0] && len(s.tokens) > 1 {
		s.tokens = s.tokens[1:]
	}
}

// A source that can be told of a refusal is told, with the refused token,
// and its next token gets the request's one more try: a token a server
// stopped taking before its expiry is refreshed, not given up.
func TestTheBearerTellsItsSourceOfTheRefusedToken(t *testing.T) {
	server := &tokenServer{takes: map[string]bool{"good-token": true}}
	source := &refusableSource{tokens: []string{"revoked-token", "good-token"}}
	b := newBearer(source)
	var refused string
	b.refuse = func(why string) { refused = why }
	req, err := http.NewRequest(http.MethodPost, "http://server/mcp", strings.NewReader("{}"))
	require.NoError(t, err)
	transport := &headerTransport{origin: "http://server", base: server, challenges: &challengeRecorder{}, bearer: b}
	resp, err := transport.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{"revoked-token"}, source.refused)
	assert.Equal(t, []string{"Bearer revoked-token|{}", "Bearer good-token|{}"}, server.seen)
	assert.Empty(t, refused, "the connection goes on")

	// Refused again, with nothing newer to give: the connection ends.
	server.takes = map[string]bool{}
	req, err = http.NewRequest(http.MethodPost, "http://server/mcp", strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err = transport.RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, []string{"revoked-token", "good-token"}, source.refused)
	assert.Equal(t, "401 Unauthorized to the token its source gave, asked twice", refused)
}
