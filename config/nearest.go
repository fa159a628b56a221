package config

// NearestJob is the job name closest to name, for a hint to a person who
// mistyped one ("no job "nihgtly": did you mean "nightly"?): the name at
// the fewest single-character edits (an insertion, a deletion, a change,
// or two neighbours swapped), and only when that is few enough to be a
// slip rather than another name. Empty when no job is that close.
func (c *Config) NearestJob(name string) string {
	best, bestD := "", maxSlip(name)+1
	for i := range c.Jobs {
		if d := editDistance(name, c.Jobs[i].Name); d < bestD {
			best, bestD = c.Jobs[i].Name, d
		}
	}
	return best
}

// maxSlip is how many edits still read as a typo of name: one in a short
// name, up to a third of a long one.
func maxSlip(name string) int {
	return max(1, min(3, len(name)/3))
}

// editDistance is the optimal string alignment distance of a and b: the
// Levenshtein distance with a swap of two neighbours counted as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance of ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
