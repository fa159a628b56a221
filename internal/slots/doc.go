// Package slots is the cluster-wide semaphore that bounds how many runs
// execute at once: a run may only execute while it holds a job slot key
// (slots/<job>/<i>) and one key of each shared resource it names
// (resources/<name>/<i>), all put with the worker's session lease in one
// transaction (docs/design.md#the-safety-rules, rules 3 to 5). The slot key's CreateRevision is the run's
// fencing token (rule 6).
package slots
