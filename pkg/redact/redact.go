package redact

import (
	"regexp"
	"slices"
	"strings"
)

// redacted replaces a secret.
const redacted = "[redacted]"

var (
	// A PEM private key, up to its END line or, if cut off, the end of the
	// message.
	privateKeyPattern = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)

	// scheme://userinfo@ — userinfo runs to the last @ before the path, so a
	// password holding a raw @ is redacted whole.
	urlUserinfoPattern = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s]*@`)

	// key=value and key: value, the key optionally quoted as in JSON or in
	// JSON quoted once more by %q. Groups: 2 is the key, 5 the value.
	keyValuePattern = regexp.MustCompile(
		`(\\?["']?)([A-Za-z0-9_.\-]+)(\\?["']?)(\s*(?::=|=>|[:=])\s*)(` +
			`\[redacted\]` + // already redacted: keeps String idempotent
			// Quoted, the closing quote optional: a message cut short must
			// not leak what it kept.
			`|\\"(?:[^"\\]|\\[^"])*(?:\\")?` + // \"escaped\"
			`|"(?:[^"\\]|\\.)*"?` + // "quoted"
			`|'[^']*'?` + // 'quoted'
			// Unquoted: one word, after an optional auth scheme so that
			// "Authorization: Basic dXNl…" loses the credentials, not the
			// scheme name.
			"|(?i:(?:bearer|basic|digest|token|negotiate)[ \t]+)?[^\\s\"'`,;&)\\]}>]+" +
			`)`)

	bearerPattern = regexp.MustCompile(`(?i)\b(bearer)\s+[^\s"',;]+`)

	// An absolute path: a directory part, then the base name that is kept.
	// It must start the message or follow a delimiter; a URL's path follows
	// its host, and "scheme://" has no segment after its first slash, so
	// URLs are left alone.
	unixDirPattern    = regexp.MustCompile("(^|[\\s\"'`(\\[{<=,:])(?:/[^/\\s\"'`:,;()<>\\[\\]{}]+)+/")
	windowsDirPattern = regexp.MustCompile("(^|[\\s\"'`(\\[{<=,])[A-Za-z]:\\\\(?:[^\\\\\\s\"'`:,;()<>\\[\\]{}|*?]+\\\\)+")
)

// secretKeyTerms make a key secret wherever they appear in it
// (case-insensitive): "DB_PASSWORD", "clientSecret", "X-Api-Key".
var secretKeyTerms = []string{
	"password", "passwd", "passphrase", "secret", "token",
	"apikey", "api_key", "api-key", "authorization", "credential",
	"private_key", "privatekey", "private-key", "access_key", "accesskey", "access-key",
}

// secretKeyWords make a key secret only as a whole word of it, because as
// substrings they are ordinary ("author", "authenticated").
var secretKeyWords = []string{"auth", "pwd"}

// String removes credentials and local paths from a message before it is
// stored, published or logged:
//
//   - URL credentials: scheme://user:pass@host → scheme://[redacted]@host
//     (any userinfo, since a token alone is often the user name);
//   - bearer tokens: Bearer abc.def → Bearer [redacted];
//   - values of secret-looking keys in key=value, key: value and JSON
//     ("password":"x"), keys matched case-insensitively by the terms password,
//     passwd, passphrase, secret, token, api key, authorization, credential(s),
//     private key, access key, and the words auth and pwd; an unquoted value
//     ends at whitespace or one of , ; & ) ] } > and quotes;
//   - PEM private keys;
//   - directories of absolute paths: /home/u/x/y.yaml → …/y.yaml,
//     C:\Users\u\y.yaml → …\y.yaml; URLs are left alone.
//
// It errs on the side of redacting: a secret-looking key takes its next word
// even in prose ("get token: context canceled" → "get token: [redacted]
// canceled"). String(String(s)) == String(s).
func String(msg string) string {
	msg = privateKeyPattern.ReplaceAllString(msg, "[redacted private key]")
	msg = urlUserinfoPattern.ReplaceAllString(msg, "${1}"+redacted+"@")
	msg = redactKeyValues(msg)
	msg = bearerPattern.ReplaceAllString(msg, "${1} "+redacted)
	msg = unixDirPattern.ReplaceAllString(msg, "${1}…/")
	return windowsDirPattern.ReplaceAllString(msg, `${1}…\`)
}

// redactKeyValues redacts the values of secret keys. It scans by hand rather
// than with ReplaceAllStringFunc: a non-secret match must not swallow its
// value, which may hold a secret pair itself (url=https://h/?token=x).
func redactKeyValues(msg string) string {
	var out strings.Builder
	copied, from := 0, 0
	for from < len(msg) {
		m := keyValuePattern.FindStringSubmatchIndex(msg[from:])
		if m == nil {
			break
		}
		key := msg[from+m[4] : from+m[5]]
		valueStart, valueEnd := from+m[10], from+m[11]
		if !isSecretKey(key) || authFieldPath(key) {
			from = valueStart
			continue
		}
		out.WriteString(msg[copied:valueStart])
		out.WriteString(redactValue(msg[valueStart:valueEnd]))
		copied, from = valueEnd, valueEnd
	}
	if copied == 0 {
		return msg
	}
	out.WriteString(msg[copied:])
	return out.String()
}

// redactValue replaces a value and keeps its quoting, so that JSON stays
// JSON.
func redactValue(v string) string {
	for _, quote := range []string{`\"`, `"`, `'`} {
		if len(v) >= 2*len(quote) && strings.HasPrefix(v, quote) && strings.HasSuffix(v, quote) {
			return quote + redacted + quote
		}
	}
	return redacted
}

func isSecretKey(key string) bool {
	key = strings.ToLower(key)
	for _, term := range secretKeyTerms {
		if strings.Contains(key, term) {
			return true
		}
	}
	for word := range strings.FieldsFuncSeq(key, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if slices.Contains(secretKeyWords, word) {
			return true
		}
	}
	return false
}
