package supervisor

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// keepingSource keeps its token until told it was refused, then gives
// the next: an exchanged token's source, as package oauth/client has it.
type keepingSource struct {
	mu      sync.Mutex
	tokens  []string
	refused []string
}

func (s *keepingSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &oauth2.Token{AccessToken: s.tokens[0]}, nil
}

func (s *keepingSource) Refused(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, token)
	if token == s.tokens[0] && len(s.tokens) > 1 {
		s.tokens = s.tokens[1:]
	}
}

// A Refusable source is told of a 401 before it is asked again, so that
// a token it would have kept is replaced and the request goes once more;
// a 200 tells it nothing.
func TestTheBearerTellsARefusableSourceWhichTokenWasRefused(t *testing.T) {
	server := &tokenServer{takes: map[string]bool{"good-token": true}}
	source := &keepingSource{tokens: []string{"kept-token", "good-token"}}
	b := newBearer(source)
	for range 2 {
		req, err := http.NewRequest(http.MethodPost, "http://server/mcp", strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := (&headerTransport{origin: "http://server", base: server, challenges: &challengeRecorder{}, bearer: b}).RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Equal(t, []string{"Bearer kept-token|{}", "Bearer good-token|{}", "Bearer good-token|{}"}, server.seen)
	assert.Equal(t, []string{"kept-token"}, source.refused)
}

// A Refusable source told of a refusal may give a token that reads the
// same (minted anew within the same second): the request goes once more
// with it; a second 401 stands.
func TestTheBearerRetriesOnceWithARefusableSourcesSameToken(t *testing.T) {
	for _, c := range []struct {
		name  string
		takes bool
		want  int
	}{{"taken the second time", true, http.StatusOK}, {"refused again", false, http.StatusUnauthorized}} {
		t.Run(c.name, func(t *testing.T) {
			server := &onceRefusing{takes: c.takes}
			source := &keepingSource{tokens: []string{"same-token"}}
			b := newBearer(source)
			var refused string
			b.refuse = func(why string) { refused = why }
			req, err := http.NewRequest(http.MethodPost, "http://server/mcp", strings.NewReader("{}"))
			require.NoError(t, err)
			resp, err := (&headerTransport{origin: "http://server", base: server, challenges: &challengeRecorder{}, bearer: b}).RoundTrip(req)
			require.NoError(t, err)
			assert.Equal(t, c.want, resp.StatusCode)
			assert.Equal(t, 2, server.requests, "one retry")
			assert.Equal(t, []string{"same-token"}, source.refused)
			assert.Equal(t, !c.takes, refused != "", "the connection ends when the retry is refused too")
		})
	}
}

// onceRefusing refuses its first request; the later ones when takes.
type onceRefusing struct {
	takes    bool
	requests int
}

func (s *onceRefusing) RoundTrip(req *http.Request) (*http.Response, error) {
	s.requests++
	status := http.StatusUnauthorized
	if s.requests > 1 && s.takes {
		status = http.StatusOK
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}
