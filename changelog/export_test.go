package changelog

// SetLineage turns the row-lineage path of rewrites on or off and returns
// the function that restores it. Tests using it must not run in parallel.
func SetLineage(on bool) (restore func()) {
	was := useLineage
	useLineage = on
	return func() { useLineage = was }
}

// LineageRewrites is how many rewrites the row-lineage path has computed.
func LineageRewrites() int64 { return lineageRewrites.Load() }

// SetAlignedPairing turns the pairer's aligned path on or off and returns
// the function that restores it. Tests using it must not run in parallel.
func SetAlignedPairing(on bool) (restore func()) {
	was := useAligned
	useAligned = on
	return func() { useAligned = was }
}

// AlignedRows is how many rows pairers have cancelled on the aligned path.
func AlignedRows() int64 { return alignedRows.Load() }

// SetProcessWorkers sets how many partitions a changelog processes at
// once (0: GOMAXPROCS) and returns the function that restores it. Tests
// using it must not run in parallel.
func SetProcessWorkers(n int) (restore func()) {
	was := processWorkers
	processWorkers = n
	return func() { processWorkers = was }
}

// SetShared turns the shared decoding of a rewrite's kept columns on or
// off and returns the function that restores it. Tests using it must not
// run in parallel.
func SetShared(on bool) (restore func()) {
	was := useShared
	useShared = on
	return func() { useShared = was }
}

// SharedColumns is how many columns of old files rewrites took from the
// new files.
func SharedColumns() int64 { return sharedColumns.Load() }
