package replica

import (
	"context"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startTLSEtcd runs an embedded etcd member that serves clients over TLS
// only and requires a client certificate signed by the test CA. It returns
// the https endpoint.
func startTLSEtcd(t *testing.T, p pki) string {
	t.Helper()
	curl, _ := url.Parse("https://127.0.0.1:0")
	purl, _ := url.Parse("http://127.0.0.1:0")
	cfg := embed.NewConfig()
	cfg.Name = "tls"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	// The lowest bcrypt cost (bcrypt.MinCost): checking a password at the
	// default cost takes most of a second under the race detector.
	cfg.BcryptCost = 4
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile:       p.ServerCert,
		KeyFile:        p.ServerKey,
		TrustedCAFile:  p.CA,
		ClientCertAuth: true,
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("tls etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("tls etcd: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("tls etcd: not ready after a minute")
	}
	return "https://" + e.Clients[0].Addr().String()
}

// adminClient talks to the TLS member with the test client certificate,
// and with root's password once auth is on.
func adminClient(t *testing.T, p pki, endpoint, user, password string) *clientv3.Client {
	t.Helper()
	tc, err := (transport.TLSInfo{TrustedCAFile: p.CA, CertFile: p.ClientCert, KeyFile: p.ClientKey}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, TLS: tc, Username: user, Password: password,
		DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

const rootPassword = "r00t-pw"

// enableAuth creates root (role root) and sched, whose role can read and
// write the scheduler's prefix and nothing else, then turns auth on.
func enableAuth(t *testing.T, p pki, endpoint, prefix, schedPassword string) {
	t.Helper()
	cli := adminClient(t, p, endpoint, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", rootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "sched"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "sched", prefix, clientv3.GetPrefixRangeEnd(prefix),
				clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "sched", schedPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "sched", "sched"); return err },
		// A user with no role at all: authenticates, may read nothing.
		func() error { _, err := cli.UserAdd(ctx, "nobody", "nobody-pw"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("enable auth, step %d: %v", i, err)
		}
	}
}
