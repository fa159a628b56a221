package target

import "testing"

func TestSuccessCodes(t *testing.T) {
	tests := []struct {
		codes  []string
		status int
		want   bool
	}{
		{nil, 200, true},
		{nil, 299, true},
		{nil, 300, false},
		{nil, 199, false},
		{[]string{"2xx"}, 204, true},
		{[]string{"2XX"}, 204, true},
		{[]string{"200"}, 201, false},
		{[]string{"200", "404"}, 404, true},
		{[]string{"2xx", "3xx"}, 302, true},
		{[]string{"5xx"}, 503, true},
		{[]string{" 201 "}, 201, true},
	}
	for _, tt := range tests {
		set, err := parseCodes(tt.codes)
		if err != nil {
			t.Fatalf("parseCodes(%q): %v", tt.codes, err)
		}
		if got := set.has(tt.status); got != tt.want {
			t.Errorf("%q has %d = %v, want %v", tt.codes, tt.status, got, tt.want)
		}
	}
}

func TestSuccessCodesRejectsMalformed(t *testing.T) {
	for _, c := range []string{"", "2x", "2xxx", "6xx", "0xx", "99", "600", "abc", "x00"} {
		if _, err := parseCodes([]string{c}); err == nil {
			t.Errorf("parseCodes(%q) accepted it", c)
		}
	}
}
