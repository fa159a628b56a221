package watch

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
)

// watchMethod is the gRPC method every etcd watch of a client shares.
const watchMethod = "/etcdserverpb.Watch/Watch"

// EventCounter is a dial option for the etcd client that counts every watch
// event the client decodes, on any watch it opens (this package's, the
// election's, the slots view's), in scheduler_watch_events_total: the cost
// of following etcd that each replica pays for every run, whoever runs it.
// It counts at the gRPC stream, so nothing is added between etcd and the
// watchers: no goroutine, no copy of a response.
func EventCounter(reg prometheus.Registerer) (grpc.DialOption, error) {
	events := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "scheduler_watch_events_total",
		Help: "Watch events this replica's etcd client decoded, over all its watches.",
	})
	if reg != nil {
		if err := reg.Register(events); err != nil {
			return nil, errors.Join(errors.New("watch: registering scheduler_watch_events_total"), err)
		}
	}
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
		method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || method != watchMethod {
			return cs, err
		}
		return countingStream{ClientStream: cs, events: events}, nil
	}), nil
}

// countingStream counts the events of each watch response it receives.
type countingStream struct {
	grpc.ClientStream
	events prometheus.Counter
}

func (s countingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if resp, ok := m.(*pb.WatchResponse); ok && err == nil {
		s.events.Add(float64(len(resp.Events)))
	}
	return err
}
