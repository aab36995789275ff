//go:build !unix

package pipeline

import "os"

// lockFile does nothing where flock is missing: appends still happen in
// one write each, but a compaction may lose a concurrent append (see
// History).
func lockFile(*os.File, bool) error { return nil }

// unlockFile does nothing (see lockFile).
func unlockFile(*os.File) error { return nil }
