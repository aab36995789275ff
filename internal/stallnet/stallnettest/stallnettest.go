// Package stallnettest has test helpers for the timeouts of
// internal/stallnet: an endpoint that never completes a connection.
package stallnettest
