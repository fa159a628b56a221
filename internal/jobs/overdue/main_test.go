package overdue

import (
	"testing"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

func TestMain(m *testing.M) { etcdtest.Main(m) }
