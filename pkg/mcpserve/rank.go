package mcpserve

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
)

// ranked is a document's place in a ranking.
type ranked struct {
	index int
	score float64
}

// BM25's parameters, the usual ones.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// rank scores docs against query with Okapi BM25 and returns those that
// match at least one term, best first; equal scores keep the docs' order.
func rank(query string, docs []string) []ranked {
	terms := slices.Compact(slices.Sorted(slices.Values(tokenize(query))))
	if len(terms) == 0 || len(docs) == 0 {
		return nil
	}
	tokens := make([][]string, len(docs))
	df := map[string]int{}
	total := 0
	for i, d := range docs {
		tokens[i] = tokenize(d)
		total += len(tokens[i])
		seen := map[string]bool{}
		for _, t := range tokens[i] {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	avg := float64(total) / float64(len(docs))
	n := float64(len(docs))
	var out []ranked
	for i, toks := range tokens {
		tf := map[string]int{}
		for _, t := range toks {
			tf[t]++
		}
		score := 0.0
		for _, term := range terms {
			f := float64(tf[term])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[term])+0.5)/(float64(df[term])+0.5))
			norm := 1 - bm25B
			if avg > 0 {
				norm += bm25B * float64(len(toks)) / avg
			}
			score += idf * f * (bm25K1 + 1) / (f + bm25K1*norm)
		}
		if score > 0 {
			out = append(out, ranked{i, score})
		}
	}
	slices.SortStableFunc(out, func(a, b ranked) int { return cmp.Compare(b.score, a.score) })
	return out
}

// tokenize lowercases s and splits it at anything not a letter or digit, so
// that x_git_status yields x, git and status.
func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
