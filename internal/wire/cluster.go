package wire

import (
	"time"

	"github.com/etcdsched/scheduler/config"
)

// Leader is the answer of GET /api/v1/leader.
type Leader struct {
	ID      string `json:"id"`
	APIAddr string `json:"api_addr"`
	// Since is when the leader won, by its clock, from its record: the
	// same on every replica (docs/design-edges.md#when-the-leader-won-apiv1leader-since). A leader of an earlier
	// version writes none; then it is when this replica first saw it.
	Since time.Time `json:"since"`
	// Revision is the create revision of the leader's election key, the
	// value its writes are fenced with.
	Revision int64 `json:"revision"`
}

// Member is one live replica, as GET /api/v1/members shows it.
type Member struct {
	ID         string    `json:"id"`
	APIAddr    string    `json:"api_addr"`
	Version    string    `json:"version"`
	ConfigHash string    `json:"config_hash"`
	StartedAt  time.Time `json:"started_at"`
	// Protocol is the newest run protocol the replica's worker runs: 2
	// for the lean one (docs/protocol.md); absent (0) in replicas that
	// know only the queue's. The leader assigns runs only to members of 2.
	Protocol int `json:"protocol,omitempty"`
	// IsLeader is not stored: the election fills it.
	IsLeader bool `json:"is_leader"`
}

// Status is what GET /api/v1/status says about the replica that answers.
type Status struct {
	ID         string `json:"id"`
	Version    string `json:"version"`
	IsLeader   bool   `json:"is_leader"`
	ConfigFile string `json:"config_file"`
	ConfigHash string `json:"config_hash"`
	// ConfigFiles are the files of the applied config, the main one first
	// then each included team file, each with its own hash.
	ConfigFiles     []config.File `json:"config_files,omitempty"`
	LastReloadError string        `json:"last_reload_error,omitempty"`
	LastReloadAt    time.Time     `json:"last_reload_at,omitzero"`
	StartedAt       time.Time     `json:"started_at"`
	EtcdEndpoints   []string      `json:"etcd_endpoints"`
	EmbeddedEtcd    bool          `json:"embedded_etcd"`
	// Leader is the leader's id as this replica sees it, empty while
	// there is none.
	Leader string `json:"leader"`
	// PendingNotifications counts the notifications not yet delivered,
	// by sink; OldestNotification is when the oldest was created.
	PendingNotifications int            `json:"pending_notifications"`
	PendingBySink        map[string]int `json:"pending_by_sink"`
	OldestNotification   time.Time      `json:"oldest_notification,omitzero"`
}
