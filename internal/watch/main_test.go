package watch

import (
	"testing"

	"github.com/etcdsched/scheduler/internal/etcdtest"
)

func TestMain(m *testing.M) { etcdtest.VerifyNoLeaks(m) }
