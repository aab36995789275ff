package commit

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"
)

// TestRESTSentinels checks that the messages isREST knows the REST client's
// sentinels by are those of the iceberg-go in go.mod, wrapped as the client
// wraps them.
func TestRESTSentinels(t *testing.T) {
	for _, c := range []struct {
		sentinel error
		text     string
	}{
		{rest.ErrBadRequest, restBadRequest},
		{rest.ErrForbidden, restForbidden},
		{rest.ErrUnauthorized, restUnauthorized},
		{rest.ErrAuthorizationExpired, restAuthorizationExpired},
		{rest.ErrServiceUnavailable, restServiceUnavailable},
		{rest.ErrServerError, restServerError},
		{rest.ErrCommitStateUnknown, restCommitStateUnknown},
	} {
		if c.sentinel.Error() != c.text {
			t.Errorf("iceberg-go's sentinel reads %q, isREST looks for %q", c.sentinel, c.text)
		}
		wrapped := fmt.Errorf("commit ns.t: %w", fmt.Errorf("%w: 503 from the server", c.sentinel))
		if !isREST(wrapped, c.text) {
			t.Errorf("isREST(%q) does not find %q", wrapped, c.text)
		}
		if joined := fmt.Errorf("%w; %w", fmt.Errorf("other"), c.sentinel); !isREST(joined, c.text) {
			t.Errorf("isREST(%q) does not find %q in a multi-error", joined, c.text)
		}
	}
	if isREST(fmt.Errorf("x: %w", rest.ErrRESTError), restServerError) || isREST(fmt.Errorf("REST error: server error!"), restServerError) {
		t.Error("isREST matched an error that does not wrap the sentinel")
	}
}
