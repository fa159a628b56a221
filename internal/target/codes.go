package target

import (
	"fmt"
	"strconv"
	"strings"
)

// defaultSuccessCodes applies when a job lists none: any 2xx answer.
var defaultSuccessCodes = []string{"2xx"}

// codeSet is a parsed success_codes list: inclusive ranges of statuses.
type codeSet [][2]int

// parseCodes reads each entry as an exact code ("204") or a class ("2xx").
// A malformed entry is an error, raised before any request is sent, so a typo
// shows up in the run record instead of as a mystery failure (config
// validation should have caught it already).
func parseCodes(codes []string) (codeSet, error) {
	if len(codes) == 0 {
		codes = defaultSuccessCodes
	}
	set := make(codeSet, 0, len(codes))
	for _, code := range codes {
		c := strings.ToLower(strings.TrimSpace(code))
		if len(c) == 3 && c[0] >= '1' && c[0] <= '5' && c[1:] == "xx" {
			base := int(c[0]-'0') * 100
			set = append(set, [2]int{base, base + 99})
			continue
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 100 || n > 599 {
			return nil, fmt.Errorf("target: invalid success code %q: want 100-599 or a class like 2xx", code)
		}
		set = append(set, [2]int{n, n})
	}
	return set, nil
}

func (s codeSet) has(status int) bool {
	for _, r := range s {
		if r[0] <= status && status <= r[1] {
			return true
		}
	}
	return false
}
