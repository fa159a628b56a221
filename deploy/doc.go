// Package deploy holds the container and Kubernetes manifests of the
// scheduler and the tests that keep them consistent with the binary: the
// probes hit the port the config listens on, the config is mounted where the
// arguments say, the grace period covers shutdown_grace, and the etcd
// endpoints name the members of the example StatefulSet.
package deploy
