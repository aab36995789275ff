// Package azio registers floe's Azure storage file IO with iceberg-go's IO
// registry for the abfs, abfss, wasb and wasbs schemes, in place of
// iceberg-go's own: the same settings, read the same way
// (adls.auth.shared-key.account.name and .key, adls.sas-token.<host>,
// adls.connection-string.<account>, adls.auth.managed-identity.enabled,
// adls.client-id, adls.endpoint, adls.protocol, else DefaultAzureCredential),
// plus a request timeout, a connect timeout and bounded retries, so that an
// endpoint that accepts a connection and never answers fails the command
// with an error naming the setting instead of hanging it (iceberg-go's IO
// uses the Azure SDK's default transport, which has no read timeout, and
// floe's file IO calls carry no deadline).
//
//	adls.request-timeout      a request that sends or receives nothing for this long fails (default 30s)
//	adls.connect-timeout      connecting (TCP and TLS) (default 10s)
//	adls.retry.num-retries    retries of a request after a transient failure (default 5)
//
// The request timeout is a stall timeout (internal/stallnet), not the SDK's
// RetryOptions.TryTimeout: TryTimeout bounds a whole try including reading
// the response body, so it would fail a large download that is still
// moving. Retries are the Azure SDK's retry policy (RetryOptions.MaxRetries,
// its default backoff: 0.8 s doubling, jittered, to 60 s); the same
// transport carries the token requests of the Entra ID credentials.
//
// A download whose body breaks in the middle (a stall, a reset) is read
// again from the offset it reached with a ranged GET on the same ETag
// (resume.go), up to adls.retry.num-retries times in a row without a new
// byte.
//
// Import it for its side effect where the program is assembled:
//
//	import _ "github.com/floedata/floe/azio"
//
// The floe binary does (cmd/floe, unless built with -tags floe_no_azure).
package azio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"gocloud.dev/blob/azureblob"

	_ "github.com/apache/iceberg-go/io/gocloud/azure" // registered first, replaced below

	"github.com/floedata/floe/internal/blobname"
	"github.com/floedata/floe/internal/stallnet"
)

// Settings of floe's Azure IO beside iceberg-go's adls.* keys.
const (
	KeyRequestTimeout = "adls.request-timeout"
	KeyConnectTimeout = "adls.connect-timeout"
	KeyNumRetries     = "adls.retry.num-retries"
)

// Defaults of the settings.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultNumRetries     = 5
)

// Schemes are the location schemes the IO is registered for (iceberg-go's).
var Schemes = []string{"abfs", "abfss", "wasb", "wasbs"}

func init() {
	for _, s := range Schemes {
		iceio.Unregister(s)
		iceio.Register(s, newAzureIO)
	}
}

func newAzureIO(ctx context.Context, parsed *url.URL, props map[string]string) (iceio.IO, error) {
	loc, err := parseLocation(parsed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", parsed.Redacted(), err)
	}
	opts, err := clientOptions(props)
	if err != nil {
		return nil, err
	}
	client, err := newContainerClient(loc, props, opts)
	if err != nil {
		return nil, fmt.Errorf("%s://%s: %w", parsed.Scheme, authority(parsed), err)
	}
	bucket, err := azureblob.OpenBucket(ctx, client, nil)
	if err != nil {
		return nil, fmt.Errorf("%s://%s: %w", parsed.Scheme, authority(parsed), err)
	}
	return blobname.FileIO{FileIO: blobfs.New(ctx, bucket, locationExtractor(parsed))}, nil
}

