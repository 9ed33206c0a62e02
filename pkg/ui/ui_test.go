package ui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serve(method, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

func TestThePageIsServedWithItsPolicy(t *testing.T) {
	w := serve(http.MethodGet, "/ui/")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<script type="module" src="app.js"></script>`)
	h := w.Header()
	assert.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'")
	assert.NotContains(t, h.Get("Content-Security-Policy"), "unsafe-inline")
	assert.Contains(t, h.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	assert.Equal(t, "no-store", h.Get("Cache-Control"))

	for path, typ := range map[string]string{"/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		w := serve(http.MethodGet, path)
		require.Equal(t, http.StatusOK, w.Code, path)
		assert.Contains(t, w.Header().Get("Content-Type"), typ, path)
		assert.NotEmpty(t, w.Header().Get("Content-Security-Policy"), path)
	}
}

func TestOnlyGETAndHEADAndOnlyItsFiles(t *testing.T) {
	w := serve(http.MethodPost, "/ui/")
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
	assert.Equal(t, http.StatusOK, serve(http.MethodHead, "/ui/app.js").Code)
	assert.Equal(t, http.StatusNotFound, serve(http.MethodGet, "/ui/nope.js").Code)

	w = serve(http.MethodGet, "/ui")
	assert.Equal(t, http.StatusMovedPermanently, w.Code)
	assert.Equal(t, "/ui/", w.Header().Get("Location"))
}

// The page's scripts never write markup from a string: every text goes in
// through textContent, attributes or text nodes (dom.js). A grep, so that
// a later edit that reaches for innerHTML fails here before it fails in a
// browser.
func TestThePageNeverSetsMarkupFromStrings(t *testing.T) {
	sink := regexp.MustCompile(`\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval|new Function)\b`)
	err := fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		data, err := fs.ReadFile(static, path)
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			if sink.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d sets markup from a string: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// No file reaches beyond the daemon: no CDN, no other origin, so the page
// works with the network unplugged.
func TestThePageLoadsNothingFromElsewhere(t *testing.T) {
	err := fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(static, path)
		require.NoError(t, err)
		for _, ref := range regexp.MustCompile(`(?:src|href)=["']([^"']+)["']|from ['"]([^'"]+)['"]|url\(([^)]+)\)`).FindAllStringSubmatch(string(data), -1) {
			target := ref[1] + ref[2] + ref[3]
			if strings.HasPrefix(target, "#") || strings.HasPrefix(target, "./") || !strings.Contains(target, ":") && !strings.HasPrefix(target, "//") {
				continue
			}
			t.Errorf("%s loads %s from elsewhere", path, target)
		}
		return nil
	})
	require.NoError(t, err)
}
