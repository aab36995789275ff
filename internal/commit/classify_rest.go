package commit

// The sentinels of iceberg-go's REST client (catalog/rest), known by their
// messages so that package commit need not import the REST client, and the
// AWS SDK it brings for SigV4, into every program that commits: a program
// gets the REST catalog only when it imports it. TestRESTSentinels checks
// these texts against the real sentinels of the iceberg-go version in
// go.mod.
const (
	restBadRequest           = "REST error: bad request"
	restForbidden            = "REST error: forbidden"
	restUnauthorized         = "REST error: unauthorized"
	restAuthorizationExpired = "REST error: authorization expired"
	restServiceUnavailable   = "REST error: service unavailable"
	restServerError          = "REST error: server error"
	restCommitStateUnknown   = "REST error: commit failed due to unknown reason"
)

// isREST reports whether err wraps one of the REST sentinels named by
// their messages: some error in its chain (or tree) has exactly one of
// these messages.
func isREST(err error, sentinels ...string) bool {
	for err != nil {
		for _, s := range sentinels {
			if err.Error() == s {
				return true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if isREST(e, sentinels...) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}
