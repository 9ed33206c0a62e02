package supervisor

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/redact"
)

// specHash identifies the fields of spec that change what runs: type,
// command, args, env, url, headers, timeout (as it applies:
// Options.StartTimeout when unset), toolPrefix and family (both name what
// the tools are exposed as), not description or autoStart. It is an HMAC
// under a key of this supervisor's
// own, so that the hash of an env value or header, which travels in
// Observed and status, is no oracle for guessing it.
func specHash(key []byte, spec v1alpha1.MCPServerSpec, startTimeout time.Duration) string {
	relevant := struct {
		Type       v1alpha1.MCPServerType
		Command    string
		Args       []string
		Env        map[string]string
		URL        string
		Headers    map[string]string
		Timeout    time.Duration
		ToolPrefix string
		Family     *v1alpha1.MCPServerFamily `json:",omitempty"`
	}{
		Type:       spec.Type,
		Command:    spec.Command,
		Args:       nilIfEmpty(spec.Args),
		Env:        nilIfEmptyMap(spec.Env),
		URL:        spec.URL,
		Headers:    nilIfEmptyMap(spec.Headers),
		Timeout:    startTimeout,
		ToolPrefix: spec.ToolPrefix,
		Family:     spec.Family,
	}
	data, err := json.Marshal(relevant) // map keys come out sorted
	if err != nil {
		panic("supervisor: spec hash: " + err.Error()) // strings and ints always marshal
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(data)
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilIfEmptyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// inheritedEnv names the variables of musterd's own environment that a
// stdio server inherits; its spec's env comes on top. Anything else (tokens,
// cloud credentials, proxies, musterd's own MUSTERD_TOKEN) must be given in
// the spec, so that a server sees only what its definition grants: PATH to
// find what it runs, HOME for its own configuration.
var inheritedEnv = []string{"PATH", "HOME"}

// withheldEnv names the variables of musterd's own environment that no
// server inherits, not even with InheritEnv: musterd's API token. A spec
// may still name one in its env, explicitly.
var withheldEnv = []string{"MUSTERD_TOKEN"}

// processEnv is the environment of a stdio server's process: PATH and HOME
// of musterd's (all of musterd's environment but withheldEnv if
// inheritAll), the spec's env on top.
func processEnv(specEnv map[string]string, inheritAll bool) []string {
	env := make(map[string]string, len(inheritedEnv)+len(specEnv))
	if inheritAll {
		for _, kv := range os.Environ() {
			if name, value, ok := strings.Cut(kv, "="); ok && name != "" && !slices.Contains(withheldEnv, name) {
				env[name] = value
			}
		}
	}
	for _, name := range inheritedEnv {
		if value, ok := os.LookupEnv(name); ok {
			env[name] = value
		}
	}
	maps.Copy(env, specEnv)
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out
}

// minScrubbedLength is the length from which an env value or header value
// is scrubbed from messages wherever it appears. Shorter values ("1",
// "yes") are too common to find verbatim without mangling every message,
// and too short to be secrets worth the name.
const minScrubbedLength = 4

// scrubber cleans every message about one server before it is logged,
// stored or returned: it replaces the literal values of the server's env
// and headers (which a server may well echo on stderr or in an HTTP error
// body), then applies redact.String. A user connection's scrubber also
// replaces the tokens its requests carried (userbearer.go), which no spec
// holds.
type scrubber struct {
	values *strings.Replacer // nil when there is nothing to replace
	tokens *secretSet        // a user connection's tokens; nil otherwise
}

func newScrubber(spec v1alpha1.MCPServerSpec) scrubber {
	var secrets []string
	for _, m := range []map[string]string{spec.Env, spec.Headers} {
		for _, v := range m {
			if len(v) >= minScrubbedLength {
				secrets = append(secrets, v)
			}
		}
	}
	// And what its args hold after a secret-looking flag: a server may
	// print its command line.
	for _, v := range redact.ArgvSecrets(spec.Args) {
		if len(v) >= minScrubbedLength {
			secrets = append(secrets, v)
		}
	}
	if len(secrets) == 0 {
		return scrubber{}
	}
	// Longest first: a Replacer tries its old strings in order, and a value
	// that contains another must go whole. Equal values end up side by side
	// for Compact.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, v := range slices.Compact(secrets) {
		pairs = append(pairs, v, "[redacted]")
	}
	return scrubber{values: strings.NewReplacer(pairs...)}
}

func (s scrubber) clean(msg string) string {
	msg = s.tokens.scrub(msg)
	if s.values != nil {
		msg = s.values.Replace(msg)
	}
	return redact.String(msg)
}
