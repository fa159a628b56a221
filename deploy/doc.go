// Package deploy holds the container image, Kubernetes manifests, Helm
// chart and monitoring rules of the scheduler, and the tests that keep them
// consistent with the binary: the probes hit the port the config listens
// on, the config is mounted where the arguments say and parses with the
// binary's parser, the grace period covers shutdown_grace, the etcd
// endpoints name the members of the bundled StatefulSet, and every metric
// the alerts and the dashboard read is one a running replica exports.
//
// It is a module of its own so that the Helm, kustomize and Prometheus
// libraries the tests need stay out of the scheduler's build.
package deploy