// clientOptions reads the timeout and retry settings into the Azure SDK's
// client options: a transport whose connections connect within the connect
// timeout and fail when stalled for the request timeout, and the retry
// count.
func clientOptions(props map[string]string) (azcore.ClientOptions, error) {
	stall, err := stallnet.Duration(props, KeyRequestTimeout, DefaultRequestTimeout)
	if err != nil {
		return azcore.ClientOptions{}, err
	}
	connect, err := stallnet.Duration(props, KeyConnectTimeout, DefaultConnectTimeout)
	if err != nil {
		return azcore.ClientOptions{}, err
	}
	retries := DefaultNumRetries
	if v := strings.TrimSpace(props[KeyNumRetries]); v != "" {
		if retries, err = strconv.Atoi(v); err != nil || retries < 0 || retries > 100 {
			return azcore.ClientOptions{}, fmt.Errorf("%s %q: want a number of retries (0 to 100)", KeyNumRetries, v)
		}
	}
	maxRetries := int32(retries)
	if retries == 0 {
		maxRetries = -1 // the SDK reads 0 as its default (3); below zero is no retry
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = stallnet.Dialer(connect, KeyConnectTimeout, stall, KeyRequestTimeout)
	t.DialTLSContext = stallnet.TLSDialer(t, t.DialContext, connect, KeyConnectTimeout)
	t.TLSHandshakeTimeout = connect // TLS through a proxy's tunnel
	return azcore.ClientOptions{
		Transport: &http.Client{Transport: hostNotFound{t}},
		Retry:     policy.RetryOptions{MaxRetries: maxRetries},
		// A download broken mid-body is read again from its offset, up
		// to the retry count in a row without progress.
		PerCallPolicies: []policy.Policy{resumeDownloads{maxTries: retries}},
	}, nil
}

// hostNotFound reports a host name that does not resolve as an error whose
// text lacks "no such host": gocloud's azureblob driver maps any error with
// that text to gcerrors.NotFound, which blobfs reports as fs.ErrNotExist,
// so a misspelt account or a DNS failure would read as a missing file (a
// table that is not there) instead of an unreachable service.
type hostNotFound struct{ rt http.RoundTripper }

func (h hostNotFound) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(req)
	var dns *net.DNSError
	if err != nil && errors.As(err, &dns) && dns.IsNotFound {
		return nil, &unresolvedError{host: dns.Name, err: err}
	}
	return resp, err
}

// unresolvedError is a host name that does not resolve.
type unresolvedError struct {
	host string
	err  error
}

func (e *unresolvedError) Error() string {
	return fmt.Sprintf("cannot resolve the storage account host %s (check the account name and %s)", e.host, iceio.ADLSEndpoint)
}

func (e *unresolvedError) Unwrap() error { return e.err }

// location is the parts of an Azure location:
// <scheme>://<container>@<account>.<domain>/<path>.
type location struct {
	account, container, host string
}

func parseLocation(u *url.URL) (location, error) {
	var loc location
	if u.User != nil {
		loc.container = u.User.Username()
	}
	if loc.container == "" {
		return loc, errors.New("no container in the location (want scheme://container@account.dfs.core.windows.net/path)")
	}
	loc.host = u.Hostname()
	if loc.host == "" {
		return loc, errors.New("no account host in the location (want scheme://container@account.dfs.core.windows.net/path)")
	}
	loc.account, _, _ = strings.Cut(loc.host, ".")
	if loc.account == "" {
		return loc, errors.New("no account name in the location's host")
	}
	return loc, nil
}

