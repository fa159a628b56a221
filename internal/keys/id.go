package keys

import (
	"errors"
	"fmt"
	"strings"
)

// CheckID reports a replica id that cannot name the replica's keys: it is
// their last segment (members/<id>, assign/<id>/...), so it must be given
// and hold no "/", which would make it look like a deeper key to anyone
// listing the prefix.
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("ID is required: the replica's id, the holder of its runs")
	case strings.Contains(id, "/"):
		return fmt.Errorf("ID %q must not contain \"/\": it is the last segment of the replica's keys", id)
	}
	return nil
}
