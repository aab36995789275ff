package commit

// CheckReferencedLive is checkReferencedLive, for the tests of package
// commit_test.
var CheckReferencedLive = checkReferencedLive
