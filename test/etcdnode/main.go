// Command etcdnode runs one etcd member, built from etcd's embed package, so
// the fault-injection suite (test/fault) can start, kill and restart the
// members of a real multi-member cluster as separate processes.
//
//	etcdnode --name m1 --data-dir DIR --client-url http://127.0.0.1:2379 \
//	  --peer-url http://127.0.0.1:2380 \
//	  --initial-cluster m1=http://127.0.0.1:2380,m2=...,m3=... \
//	  --initial-cluster-state new|existing
//
// SIGTERM or SIGINT stops the member gracefully.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdnode:", err)
		os.Exit(1)
	}
}

func run() error {
	o := parseFlags()
	cfg, err := o.config()
	if err != nil {
		return err
	}
	return serve(cfg, o.name, o.clientURL)
}

// options are the command line's settings.
type options struct {
	name, dataDir, clientURL, peerURL, initialCluster, state, logLevel string
	noFsync                                                            bool
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.name, "name", "default", "member name")
	flag.StringVar(&o.dataDir, "data-dir", "", "data directory (required)")
	flag.StringVar(&o.clientURL, "client-url", "http://127.0.0.1:2379", "client URL to listen on and advertise")
	flag.StringVar(&o.peerURL, "peer-url", "http://127.0.0.1:2380", "peer URL to listen on and advertise")
	flag.StringVar(&o.initialCluster, "initial-cluster", "", "name=peerURL,... (default: this member alone)")
	flag.StringVar(&o.state, "initial-cluster-state", "new", "new or existing")
	flag.StringVar(&o.logLevel, "log-level", "warn", "etcd log level")
	flag.BoolVar(&o.noFsync, "unsafe-no-fsync", false, "skip fsync (a process kill still loses nothing; a machine crash would)")
	flag.Parse()
	return o
}

// config checks the options and makes the member's embed configuration.
func (o options) config() (*embed.Config, error) {
	if o.dataDir == "" {
		return nil, fmt.Errorf("--data-dir is required")
	}
	if o.state != embed.ClusterStateFlagNew && o.state != embed.ClusterStateFlagExisting {
		return nil, fmt.Errorf("--initial-cluster-state %q: want new or existing", o.state)
	}
	curl, err := url.Parse(o.clientURL)
	if err != nil {
		return nil, fmt.Errorf("--client-url: %w", err)
	}
	purl, err := url.Parse(o.peerURL)
	if err != nil {
		return nil, fmt.Errorf("--peer-url: %w", err)
	}

	cfg := embed.NewConfig()
	cfg.Name = o.name
	cfg.Dir = o.dataDir
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = o.initialCluster
	if cfg.InitialCluster == "" {
		cfg.InitialCluster = cfg.InitialClusterFromName(o.name)
	}
	cfg.ClusterState = o.state
	cfg.InitialClusterToken = "etcdnode"
	cfg.UnsafeNoFsync = o.noFsync
	// For test/bench -pprof: /debug/pprof/ on the client URL.
	cfg.EnablePprof = os.Getenv("ETCDNODE_PPROF") == "1"
	cfg.LogLevel = o.logLevel
	cfg.LogOutputs = []string{"stderr"}
	return cfg, nil
}

// serve starts the member and runs it until it fails or SIGTERM or SIGINT
// stops it, giving it 30 seconds to close.
func serve(cfg *embed.Config, name, clientURL string) error {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	defer e.Close()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcdnode: %s ready at %s\n", name, clientURL)
	case err := <-e.Err():
		return fmt.Errorf("serve: %w", err)
	case <-sigs:
		return nil
	}
	select {
	case err := <-e.Err():
		return fmt.Errorf("serve: %w", err)
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "etcdnode: %s stopping on %s\n", name, s)
		stopped := make(chan struct{})
		go func() { e.Close(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("not stopped 30s after %s", s)
		}
		return nil
	}
}
