package watch

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*watchGRPCStream).run"))
}
