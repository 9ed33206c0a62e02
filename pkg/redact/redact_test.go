package redact_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/redact"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
		secrets        []string // must not survive, whatever want says
	}{
		// URL credentials.
		{name: "url user and password", in: `Get "https://bob:hunter2@git.example.com/repo.git": EOF`,
			want: `Get "https://[redacted]@git.example.com/repo.git": EOF`, secrets: []string{"hunter2", "bob"}},
		{name: "url token as user", in: "clone https://ghp_abc123@github.com/o/r failed",
			want: "clone https://[redacted]@github.com/o/r failed", secrets: []string{"ghp_abc123"}},
		{name: "url password with raw at sign", in: "redis://:p@ss@w0rd@cache:6379",
			want: "redis://[redacted]@cache:6379", secrets: []string{"p@ss", "w0rd"}},
		{name: "url password with colon and no path", in: "postgres://u:a:b@db",
			want: "postgres://[redacted]@db", secrets: []string{"a:b"}},
		{name: "two urls", in: "http://a:1@x/ and ftp://b:2@y/",
			want: "http://[redacted]@x/ and ftp://[redacted]@y/"},

		// Bearer tokens.
		{name: "bearer", in: "sent Bearer abc.def.ghi to server",
			want: "sent Bearer [redacted] to server", secrets: []string{"abc.def.ghi"}},
		{name: "bearer lowercase", in: "bearer\teyJhbGciOi.x-y_z+/=",
			want: "bearer [redacted]", secrets: []string{"eyJhbGciOi"}},

		// key=value and key: value.
		{name: "env style", in: "DB_PASSWORD=s3cr3t! HOST=db",
			want: "DB_PASSWORD=[redacted] HOST=db", secrets: []string{"s3cr3t"}},
		{name: "yaml style", in: "password: hunter2\nuser: bob",
			want: "password: [redacted]\nuser: bob", secrets: []string{"hunter2"}},
		{name: "spaces around equals", in: "client_secret = abc123",
			want: "client_secret = [redacted]", secrets: []string{"abc123"}},
		{name: "cli flag", in: "run --api-key=AKIA999 --verbose",
			want: "run --api-key=[redacted] --verbose", secrets: []string{"AKIA999"}},
		{name: "camel case key", in: "authToken:xyz",
			want: "authToken:[redacted]", secrets: []string{"xyz"}},
		{name: "header with basic scheme", in: "Authorization: Basic dXNlcjpwYXNz",
			want: "Authorization: [redacted]", secrets: []string{"dXNlcjpwYXNz"}},
		{name: "header with bearer scheme", in: "authorization: Bearer tok.en",
			want: "authorization: [redacted]", secrets: []string{"tok.en"}},
		{name: "auth as a word", in: "X-Auth: s3 basic_auth=u:p",
			want: "X-Auth: [redacted] basic_auth=[redacted]", secrets: []string{"s3", "u:p"}},
		{name: "pwd in connection string", in: "Server=db;Uid=sa;Pwd=Pa55;Database=x",
			want: "Server=db;Uid=sa;Pwd=[redacted];Database=x", secrets: []string{"Pa55"}},
		{name: "query string", in: "https://h/cb?state=1&access_token=tok9&x=2",
			want: "https://h/cb?state=1&access_token=[redacted]&x=2", secrets: []string{"tok9"}},
		{name: "secret in a non-secret value", in: "url=https://h/?token=tok9",
			want: "url=https://h/?token=[redacted]", secrets: []string{"tok9"}},
		{name: "credentials plural", in: "aws_credentials='k v'",
			want: "aws_credentials='[redacted]'", secrets: []string{"k v"}},
		{name: "private and access keys", in: "private_key=PK AWS_SECRET_ACCESS_KEY=SK ACCESS_KEY=AK",
			want:    "private_key=[redacted] AWS_SECRET_ACCESS_KEY=[redacted] ACCESS_KEY=[redacted]",
			secrets: []string{"PK", "SK", "AK"}},

		// JSON-ish.
		{name: "json", in: `{"user":"bob","password":"hun\"ter2","n":1}`,
			want: `{"user":"bob","password":"[redacted]","n":1}`, secrets: []string{"hun", "ter2"}},
		{name: "json spaced", in: `{ "apiKey" : "k-1" }`,
			want: `{ "apiKey" : "[redacted]" }`, secrets: []string{"k-1"}},
		{name: "json quoted by %q", in: `body "{\"token\":\"t0k\",\"ok\":true}"`,
			want: `body "{\"token\":\"[redacted]\",\"ok\":true}"`, secrets: []string{"t0k"}},

		{name: "json cut short", in: `body: {"user":"bob","password":"hunt`,
			want: `body: {"user":"bob","password":[redacted]`, secrets: []string{"hunt"}},
		{name: "unterminated single quote", in: "secret='abc def",
			want: "secret=[redacted]", secrets: []string{"abc", "def"}},
		{name: "go and ruby assignments", in: `token := "t1"; {:api_key => 'k2'}`,
			want: `token := "[redacted]"; {:api_key => '[redacted]'}`, secrets: []string{"t1", "k2"}},

		{name: "go struct and map formatting", in: "{Username:bob Password:hunter2} map[token:t9 user:bob]",
			want: "{Username:bob Password:[redacted]} map[token:[redacted] user:bob]", secrets: []string{"hunter2", "t9"}},

		// Private keys.
		{name: "pem private key", in: "bad key -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- end",
			want: "bad key [redacted private key] end", secrets: []string{"MIIE"}},
		{name: "truncated pem", in: "-----BEGIN PRIVATE KEY-----\nMIIE",
			want: "[redacted private key]", secrets: []string{"MIIE"}},

		// Paths.
		{name: "unix path", in: "open /home/u/x/y.yaml: no such file or directory",
			want: "open …/y.yaml: no such file or directory", secrets: []string{"/home/u"}},
		{name: "quoted path", in: `read "/etc/musterd/mcp/git.yaml"`, want: `read "…/git.yaml"`},
		{name: "path after equals and colon", in: "file=/a/b/c.yaml path:/d/e",
			want: "file=…/c.yaml path:…/e"},
		{name: "directory path", in: "walk /var/lib/musterd/: denied", want: "walk …/: denied"},
		{name: "windows path", in: `open C:\Users\bob\cfg\x.yaml: denied`,
			want: `open …\x.yaml: denied`, secrets: []string{"bob"}},

		// Ordinary text is left alone.
		{name: "plain url", in: "GET https://example.com/a/b/c.json returned 404",
			want: "GET https://example.com/a/b/c.json returned 404"},
		{name: "file url", in: "see file:///etc/x", want: "see file:///etc/x"},
		{name: "address with port", in: "dial tcp 10.0.0.1:443: connect: connection refused",
			want: "dial tcp 10.0.0.1:443: connect: connection refused"},
		{name: "words near secret words", in: "author: jane, authenticated=false, invalid token, tokens left",
			want: "author: jane, authenticated=false, invalid token, tokens left"},
		{name: "root-level file and fractions", in: "wrote /y.yaml, 1/2 and/or 3/4",
			want: "wrote /y.yaml, 1/2 and/or 3/4"},
		{name: "empty", in: "", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := redact.String(tc.in)
			assert.Equal(t, tc.want, got)
			for _, s := range tc.secrets {
				assert.NotContains(t, got, s)
			}
			assert.Equal(t, got, redact.String(got), "String is idempotent")
		})
	}
}

func TestStringNeverLeaksAcrossSeparators(t *testing.T) {
	// Every separator and quoting a secret key may come with.
	const secret = "Zq9xSecretValue"
	for _, key := range []string{"password", "PASSWD", "Secret", "token", "apikey", "api_key", "api-key",
		"Authorization", "auth", "credential", "credentials", "private_key", "access_key"} {
		for _, form := range []string{"%k=%v", "%k: %v", "%k:%v", "%k = %v", `"%k":"%v"`, `'%k': '%v'`,
			`%k="%v"`, "--%k=%v", "x_%k=%v;", "(%k=%v)", "[%k: %v]", "{%k=%v}"} {
			in := strings.NewReplacer("%k", key, "%v", secret).Replace(form)
			assert.NotContains(t, redact.String("error: "+in+" after"), secret, in)
		}
	}
}
