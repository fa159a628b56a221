package refusal

import (
	"errors"
	"testing"
)

func TestARefusalKeepsItsKindAndSpeaksToPeople(t *testing.T) {
	kind := errors.New("jobs: unknown job")
	err := New(kind, "no job %q: check the name with scheduler jobs", "reprot")
	if !errors.Is(err, kind) {
		t.Error("errors.Is does not find the kind")
	}
	var u interface{ UserMessage() string }
	if !errors.As(err, &u) || u.UserMessage() != `no job "reprot": check the name with scheduler jobs` {
		t.Errorf("UserMessage: %v", err)
	}
	if err.Error() != `jobs: unknown job: no job "reprot": check the name with scheduler jobs` {
		t.Errorf("Error: %q", err.Error())
	}
}