// propsWithPrefix is the settings whose key starts with prefix, keyed by
// the rest of the key.
func propsWithPrefix(props map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// newContainerClient chooses the credentials as iceberg-go's Azure IO does,
// in this order: a shared key, a SAS token for the account host, a
// connection string for the account, a managed identity when enabled, else
// DefaultAzureCredential.
func newContainerClient(loc location, props map[string]string, opts azcore.ClientOptions) (*container.Client, error) {
	copts := &container.ClientOptions{ClientOptions: opts}
	containerURL := func(sas string) (string, error) {
		svc, err := azureblob.NewServiceURL(&azureblob.ServiceURLOptions{
			AccountName:   loc.account,
			SASToken:      sas,
			Protocol:      props[iceio.ADLSProtocol],
			StorageDomain: props[iceio.ADLSEndpoint],
		})
		if err != nil {
			return "", fmt.Errorf("%s/%s: %w", iceio.ADLSEndpoint, iceio.ADLSProtocol, err)
		}
		return url.JoinPath(string(svc), loc.container)
	}
	if name := props[iceio.ADLSSharedKeyAccountName]; name != "" {
		key := props[iceio.ADLSSharedKeyAccountKey]
		if key == "" {
			return nil, fmt.Errorf("azure authentication: shared-key requires both %s and %s", iceio.ADLSSharedKeyAccountName, iceio.ADLSSharedKeyAccountKey)
		}
		u, err := containerURL("")
		if err != nil {
			return nil, err
		}
		cred, err := azblob.NewSharedKeyCredential(name, key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", iceio.ADLSSharedKeyAccountKey, err)
		}
		return container.NewClientWithSharedKeyCredential(u, cred, copts)
	}
	if sas, ok := propsWithPrefix(props, iceio.ADLSSasTokenPrefix)[loc.host]; ok {
		u, err := containerURL(sas)
		if err != nil {
			return nil, err
		}
		return container.NewClientWithNoCredential(u, copts)
	}
	if cs, ok := propsWithPrefix(props, iceio.ADLSConnectionStringPrefix)[loc.account]; ok {
		c, err := container.NewClientFromConnectionString(cs, loc.container, copts)
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", iceio.ADLSConnectionStringPrefix, loc.account, err)
		}
		return c, nil
	}
	u, err := containerURL("")
	if err != nil {
		return nil, err
	}
	// The credentials get the transport (a stalled token endpoint fails
	// too), not the retry count: their own retry policies fit their
	// endpoints (IMDS, Entra ID).
	var cred azcore.TokenCredential
	if props[iceio.ADLSManagedIdentityEnabled] == "true" {
		mi := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: azcore.ClientOptions{Transport: opts.Transport}}
		if id := props[iceio.ADLSClientID]; id != "" {
			mi.ID = azidentity.ClientID(id)
		}
		if cred, err = azidentity.NewManagedIdentityCredential(mi); err != nil {
			return nil, fmt.Errorf("%s: managed identity: %w", iceio.ADLSManagedIdentityEnabled, err)
		}
	} else {
		dopts := &azidentity.DefaultAzureCredentialOptions{ClientOptions: azcore.ClientOptions{Transport: opts.Transport}}
		if cred, err = azidentity.NewDefaultAzureCredential(dopts); err != nil {
			return nil, fmt.Errorf("no adls.* credentials set, and DefaultAzureCredential: %w", err)
		}
	}
	return container.NewClient(u, cred, copts)
}

// authority is the container@host part of an Azure location.
func authority(u *url.URL) string {
	if u.User == nil {
		return u.Hostname()
	}
	return u.User.Username() + "@" + u.Hostname()
}

var locationPattern = regexp.MustCompile(`^(abfss?|wasbs?)://([^/?#]+)(.*)?$`)

// locationExtractor maps a location of the IO's container to its object
// key, as iceberg-go's Azure IO does: a location of another container or
// account is refused (blobfs.ErrUnsupportedObjectAuthority), and so is a
// location without a key (blobfs.ErrEmptyObjectKey).
func locationExtractor(parsed *url.URL) blobfs.ObjectLocationExtractor {
	want := authority(parsed)
	return func(loc string) (blobfs.ObjectLocation, error) {
		m := locationPattern.FindStringSubmatch(loc)
		if m == nil {
			return blobfs.ObjectLocation{}, fmt.Errorf("invalid ADLS location: %s", loc)
		}
		if m[2] != want {
			return blobfs.ObjectLocation{}, fmt.Errorf("%w: URI authority %q does not match configured authority %q",
				blobfs.ErrUnsupportedObjectAuthority, m[2], want)
		}
		if m[3] != "" && !strings.HasPrefix(m[3], "/") {
			return blobfs.ObjectLocation{}, fmt.Errorf("URI authority %q must be followed by an object path: %s", m[2], loc)
		}
		key := strings.TrimPrefix(m[3], "/")
		ol := blobfs.NewObjectLocation(m[1], m[2], key)
		if key == "" {
			return ol, fmt.Errorf("%w: %s", blobfs.ErrEmptyObjectKey, loc)
		}
		return ol, nil
	}
}
