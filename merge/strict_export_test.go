package merge

// SetStrictHook makes Apply with WithInsertsMustBeNew report in how many
// groups it checked the keys the changes add against the table (see
// testHookStrict) until the returned function is called.
func SetStrictHook(f func(groups int)) func() {
	testHookStrict = f
	return func() { testHookStrict = nil }
}
