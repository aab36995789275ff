package main

import "errors"

// ErrFormat is wrapped by errors about lines that look like benchmark
// results but cannot be read; the message names the line and the value.
var ErrFormat = errors.New("malformed benchmark line")
