// Package stallnettest has test helpers for the timeouts of
// internal/stallnet: an endpoint that never completes a connection
// (FullBacklog), one that accepts and never answers (Silent), and a server
// whose downloads stall in the middle of their body (PartialServer).
package stallnettest
