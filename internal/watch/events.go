package watch

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
)

// watchMethod is the gRPC method every etcd watch of a client shares.
const watchMethod = "/etcdserverpb.Watch/Watch"

// EventCounter is a dial option for the etcd client that counts every watch
// event the client decodes, on any watch it opens (this package's, the
// election's, the slots view's), in scheduler_watch_events_total by the
// kind of the event's key: the cost of following etcd that each replica pays
// for every run, whoever runs it, and where it comes from. kind names a
// key's kind, one of kinds ("other" is added); it is called for every event,
// so it should allocate nothing. It counts at the gRPC stream, so nothing is
// added between etcd and the watchers: no goroutine, no copy of a response.
func EventCounter(reg prometheus.Registerer, kinds []string, kind func(key []byte) string) (grpc.DialOption, error) {
	if kind == nil {
		return nil, errors.New("watch: EventCounter needs a kind of key")
	}
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_watch_events_total",
		Help: "Watch events this replica's etcd client decoded, over all its watches, by the kind of their key.",
	}, []string{"kind"})
	byKind := map[string]prometheus.Counter{}
	for _, k := range kinds {
		byKind[k] = events.WithLabelValues(k)
	}
	byKind[other] = events.WithLabelValues(other)
	if reg != nil {
		if err := reg.Register(events); err != nil {
			return nil, errors.Join(errors.New("watch: registering scheduler_watch_events_total"), err)
		}
	}
	counter := eventCounter{kind: kind, byKind: byKind}
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
		method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || method != watchMethod {
			return cs, err
		}
		return countingStream{ClientStream: cs, counter: counter}, nil
	}), nil
}

// other is the kind of a key kind names with none of the kinds given.
const other = "other"

// eventCounter counts events by the kind of their key; byKind is not
// written after EventCounter returns, so streams read it without a lock.
type eventCounter struct {
	kind   func(key []byte) string
	byKind map[string]prometheus.Counter
}

func (c eventCounter) count(events []*mvccpb.Event) {
	for _, ev := range events {
		var key []byte
		if ev.Kv != nil {
			key = ev.Kv.Key
		}
		n, ok := c.byKind[c.kind(key)]
		if !ok {
			n = c.byKind[other]
		}
		n.Inc()
	}
}

// countingStream counts the events of each watch response it receives.
type countingStream struct {
	grpc.ClientStream
	counter eventCounter
}

func (s countingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if resp, ok := m.(*pb.WatchResponse); ok && err == nil {
		s.counter.count(resp.Events)
	}
	return err
}
