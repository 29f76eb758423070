// Package suggest finds what a mistyped name most likely meant, for a
// "did you mean" in an error: the nearest of the names that exist, by an
// edit distance that counts two swapped neighbours as one edit.
package suggest

import "strings"

// Nearest is the name closest to s by edit distance, and whether it is
// close enough to be what was meant: at most a third of its letters off,
// or s a start of it. s is taken in lower case; names are compared as
// they are.
func Nearest(s string, names []string) (string, bool) {
	s = strings.ToLower(s)
	best, bestD := "", -1
	for _, n := range names {
		d := editDistance(s, n)
		if strings.HasPrefix(n, s) && len(s) >= 2 {
			d = min(d, 1)
		}
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	return best, bestD >= 0 && bestD <= max(1, len(best)/3)
}

// editDistance is the edit distance between a and b in bytes, with two
// neighbours swapped one edit ("hlep" is one from "help").
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
