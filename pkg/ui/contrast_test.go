package ui

import (
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every state badge's text keeps a contrast of at least 7:1 (WCAG AAA)
// against its background, and the page's text colours against the page:
// the colours are read from style.css itself.
func TestTheStatesColoursAreReadable(t *testing.T) {
	data, err := fs.ReadFile(static, "static/style.css")
	require.NoError(t, err)
	css := string(data)

	rules := regexp.MustCompile(`\.(st-[a-z]+)\s*\{\s*background:\s*(#[0-9a-f]{6});\s*color:\s*(#[0-9a-f]{6});`).FindAllStringSubmatch(css, -1)
	require.Len(t, rules, 4, "the four state colours")
	for _, r := range rules {
		assert.GreaterOrEqual(t, contrast(r[3], r[2]), 7.0, "%s: %s on %s", r[1], r[3], r[2])
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z]+):\s*(#[0-9a-f]{6})`).FindAllStringSubmatch(css, -1) {
		vars[m[1]] = m[2]
	}
	for _, fg := range []string{"fg", "muted", "link", "focus"} {
		for _, bg := range []string{"bg", "panel"} {
			require.Contains(t, vars, fg)
			require.Contains(t, vars, bg)
			assert.GreaterOrEqual(t, contrast(vars[fg], vars[bg]), 7.0, "--%s on --%s", fg, bg)
		}
	}
}

// contrast is WCAG's contrast ratio of two #rrggbb colours.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	var c [3]float64
	for i := range c {
		v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		s := float64(v) / 255
		if s <= 0.03928 {
			c[i] = s / 12.92
		} else {
			c[i] = math.Pow((s+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}
