package merge

// SetSpillHook makes Apply and Merge report how they spilled (see
// testHookSpill) until the returned function is called.
func SetSpillHook(f func(spilled, repartitioned int64, groups int)) func() {
	testHookSpill = f
	return func() { testHookSpill = nil }
}

// SetReduceHook makes Apply report, for each change set (or partition of
// one) it reduces, whether its keys were found sorted, until the returned
// function is called.
func SetReduceHook(f func(sorted bool)) func() {
	testHookReduce = f
	return func() { testHookReduce = nil }
}
