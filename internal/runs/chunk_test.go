package runs

import (
	"strings"
	"testing"
)

// A chunk record no writer writes is refused, with what is wrong: a
// reader answers no tick from it rather than a wrong one.
func TestDecodeChunkRecordRefusesWhatNoWriterWrites(t *testing.T) {
	const at, ended = `"at":"2026-12-04T05:00:01.5Z"`, `"ended_at":"2026-12-04T05:00:03Z"`
	good := `{` + at + `,` + ended + `,"runs":[{"job":"a","outcome":"missed","error":"late"},{"job":"b","outcome":"skipped"}]}`
	c, err := DecodeChunkRecord([]byte(good))
	if err != nil || len(c.Runs) != 2 {
		t.Fatalf("DecodeChunkRecord(%s) = %+v, %v", good, c, err)
	}
	if again := EncodeChunkRecord(&c); again != good {
		t.Errorf("encoded again:\n%s\nwant\n%s", again, good)
	}
	for _, tc := range []struct{ in, says string }{
		{`{` + ended + `,"runs":[]}`, "no instant"},
		{`{` + at + `,"runs":[]}`, "no instant or end"},
		{`{` + at + `,` + ended + `,"runs":[{"outcome":"missed"}]}`, "without a job"},
		{`{` + at + `,` + ended + `,"runs":[{"job":"a","outcome":"succeeded"}]}`, "job a's tick succeeded"},
		{`{` + at + `,` + ended + `,"runs":[{"job":"a","outcome":"missed"},{"job":"a","outcome":"skipped"}]}`, "job a's tick twice"},
		{`{"at":1}`, "decode chunk record"},
	} {
		if _, err := DecodeChunkRecord([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("DecodeChunkRecord(%s) = %v, want an error saying %q", tc.in, err, tc.says)
		}
	}
}
