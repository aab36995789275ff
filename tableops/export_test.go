package tableops

// SetCompactHook sets the hook a compaction attempt runs after reading
// the rows it rewrites and before committing (nil removes it).
func SetCompactHook(f func()) { compactHook = f }

// FileDeletes is what the compaction choice of one data file depends on.
type FileDeletes = fileDeletes

// Choose is what auto compaction does to a data file described by f:
// keep, rewrite-data or rewrite-position-deletes.
func (p CompactionPolicy) Choose(f FileDeletes) string { return p.choose(f).String() }
