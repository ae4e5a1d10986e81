// Package suggest finds the names a mistyped name was probably meant to be,
// for "did you mean" in error messages: component names, parameters,
// variables, CEL functions. Inputs may be a tenant's, so the work is bounded.
package suggest

import (
	"sort"
	"strings"
)

// MaxCompared bounds the names one call compares (a CTF may list many).
const MaxCompared = 10000

// maxLen bounds the length of a name compared (the distance is quadratic).
const maxLen = 1024

// Closest returns up to n names nearest to name by edit distance, only those
// near enough to be a typo of it, nearest first, then alphabetically. Near
// enough: at most a third of the length of name's last path element (names
// such as example.com/team/x share long prefixes), at least 2 edits.
func Closest(name string, names []string, n int) []string {
	if len(name) > maxLen {
		return nil
	}
	last := name[strings.LastIndex(name, "/")+1:]
	limit := max(2, len([]rune(last))/3)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	for i, c := range names {
		if i == MaxCompared {
			break
		}
		if c == name || seen[c] || abs(len(c)-len(name)) > limit || len(c) > maxLen {
			continue
		}
		seen[c] = true
		if d := Distance(name, c); d <= limit {
			cs = append(cs, cand{c, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// Distance is the Levenshtein distance of a and b, in runes.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
