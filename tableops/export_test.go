package tableops

// SetCompactHook sets the hook a compaction attempt runs after reading
// the rows it rewrites and before committing (nil removes it).
func SetCompactHook(f func()) { compactHook = f }
