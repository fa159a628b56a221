package mirror

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdsched/scheduler/internal/etcdtest"
	"github.com/etcdsched/scheduler/internal/poll"
)

// numbers is a Map of the keys /m/n/<name> to their values as ints; a
// value that is not a number is left out, and so is any other key.
func numbers() *Map[string, int] {
	return NewMap(func(key string) (string, bool) {
		return strings.CutPrefix(key, testPrefix+"n/")
	}, func(kv *mvccpb.KeyValue, _ int, _ bool) (int, bool) {
		n, err := strconv.Atoi(string(kv.Value))
		return n, err == nil
	})
}

func kv(key, value string, rev int64) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: []byte(testPrefix + key), Value: []byte(value), ModRevision: rev}
}

func put(key, value string, rev int64) *clientv3.Event {
	return &clientv3.Event{Type: clientv3.EventTypePut, Kv: kv(key, value, rev)}
}

func del(key string, rev int64) *clientv3.Event {
	return &clientv3.Event{Type: clientv3.EventTypeDelete, Kv: kv(key, "", rev)}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func contents(m *Map[string, int]) map[string]int {
	out := map[string]int{}
	m.Range(func(k string, v int) bool { out[k] = v; return true })
	return out
}

// Changed closes when an entry changes, and only then: an event of a key
// that is not the map's, a value that does not decode or a delete of an
// absent key leave the channel open. Ready closes at the first Reset.
func TestMapChangedClosesOnChangesOnly(t *testing.T) {
	m := numbers()
	if closed(m.Ready()) {
		t.Fatal("ready before the first Reset")
	}
	ch := m.Changed()
	m.Reset([]*mvccpb.KeyValue{kv("n/a", "1", 5), kv("other", "2", 5), kv("n/bad", "x", 5)}, 7)
	if !closed(ch) || !closed(m.Ready()) {
		t.Fatal("Reset closed neither Changed nor Ready")
	}
	if got := contents(m); !maps.Equal(got, map[string]int{"a": 1}) {
		t.Fatalf("after Reset: %v, want only a=1", got)
	}
	if !m.Seen(7) || m.Seen(8) {
		t.Fatal("Seen does not follow the reset's revision")
	}

	ch = m.Changed()
	m.Apply([]*clientv3.Event{put("other", "3", 8), put("n/bad", "y", 8), del("n/absent", 8)}, 8)
	if closed(ch) {
		t.Fatal("Changed closed though no entry changed")
	}
	if !m.Seen(8) {
		t.Fatal("Apply did not move the revision")
	}
	m.Apply([]*clientv3.Event{put("n/a", "oops", 9)}, 9)
	if v, _ := m.Get("a"); v != 1 || closed(ch) {
		t.Fatalf("an unreadable put changed a to %d (closed: %v); the entry should stay", v, closed(ch))
	}

	m.Apply([]*clientv3.Event{put("n/b", "2", 10), del("n/a", 10)}, 10)
	if !closed(ch) {
		t.Fatal("Changed stayed open after a put and a delete")
	}
	if got := contents(m); !maps.Equal(got, map[string]int{"b": 2}) || m.Len() != 1 {
		t.Fatalf("after Apply: %v, want only b=2", got)
	}
	ch = m.Changed()
	if held, stored := m.Store("b", 9); stored || held != 2 {
		t.Fatalf("Store over a held key: %d %v, want the held 2 and false", held, stored)
	}
	if closed(ch) {
		t.Fatal("a Store that stored nothing closed Changed")
	}
	if held, stored := m.Store("c", 3); !stored || held != 3 || !closed(ch) {
		t.Fatalf("Store of a new key: %d %v (changed: %v)", held, stored, closed(ch))
	}
}

// Subscribers hear every change once the map holds it: a Reset as the
// deletes of the keys gone and the puts of all it holds, with what each
// replaced.
func TestMapTellsSubscribers(t *testing.T) {
	m := numbers()
	var got []string
	m.Subscribe(func(cs []Change[string, int]) {
		for _, c := range cs {
			if v, _ := m.Get(c.Key); !c.Deleted && v != c.Value {
				t.Errorf("told of %s=%d while the map holds %d", c.Key, c.Value, v)
			}
			switch {
			case c.Deleted:
				got = append(got, "-"+c.Key+"="+strconv.Itoa(c.Prev))
			case c.Had:
				got = append(got, c.Key+"="+strconv.Itoa(c.Prev)+">"+strconv.Itoa(c.Value))
			default:
				got = append(got, c.Key+"="+strconv.Itoa(c.Value))
			}
		}
	})
	m.Reset([]*mvccpb.KeyValue{kv("n/a", "1", 2), kv("n/b", "2", 2)}, 2)
	slices.Sort(got)
	if want := []string{"a=1", "b=2"}; !slices.Equal(got, want) {
		t.Fatalf("first Reset told %v, want %v", got, want)
	}
	got = nil
	m.Apply([]*clientv3.Event{put("n/a", "3", 3), del("n/b", 3), del("n/b", 3)}, 3)
	if want := []string{"a=1>3", "-b=2"}; !slices.Equal(got, want) {
		t.Fatalf("Apply told %v, want %v", got, want)
	}
	got = nil
	m.Reset([]*mvccpb.KeyValue{kv("n/c", "4", 4)}, 4)
	if want := []string{"-a=3", "c=4"}; !slices.Equal(got, want) {
		t.Fatalf("second Reset told %v, want %v (deletes first)", got, want)
	}
}

// decode is given the value it replaces, so a value that cannot change is
// decoded once.
func TestMapDecodeSeesThePrevious(t *testing.T) {
	decoded := 0
	m := NewMap(func(key string) (string, bool) { return key, true }, func(kv *mvccpb.KeyValue, prev *string, had bool) (*string, bool) {
		if had {
			return prev, true
		}
		decoded++
		s := string(kv.Value)
		return &s, true
	})
	m.Reset([]*mvccpb.KeyValue{kv("x", "1", 2)}, 2)
	first, _ := m.Get(testPrefix + "x")
	m.Apply([]*clientv3.Event{put("x", "1", 3)}, 3)
	m.Reset([]*mvccpb.KeyValue{kv("x", "1", 3)}, 3)
	if again, _ := m.Get(testPrefix + "x"); again != first || decoded != 1 {
		t.Fatalf("decoded %d times, same value kept: %v", decoded, again == first)
	}
}

// Readers, waiters and a writer at once: every waiter taken at a moment
// before a change is woken by it (run with -race).
func TestMapConcurrentReadersAndWaiters(t *testing.T) {
	m := numbers()
	m.Reset(nil, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const changes = 500
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ch := m.Changed()
				if v, _ := m.Get("k"); v == changes {
					return
				}
				_ = m.Values()
				_ = m.Keys()
				select {
				case <-ch:
				case <-ctx.Done():
					t.Error("a waiter missed the last change")
					return
				}
			}
		}()
	}
	for i := 1; i <= changes; i++ {
		m.Apply([]*clientv3.Event{put("n/k", strconv.Itoa(i), int64(i+1))}, int64(i+1))
		if i%100 == 0 {
			m.Reset([]*mvccpb.KeyValue{kv("n/k", strconv.Itoa(i), int64(i+1))}, int64(i+1))
		}
	}
	wg.Wait()
}

