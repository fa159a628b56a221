package election

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jonboulle/clockwork"

	"github.com/etcdsched/scheduler/internal/keys"
)

// Config names a replica and the key space it campaigns in.
type Config struct {
	// Prefix is the scheduler's key prefix, e.g. "/scheduler/". The election
	// and the member records live under it (package keys).
	Prefix string
	// ID names this replica in the leader record and the member key.
	ID string
	// APIAddr is where other replicas and clients reach this replica's API.
	APIAddr string
	Logger  *slog.Logger
	Clock   clockwork.Clock
}

func (c *Config) check() error {
	if err := checkPrefix(c.Prefix); err != nil {
		return err
	}
	if err := checkID(c.ID); err != nil {
		return err
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return nil
}

// The prefix must end in "/": "/scheduler" would also match the keys of a
// neighbouring "/scheduler2/" and mix two clusters' elections.
func checkPrefix(prefix string) error {
	if prefix == "" || !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("election: prefix %q must end with \"/\"", prefix)
	}
	return nil
}

// The id becomes the last segment of members/<id>; a "/" would make it look
// like a deeper key to anyone listing the prefix.
func checkID(id string) error {
	if id == "" {
		return errors.New("election: id must not be empty")
	}
	if strings.Contains(id, "/") {
		return fmt.Errorf("election: id %q must not contain \"/\"", id)
	}
	return nil
}

func electionPrefix(prefix string) string { return keys.New(prefix).Election() }

func membersPrefix(prefix string) string { return keys.New(prefix).Members() }
