package main

import (
	"bytes"
	"net"
	"strings"
	"testing"
)

// The address replicas are told to dial must be one they can dial, named
// in the user's words when it is not.
func TestEtcdListenIsChecked(t *testing.T) {
	for _, tc := range []struct {
		listen, want string
	}{
		{"127.0.0.1:0", `--listen "127.0.0.1:0": the port must be 1 to 65535: replicas name it in --etcd-endpoints`},
		{"127.0.0.1:99999", `--listen "127.0.0.1:99999": the port must be 1 to 65535`},
		{"0.0.0.0:2379", `--listen "0.0.0.0:2379": name the address replicas will dial (127.0.0.1, or this host's address), not 0.0.0.0`},
		{":2379", `--listen ":2379": want HOST:PORT, such as 127.0.0.1:2379`},
		{"localhost", `--listen "localhost": want HOST:PORT, such as 127.0.0.1:2379`},
		{"https://127.0.0.1:2379", `--listen "https://127.0.0.1:2379": this etcd serves plain http:// only; for TLS run etcd itself`},
		{"http://127.0.0.1:2379/v3", `--listen "http://127.0.0.1:2379/v3": want HOST:PORT`},
	} {
		// Checked as a function: the command, let through, would serve.
		_, err := etcdClientURL(tc.listen)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("etcd --listen %s: %v; want %q", tc.listen, err, tc.want)
		}
	}
	var stderr bytes.Buffer
	code := run([]string{"etcd", "--listen", "localhost", "--data-dir", t.TempDir()}, nil, &stderr, false)
	want := `scheduler: --listen "localhost": want HOST:PORT, such as 127.0.0.1:2379 (see 'scheduler help')`
	if code != exitUsage || strings.TrimSpace(stderr.String()) != want {
		t.Errorf("etcd --listen localhost: exit %d, %q; want exit %d and %q", code, stderr.String(), exitUsage, want)
	}
}

func TestEtcdClientURL(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:2379":         "http://127.0.0.1:2379",
		"http://127.0.0.1:2379":  "http://127.0.0.1:2379",
		"http://127.0.0.1:2379/": "http://127.0.0.1:2379",
		"localhost:23790":        "http://localhost:23790",
		"[::1]:2379":             "http://[::1]:2379",
	} {
		got, err := etcdClientURL(listen)
		if err != nil || got != want {
			t.Errorf("etcdClientURL(%q) = %q, %v; want %q", listen, got, err, want)
		}
	}
}

func TestEtcdRefusesAnEmptyDataDir(t *testing.T) {
	var stderr bytes.Buffer
	code := run([]string{"etcd", "--data-dir", ""}, nil, &stderr, false)
	want := "--data-dir is empty: name the directory that keeps etcd's data"
	if code != exitUsage || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, %q; want exit %d and %q", code, stderr.String(), exitUsage, want)
	}
}

// A second etcd on the same address says so, in the flag's words.
func TestEtcdSaysWhenTheAddressIsTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, stderr, code := runBinary(t, "etcd", "--listen", addr, "--data-dir", t.TempDir(), "--log-format", "text")
	want := addr + " is in use, by another etcd or program: stop it or choose another --listen"
	if code != exitFail || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, exitFail, want)
	}
}