// A Map mirrors a real prefix through Run: puts and deletes arrive.
func TestMapFollowsAPrefix(t *testing.T) {
	cluster := etcdtest.Start(t)
	cli := cluster.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, testPrefix+"n/a", "1"); err != nil {
		t.Fatal(err)
	}
	m := numbers()
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(mctx, cli, testPrefix, m, nil) }()
	defer func() { stop(); <-done }()
	<-m.Ready()
	if _, err := cli.Put(ctx, testPrefix+"n/b", "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, testPrefix+"n/a"); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 30*time.Second, "the map to hold b=2 alone", func() bool { return maps.Equal(contents(m), map[string]int{"b": 2}) })
}

// State derived through OnChange never disagrees with the map: here the
// keys by parity, kept through Reset, Apply, Store and With's in-place
// rewrites, which close Changed but tell no subscriber.
func TestMapOnChangeKeepsDerivedState(t *testing.T) {
	m := numbers()
	odd := map[string]bool{}
	m.OnChange(func(c Change[string, int]) {
		delete(odd, c.Key)
		if !c.Deleted && c.Value%2 == 1 {
			odd[c.Key] = true
		}
	})
	told := 0
	m.Subscribe(func(cs []Change[string, int]) { told += len(cs) })
	check := func(when string) {
		t.Helper()
		want := map[string]bool{}
		for k, v := range contents(m) {
			if v%2 == 1 {
				want[k] = true
			}
		}
		var got map[string]bool
		m.With(func(func(string) (int, bool), func(string, int)) { got = maps.Clone(odd) })
		if !maps.Equal(got, want) {
			t.Fatalf("%s: derived %v, want %v", when, got, want)
		}
	}
	m.Reset([]*mvccpb.KeyValue{kv("n/a", "1", 2), kv("n/b", "2", 2)}, 2)
	check("after Reset")
	m.Apply([]*clientv3.Event{put("n/b", "3", 3), del("n/a", 3)}, 3)
	check("after Apply")
	m.Store("c", 5)
	check("after Store")
	m.Reset([]*mvccpb.KeyValue{kv("n/c", "6", 4)}, 4)
	check("after a second Reset")

	before := told
	ch := m.Changed()
	m.With(func(get func(string) (int, bool), set func(string, int)) {
		v, _ := get("c")
		set("c", v+1)
		set("absent", 1) // only held entries are rewritten
	})
	check("after With")
	if v, _ := m.Get("c"); v != 7 || !closed(ch) || told != before {
		t.Fatalf("With: c=%d, Changed closed %v, subscribers told %d changes; want 7, true, 0", v, closed(ch), told-before)
	}
	if _, ok := m.Get("absent"); ok {
		t.Fatal("With's set added an entry")
	}
}
