package supervisor

import (
	"time"

	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

func TestSpecHashChangesWithEveryFieldThatMattersAndNoOther(t *testing.T) {
	key := []byte("key")
	specHash := func(key []byte, spec v1alpha1.MCPServerSpec) string {
		return specHash(key, spec, startTimeout(spec, DefaultStartTimeout))
	}
	base := v1alpha1.MCPServerSpec{
		Type: v1alpha1.MCPServerTypeStdio, Command: "srv", Args: []string{"-a"},
		Env: map[string]string{"A": "1"}, Timeout: 10, ToolPrefix: "p", Description: "d",
	}
	h := specHash(key, base)
	mattering := map[string]func(*v1alpha1.MCPServerSpec){
		"type":       func(s *v1alpha1.MCPServerSpec) { s.Type = v1alpha1.MCPServerTypeSSE },
		"command":    func(s *v1alpha1.MCPServerSpec) { s.Command = "other" },
		"args":       func(s *v1alpha1.MCPServerSpec) { s.Args = []string{"-b"} },
		"arg order":  func(s *v1alpha1.MCPServerSpec) { s.Args = []string{"-a", "-a"} },
		"env value":  func(s *v1alpha1.MCPServerSpec) { s.Env = map[string]string{"A": "2"} },
		"env name":   func(s *v1alpha1.MCPServerSpec) { s.Env = map[string]string{"B": "1"} },
		"url":        func(s *v1alpha1.MCPServerSpec) { s.URL = "http://x" },
		"headers":    func(s *v1alpha1.MCPServerSpec) { s.Headers = map[string]string{"H": "v"} },
		"timeout":    func(s *v1alpha1.MCPServerSpec) { s.Timeout = 11 },
		"toolPrefix": func(s *v1alpha1.MCPServerSpec) { s.ToolPrefix = "q" },
	}
	for name, change := range mattering {
		spec := base
		change(&spec)
		assert.NotEqual(t, h, specHash(key, spec), name)
	}
	same := map[string]func(*v1alpha1.MCPServerSpec){
		"description": func(s *v1alpha1.MCPServerSpec) { s.Description = "other" },
		"autoStart":   func(s *v1alpha1.MCPServerSpec) { s.AutoStart = true },
		"auth":        func(s *v1alpha1.MCPServerSpec) { s.Auth = &v1alpha1.MCPServerAuth{Type: v1alpha1.AuthTypeNone} },
	}
	for name, change := range same {
		spec := base
		change(&spec)
		assert.Equal(t, h, specHash(key, spec), name)
	}

	unset, defaulted := base, base
	unset.Timeout, defaulted.Timeout = 0, int(DefaultStartTimeout/time.Second)
	assert.Equal(t, specHash(key, unset), specHash(key, defaulted), "an unset timeout is the start timeout")
	empty, nilled := base, base
	empty.Args, empty.Env, nilled.Args, nilled.Env = []string{}, map[string]string{}, nil, nil
	assert.Equal(t, specHash(key, empty), specHash(key, nilled), "empty is unset")

	assert.NotEqual(t, h, specHash([]byte("another supervisor"), base), "keyed: no oracle for env values")
}

func TestScrubberRemovesEnvAndHeaderValuesThenRedacts(t *testing.T) {
	s := newScrubber(v1alpha1.MCPServerSpec{
		Env:     map[string]string{"DB": "s3cr3t", "LONGER": "s3cr3t-and-more", "FLAG": "1"},
		Headers: map[string]string{"X-Key": "hdr-value"},
	})
	got := s.clean("saw s3cr3t-and-more and s3cr3t, hdr-value; exit code 1; password=hunter2 in /home/u/srv/log.txt")
	assert.Equal(t, "saw [redacted] and [redacted], [redacted]; exit code 1; password=[redacted] in …/log.txt", got,
		"longest value first; values under 4 characters are left alone")
	assert.Equal(t, "token: [redacted]", newScrubber(v1alpha1.MCPServerSpec{}).clean("token: abc"))
	args := newScrubber(v1alpha1.MCPServerSpec{Args: []string{"--api-key", "argkey-1", "--secret=argsecret-2"}})
	assert.Equal(t, "started with [redacted] and [redacted]", args.clean("started with argkey-1 and argsecret-2"),
		"the values of secret-looking flags in args too")
}

func TestTailBufferKeepsTheLastBytesFromAWholeLine(t *testing.T) {
	b := newTailBuffer(16)
	_, _ = b.Write([]byte("short\n"))
	assert.Equal(t, "short", b.Tail())

	_, _ = b.Write([]byte("x password=abcdefgh\nlast line\n"))
	// The last 16 bytes are "defgh\nlast line\n": the partial first line,
	// which lost its key, is dropped.
	assert.Equal(t, "last line", b.Tail())
	assert.LessOrEqual(t, cap(b.buf), 16, "bounded")

	one := newTailBuffer(8)
	_, _ = one.Write([]byte(strings.Repeat("z", 20) + " word"))
	assert.Equal(t, "word", one.Tail(), "no newline: starts at the next word")
	none := newTailBuffer(4)
	_, _ = none.Write([]byte("abcdefgh"))
	assert.Empty(t, none.Tail(), "a fragment with no start is dropped whole")
}

func TestProcessEnvInheritsOnlyPATHAndHOMEAndTheSpecWins(t *testing.T) {
	t.Setenv("PATH", "/usr/bin")
	t.Setenv("HOME", "/home/op")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("MUSTERD_TEST_SECRET", "not for servers")
	t.Setenv("MUSTERD_TOKEN", "the API token")
	env := processEnv(map[string]string{"PATH": "/opt/bin", "EXTRA": "x"}, false)
	assert.Equal(t, []string{"EXTRA=x", "HOME=/home/op", "PATH=/opt/bin"}, env)

	all := processEnv(map[string]string{"PATH": "/opt/bin", "EXTRA": "x"}, true)
	assert.Contains(t, all, "MUSTERD_TEST_SECRET=not for servers", "inheritAll passes musterd's environment")
	assert.Contains(t, all, "LANG=C.UTF-8")
	assert.NotContains(t, all, "MUSTERD_TOKEN=the API token", "inheritAll withholds musterd's API token")
	assert.Contains(t, all, "PATH=/opt/bin", "the spec still wins")
	assert.NotContains(t, all, "PATH=/usr/bin")
}
