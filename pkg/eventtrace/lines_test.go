package eventtrace

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLinesUpToTheBoundAndNoLonger(t *testing.T) {
	longest := strings.Repeat("x", MaxLineBytes)
	for _, end := range []string{"\n", ""} {
		lines := lineReader{r: bufio.NewReader(strings.NewReader("a\n" + longest + end))}
		for _, want := range []string{"a", longest} {
			got, err := lines.next()
			require.NoError(t, err)
			assert.True(t, string(got) == want, "a line of %d bytes", len(want))
		}
		_, err := lines.next()
		assert.Equal(t, io.EOF, err)
	}

	lines := lineReader{r: bufio.NewReader(strings.NewReader("a\n" + longest + "x\n"))}
	_, err := lines.next()
	require.NoError(t, err)
	_, err = lines.next()
	assert.EqualError(t, err, fmt.Sprintf("trace: line 2: longer than %d bytes", MaxLineBytes))
}
