package api

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"testing"
)

// Short and long lists (the long ones are streamed) decode to what was
// written.
func TestWriteJSONLists(t *testing.T) {
	type item struct {
		Name string            `json:"name"`
		Tags map[string]string `json:"tags,omitempty"`
	}
	for _, n := range []int{0, 1, streamAbove, streamAbove + 1, 5000} {
		in := make([]item, n)
		for i := range in {
			in[i] = item{Name: fmt.Sprintf("job-%d", i), Tags: map[string]string{"n": fmt.Sprint(i)}}
		}
		rec := httptest.NewRecorder()
		writeJSON(rec, 200, in)
		var out []item
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%d items: %v\n%.200s", n, err, rec.Body.String())
		}
		if out == nil || !reflect.DeepEqual(out, in) {
			t.Errorf("%d items: decoded %d, different", n, len(out))
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	}
}
