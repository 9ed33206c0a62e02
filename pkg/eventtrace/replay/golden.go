package replay

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/musterd/musterd/pkg/eventtrace"
)

// Encode writes tr in the trace format.
func Encode(tr *eventtrace.Trace) ([]byte, error) {
	var buf bytes.Buffer
	w, err := eventtrace.NewWriter(&buf, tr.Header)
	if err != nil {
		return nil, err
	}
	for _, e := range tr.Entries {
		if err := w.Write(e.At, e.Event); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Diff limits: lines of context around each change, changed lines shown,
// and the largest differing middle (lines want × lines got) aligned line
// by line; a larger one is shown as removed, then added.
const (
	diffContext  = 2
	diffMaxShown = 40
	diffMaxCells = 4 << 20
)

// Diff returns a line diff of want and got: "-" lines only in want, "+"
// lines only in got, with line numbers in want ("@@ -12 +12 @@") and a
// little context. It shows the first diffMaxShown changed lines and counts
// the rest. It returns "" for equal inputs.
func Diff(want, got []byte) string {
	ops := align(splitLines(want), splitLines(got))
	changed := 0
	for _, op := range ops {
		if op.kind != ' ' {
			changed++
		}
	}
	if changed == 0 {
		return ""
	}
	var out strings.Builder
	out.WriteString("--- golden\n+++ replay\n")
	shown, printed := 0, 0 // changed lines shown; ops printed or skipped
	for i := 0; i < len(ops) && shown < diffMaxShown; {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		// A hunk runs from context before its first change to context after
		// its last, taking in changes less than two contexts apart.
		last := i
		for k := i; k < len(ops) && k-last <= 2*diffContext; k++ {
			if ops[k].kind != ' ' {
				last = k
			}
		}
		from, to := max(i-diffContext, printed), min(last+diffContext+1, len(ops))
		fmt.Fprintf(&out, "@@ -%d +%d @@\n", ops[from].a+1, ops[from].b+1)
		for _, op := range ops[from:to] {
			if op.kind != ' ' {
				if shown == diffMaxShown {
					break
				}
				shown++
			}
			fmt.Fprintf(&out, "%c %s\n", op.kind, op.line)
		}
		printed, i = to, to
	}
	if changed > shown {
		fmt.Fprintf(&out, "… and %d more changed lines\n", changed-shown)
	}
	return out.String()
}

func splitLines(data []byte) []string {
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// diffOp is one line of a diff: kept (' '), removed ('-') or added ('+'),
// with its line numbers in want and got (of the next line, for a line the
// other side lacks).
type diffOp struct {
	kind rune
	line string
	a, b int
}

// align matches a and b: the common prefix and suffix, and between them a
// longest common subsequence when the middle is small enough.
func align(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for i := range pre {
		ops = append(ops, diffOp{' ', a[i], i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ops = append(ops, alignMiddle(ma, mb, pre)...)
	for i := range suf {
		ia, ib := len(a)-suf+i, len(b)-suf+i
		ops = append(ops, diffOp{' ', a[ia], ia, ib})
	}
	return ops
}

func alignMiddle(a, b []string, offset int) []diffOp {
	var ops []diffOp
	if len(a)*len(b) > diffMaxCells {
		for i, l := range a {
			ops = append(ops, diffOp{'-', l, offset + i, offset})
		}
		for j, l := range b {
			ops = append(ops, diffOp{'+', l, offset + len(a), offset + j})
		}
		return ops
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:]
	// and b[j:], in one flat table.
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], offset + i, offset + j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			ops = append(ops, diffOp{'-', a[i], offset + i, offset + j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], offset + i, offset + j})
			j++
		}
	}
	return ops
}
