package events

import "strings"

// CompareKeys orders keys as their spellings kind/namespace/name
// (Key.String) compare, without spelling them: sorting keys by String
// would make two strings per comparison, which on a cold start's large
// sorts is most of the sorting time and much of its garbage. The order is the
// spelling's, not the fields' one after another: "a-b" sorts before "a/"
// because '-' < '/', so a namespace "a-b" comes before "a".
func CompareKeys(a, b Key) int {
	a, b = a.Canonical(), b.Canonical()
	if a.Kind == b.Kind {
		if a.Namespace == b.Namespace {
			return strings.Compare(a.Name, b.Name)
		}
		return compareSpelled([5]string{a.Namespace, "/", a.Name}, [5]string{b.Namespace, "/", b.Name})
	}
	return compareSpelled([5]string{a.Kind, "/", a.Namespace, "/", a.Name}, [5]string{b.Kind, "/", b.Namespace, "/", b.Name})
}

// compareSpelled compares the concatenations of a's and b's parts.
func compareSpelled(a, b [5]string) int {
	ai, aj, bi, bj := 0, 0, 0, 0 // part and byte within it
	for {
		for ai < len(a) && aj == len(a[ai]) {
			ai, aj = ai+1, 0
		}
		for bi < len(b) && bj == len(b[bi]) {
			bi, bj = bi+1, 0
		}
		switch {
		case ai == len(a) && bi == len(b):
			return 0
		case ai == len(a):
			return -1
		case bi == len(b):
			return 1
		}
		if ca, cb := a[ai][aj], b[bi][bj]; ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
		aj, bj = aj+1, bj+1
	}
}
