package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/etcdsched/scheduler/internal/embedetcd"
)

// etcdCommand runs a single-member etcd on a fixed client address, for
// several `scheduler run` on one machine to share with --etcd-endpoints
// (deploy/README.md, "Without containers"). The etcd that `scheduler run`
// embeds when it has no endpoints listens on a random port and lives and
// dies with its replica; this one outlives every replica's restart.
//
// Its flags are not read from SCHEDULER_* variables: those are meant for
// the replicas (SCHEDULER_LISTEN, SCHEDULER_DATA_DIR) and would move
// this etcd too.
func etcdCommand(args []string, stdout, stderr io.Writer) int {
	var listen, dataDir, name, logLevel, logFormat string
	fs := flag.NewFlagSet("scheduler etcd", flag.ContinueOnError)
	fs.StringVar(&listen, "listen", "127.0.0.1:2379", "client `ADDR` (HOST:PORT) to listen on; replicas use http://ADDR as --etcd-endpoints")
	fs.StringVar(&dataDir, "data-dir", "etcd-data", "`DIR` of the member's data; a restart with the same DIR keeps every key")
	fs.StringVar(&name, "name", "scheduler-etcd", "member `NAME`")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&logFormat, "log-format", "json", "json or text")
	if _, err := parseInterleaved(fs, args, stdout, []string{}, 0, 0); err != nil {
		return usageError(stderr, err)
	}
	clientURL, err := etcdClientURL(listen)
	if err != nil {
		return usageError(stderr, fmt.Errorf("%w: %w", errUsage, err))
	}
	if dataDir == "" {
		return usageError(stderr, fmt.Errorf("%w: --data-dir is empty: name the directory that keeps etcd's data", errUsage))
	}
	logger, err := newLogger(stderr, logLevel, logFormat)
	if err != nil {
		return usageError(stderr, fmt.Errorf("%w: %w", errUsage, err))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	etcdLog, etcdLevel := etcdLogger(stderr)
	srv, err := embedetcd.Start(ctx, embedetcd.Options{
		DataDir:   dataDir,
		Name:      name,
		ClientURL: clientURL,
		Logger:    etcdLog,
	})
	if errors.Is(err, syscall.EADDRINUSE) {
		err = fmt.Errorf("%s is in use, by another etcd or program: stop it or choose another --listen", listen)
	}
	if err != nil {
		logger.Error("etcd did not start", "listen", listen, "data_dir", dataDir, "err", err)
		return exitFail
	}
	logger.Info("etcd serving", "endpoint", clientURL, "data_dir", dataDir, "name", name)
	select {
	case <-ctx.Done():
		// Stopping, etcd logs each listener it closes as a failure.
		etcdLevel.SetLevel(zapcore.FatalLevel)
		srv.Close()
		logger.Info("etcd stopped")
		return exitOK
	case err := <-srv.Err():
		srv.Close()
		logger.Error("etcd stopped with an error", "err", err)
		return exitFail
	}
}

// etcdClientURL turns --listen (HOST:PORT, or http://HOST:PORT as copied
// from an endpoint list) into the URL etcd listens on and advertises.
func etcdClientURL(listen string) (string, error) {
	addr := listen
	if scheme, rest, ok := strings.Cut(listen, "://"); ok {
		if scheme != "http" {
			return "", fmt.Errorf("--listen %q: this etcd serves plain http:// only; for TLS run etcd itself", listen)
		}
		u, err := url.Parse(listen)
		if err != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
			return "", fmt.Errorf("--listen %q: want HOST:PORT, such as 127.0.0.1:2379", listen)
		}
		addr = strings.TrimSuffix(rest, "/")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", fmt.Errorf("--listen %q: want HOST:PORT, such as 127.0.0.1:2379", listen)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// etcd advertises its listen URL to clients; an unspecified
		// address is not one a client can dial.
		return "", fmt.Errorf("--listen %q: name the address replicas will dial (127.0.0.1, or this host's address), not %s", listen, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("--listen %q: the port must be 1 to 65535: replicas name it in --etcd-endpoints", listen)
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// etcdLogger passes etcd's own warnings and errors (a slow disk, a full
// quota) to stderr; its info lines are many and of no use to a user of
// the scheduler. The level is returned to quiet it on shutdown.
func etcdLogger(w io.Writer) (*zap.Logger, zap.AtomicLevel) {
	level := zap.NewAtomicLevelAt(zap.WarnLevel)
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level)), level
}
