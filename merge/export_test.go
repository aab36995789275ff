package merge

// SetSpillHook makes Apply and Merge report how they spilled (see
// testHookSpill) until the returned function is called.
func SetSpillHook(f func(spilled, repartitioned int64, groups int)) func() {
	testHookSpill = f
	return func() { testHookSpill = nil }
}
