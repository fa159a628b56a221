package api

import "net/http"

// Cluster is what the API asks of the scheduler; the replica provides it.
// It grows as election, slots and jobs are wired in.
type Cluster interface{}

func (s *Server) clusterRoutes(read, write func(http.HandlerFunc) http.HandlerFunc) {
	_, _ = read, write
}
