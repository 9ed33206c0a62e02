package tmplfuncs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/tmplfuncs"
)

func run(t *testing.T, src string, data any) (string, error) {
	t.Helper()
	tmpl, err := tmplfuncs.Parse(src)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tmplfuncs.Execute(tmpl, &b, data)
	return b.String(), err
}

// Every way a template could build an unbounded result or loop without
// end is refused with ErrLimit, before the work is done.
func TestEveryGeneratorIsBounded(t *testing.T) {
	for _, src := range []string{
		`{{ repeat 1000000000 "x" }}`,
		`{{ repeat 2 (repeat 1000000 "x") }}`,
		`{{ until 1000000000 }}`,
		`{{ until -1000000000 }}`,
		`{{ untilStep 0 9223372036854775807 1 }}`,
		`{{ untilStep 9223372036854775806 9223372036854775807 9223372036854775807 }}{{ untilStep 0 100000 1 }}`,
		`{{ seq 1000000000 }}`,
		`{{ seq 9223372036854775807 }}`,
		`{{ seq 0 1 1000000000 }}`,
		`{{ randAlphaNum 1000000000 }}`,
		`{{ randBytes 1000000000 }}`,
		`{{ indent 1000000000 "x" }}`,
		`{{ nindent 100000 (repeat 100 "\n") }}`,
		`{{ replace "" (repeat 1000 "y") (repeat 10000 "x") }}`,
		`{{ regexReplaceAll "" (repeat 10000 "x") (repeat 1000 "y") }}`,
		`{{ wrapWith 1 (repeat 1000 "-") (repeat 10000 "x") }}`,
		`{{ join (repeat 1000 "-") (until 10000) }}`,
		`{{ printf "%1000000d%1000000d" 1 2 }}`,
		`{{ $s := "xx" }}{{ range until 100 }}{{ $s = print $s $s }}{{ end }}`,
		`{{ $s := "xx" }}{{ range until 100 }}{{ $s = cat $s $s }}{{ end }}`,
		`{{ $l := list 1 }}{{ range until 100 }}{{ $l = concat $l $l }}{{ end }}`,
		`{{ range until 10000 }}{{ range until 10000 }}{{ end }}{{ end }}`,
		`{{ range 1000000000000 }}{{ end }}`,
		`{{ range $i, $e := until 5000 }}{{ range until 5000 }}{{ end }}{{ end }}`,
		`{{ range until 10000 }}{{ repeat 1000 "x" }}{{ end }}`,
	} {
		out, err := run(t, src, nil)
		require.Error(t, err, src)
		assert.True(t, errors.Is(err, tmplfuncs.ErrLimit), "%s: %v", src, err)
		assert.LessOrEqual(t, len(out), tmplfuncs.MaxBytes, src)
	}
}

// The bounded generators keep sprig's results within the bounds.
func TestBoundedGeneratorsKeepSprigsResults(t *testing.T) {
	for src, want := range map[string]string{
		`{{ repeat 3 "ab" }}`:          "ababab",
		`{{ until 3 }}`:                "[0 1 2]",
		`{{ until -3 }}`:               "[0 -1 -2]",
		`{{ untilStep 1 10 3 }}`:       "[1 4 7]",
		`{{ untilStep 10 1 -4 }}`:      "[10 6 2]",
		`{{ untilStep 1 10 -1 }}`:      "[]",
		`{{ seq 3 }}`:                  "1 2 3",
		`{{ seq -2 }}`:                 "1 0 -1 -2",
		`{{ seq 2 4 }}`:                "2 3 4",
		`{{ seq 0 2 5 }}`:              "0 2 4",
		`{{ seq 5 -2 0 }}`:             "5 3 1",
		`{{ seq 5 2 0 }}`:              "",
		`{{ len (randAlphaNum 16) }}`:  "16",
		`{{ indent 2 "a\nb" }}`:        "  a\n  b",
		`{{ replace "a" "bb" "aXa" }}`: "bbXbb",
		`{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}`:                        "-W-xxW-",
		`{{ join "," (list 1 2) }}`:                                                 "1,2",
		`{{ printf "%5d|%.2f" 42 3.14159 }}`:                                        "   42|3.14",
		`{{ range until 3 }}{{ . }}{{ end }}`:                                       "012",
		`{{ range $i, $e := list "a" "b" }}{{ $i }}{{ $e }}{{ else }}none{{ end }}`: "0a1b",
		`{{ range list }}x{{ else }}none{{ end }}`:                                  "none",
		`{{ range 3 }}{{ . }}{{ end }}`:                                             "012",
		`{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ toJson $d }}`:             `{"a":1,"b":2}`,
		`{{ print "a" 1 }}{{ html "<" }}`:                                           "a1&lt;",
	} {
		out, err := run(t, src, nil)
		require.NoError(t, err, src)
		assert.Equal(t, want, out, src)
	}
}

// The output itself is bounded, whatever produced it.
func TestTheOutputIsBounded(t *testing.T) {
	big := strings.Repeat("x", tmplfuncs.MaxBytes/2+1)
	_, err := run(t, `{{ .s }}{{ .s }}`, map[string]any{"s": big})
	require.ErrorIs(t, err, tmplfuncs.ErrLimit)
	assert.Contains(t, err.Error(), "output over 1048576 bytes")
	out, err := run(t, `{{ .s }}`, map[string]any{"s": big})
	require.NoError(t, err)
	assert.Len(t, out, len(big))
}

// A map cannot be made to hold itself (printing it would overflow the
// stack, which no recover catches), nor can a template call a template.
func TestNoCyclesNorRecursion(t *testing.T) {
	for _, src := range []string{
		`{{ $d := dict }}{{ $_ := set $d "k" $d }}{{ $d }}`,
		`{{ $d := dict }}{{ $_ := set $d "k" (list (dict "x" $d)) }}{{ $d }}`,
		`{{ $d := dict }}{{ $_ := merge $d (dict "k" $d) }}{{ $d }}`,
	} {
		_, err := run(t, src, nil)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "a map cannot hold itself", src)
	}
	for _, src := range []string{
		`{{ define "a" }}{{ template "a" }}{{ template "a" }}{{ end }}{{ template "a" }}`,
		`{{ template "t" }}`,
		`{{ block "b" . }}x{{ end }}`,
	} {
		_, err := tmplfuncs.Parse(src)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "not supported", src)
	}
}

// The expensive crypto functions are not there.
func TestExpensiveCryptoIsDropped(t *testing.T) {
	for _, name := range []string{"genPrivateKey", "genCA", "genSelfSignedCert", "genSignedCert", "bcrypt", "htpasswd", "derivePassword"} {
		_, err := tmplfuncs.Parse(`{{ ` + name + ` "x" }}`)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "not defined", name)
	}
}
