package v1alpha1

// stringsOver returns every string of up to n of the given characters (or
// strings), the empty one included.
func stringsOver(alphabet []string, n int) []string {
	strs := []string{""}
	for prev := strs; n > 0; n-- {
		var next []string
		for _, s := range prev {
			for _, c := range alphabet {
				next = append(next, s+c)
			}
		}
		strs = append(strs, next...)
		prev = next
	}
	return strs
}
