// Package memlimit says how much memory this process may use: the tightest of the machine's
// physical memory, the address-space limit (RLIMIT_AS, `ulimit -v`, `prlimit --as`) and the
// memory limit of the process's control group (cgroup v2's memory.max, v1's
// memory.limit_in_bytes: a container's limit). Budgets that turn "the model is too large" into a
// clear error, instead of the out-of-memory killer, default to half of it (Default).
package memlimit
