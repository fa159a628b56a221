package slots

import (
	"encoding/json"
	"testing"
	"time"
)

// A slot's value is what encoding/json writes for it.
func TestValueEncodesAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	for _, v := range []Value{
		{},
		{RunID: "nightly@2026-11-30T04:00:00Z", Holder: "r1", StartedAt: at.Add(1234567), ScheduledAt: at},
		{RunID: "odd<&>\"name", Holder: "é", StartedAt: at.In(time.FixedZone("x", -7200))},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Encode(); string(got) != string(want) {
			t.Errorf("Encode() = %s\nwant       %s", got, want)
		}
	}
}
