// Package objstore is floe's file IO for object stores: it replaces
// iceberg-go's s3:// factory (schemes s3, s3a, s3n, oss) with one whose
// requests have timeouts and whose transient failures are retried with
// jittered exponential backoff up to a total time budget, reads and writes
// alike, and which honours s3.path-style-access and a checksum setting for
// strict S3-compatible servers. gs:// is package gcsio's; the Azure schemes
// are package azio's.
//
// Importing the package registers the factories; programs import it through
// the public package s3io (cmd/floe does, unless built with -tags
// floe_no_s3). Settings are the Iceberg property names; see docs/storage.md.
package objstore

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/floedata/floe/internal/stallnet"
)

// Storage property names floe reads for s3:// locations, beyond the ones
// iceberg-go defines (s3.endpoint, s3.region, s3.access-key-id, ...).
const (
	// KeyRequestTimeout: a request that sends or receives nothing for this
	// long is abandoned (and retried). Seconds or a Go duration. Also bounds
	// the wait for response headers. PyIceberg's name.
	KeyRequestTimeout = "s3.request-timeout"
	// KeyConnectTimeout bounds connecting (TCP and TLS). iceberg-go's name.
	KeyConnectTimeout = "s3.connect-timeout"
	// KeyNumRetries is the most retries of one request (Iceberg Java's name).
	KeyNumRetries = "s3.retry.num-retries"
	// KeyMinWait and KeyMaxWait bound the backoff between attempts, in
	// milliseconds (Iceberg Java's names).
	KeyMinWait = "s3.retry.min-wait-ms"
	KeyMaxWait = "s3.retry.max-wait-ms"
	// KeyRetryBudget is the total time one request may take with its
	// retries before it fails. Seconds or a Go duration.
	KeyRetryBudget = "s3.retry.total-timeout"
	// KeyPathStyle selects path-style addressing (http://host/bucket/key)
	// when true, virtual-hosted (http://bucket.host/key) when false. Default:
	// path style with a custom endpoint, virtual-hosted on AWS.
	KeyPathStyle = "s3.path-style-access"
	// KeyChecksum is when request checksums (x-amz-checksum-*) are sent:
	// "when-supported" (every upload) or "when-required". Default:
	// when-required with a custom endpoint, else the AWS SDK's default
	// (AWS_REQUEST_CHECKSUM_CALCULATION, else when-supported).
	KeyChecksum = "s3.checksum-calculation"
	// KeyProfile names a profile of the AWS shared config files.
	KeyProfile = "s3.profile-name"

	keyEndpoint      = "s3.endpoint"
	keyRegion        = "s3.region"
	keyClientRegion  = "client.region"
	keyAccessKey     = "s3.access-key-id"
	keySecretKey     = "s3.secret-access-key"
	keySessionToken  = "s3.session-token"
	keyProxy         = "s3.proxy-uri"
	keyForceVirtual  = "s3.force-virtual-addressing"
	keyCompatMode    = "s3.compat-mode"
	keyRemoteSigning = "s3.remote-signing-enabled"
)

// Defaults of the timeout and retry settings.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultNumRetries     = 50
	DefaultMinWait        = 100 * time.Millisecond
	DefaultMaxWait        = 20 * time.Second
	DefaultRetryBudget    = 5 * time.Minute
)

// s3Settings are the parsed settings of one s3:// file IO.
type s3Settings struct {
	endpoint      string
	region        string
	regionFrom    string // where region came from, for messages
	accessKey     string
	secretKey     string
	sessionToken  string
	profile       string
	proxy         *url.URL
	pathStyle     bool
	checksum      string // "", "when-supported", "when-required"
	compat        bool
	requestTO     time.Duration
	connectTO     time.Duration
	retry         retryPolicy
	remoteSigning bool
}

// retryPolicy says how often and how long a failed request is retried.
type retryPolicy struct {
	maxAttempts      int
	minWait, maxWait time.Duration
	budget           time.Duration
}

func defaultRetryPolicy() retryPolicy {
	return retryPolicy{maxAttempts: DefaultNumRetries + 1, minWait: DefaultMinWait, maxWait: DefaultMaxWait, budget: DefaultRetryBudget}
}

// parseS3Settings reads the settings of an s3:// location from props (the
// catalog entry, merged by iceberg-go with what a REST catalog returned) and
// from the environment iceberg-go also reads (AWS_S3_ENDPOINT). The AWS SDK
// reads the rest of the environment itself.
func parseS3Settings(props map[string]string) (s3Settings, error) {
	s := s3Settings{
		endpoint:     props[keyEndpoint],
		accessKey:    props[keyAccessKey],
		secretKey:    props[keySecretKey],
		sessionToken: props[keySessionToken],
		profile:      props[KeyProfile],
		requestTO:    DefaultRequestTimeout,
		connectTO:    DefaultConnectTimeout,
		retry:        defaultRetryPolicy(),
	}
	if s.endpoint == "" {
		s.endpoint = os.Getenv("AWS_S3_ENDPOINT")
	}
	switch {
	case props[keyRegion] != "":
		s.region, s.regionFrom = props[keyRegion], keyRegion
	case props[keyClientRegion] != "":
		s.region, s.regionFrom = props[keyClientRegion], keyClientRegion
	}
	if (s.accessKey == "") != (s.secretKey == "") {
		missing, given := keySecretKey, keyAccessKey
		if s.accessKey == "" {
			missing, given = keyAccessKey, keySecretKey
		}
		return s, fmt.Errorf("%s is set but %s is not: give both (or neither, to use the AWS environment)", given, missing)
	}
	if s.sessionToken != "" && s.accessKey == "" {
		return s, fmt.Errorf("%s is set without %s and %s", keySessionToken, keyAccessKey, keySecretKey)
	}
	var err error
	if v := props[keyProxy]; v != "" {
		if s.proxy, err = url.Parse(v); err != nil {
			return s, fmt.Errorf("%s %q: %w", keyProxy, v, err)
		}
	}
	if s.requestTO, err = durationSetting(props, KeyRequestTimeout, s.requestTO); err != nil {
		return s, err
	}
	if s.connectTO, err = durationSetting(props, KeyConnectTimeout, s.connectTO); err != nil {
		return s, err
	}
	if s.retry.budget, err = durationSetting(props, KeyRetryBudget, s.retry.budget); err != nil {
		return s, err
	}
	if v, ok := props[KeyNumRetries]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return s, fmt.Errorf("%s %q: want a whole number, 0 or more", KeyNumRetries, v)
		}
		s.retry.maxAttempts = n + 1
	}
	if s.retry.minWait, err = millisSetting(props, KeyMinWait, s.retry.minWait); err != nil {
		return s, err
	}
	if s.retry.maxWait, err = millisSetting(props, KeyMaxWait, s.retry.maxWait); err != nil {
		return s, err
	}
	if s.retry.maxWait < s.retry.minWait {
		return s, fmt.Errorf("%s (%v) is less than %s (%v)", KeyMaxWait, s.retry.maxWait, KeyMinWait, s.retry.minWait)
	}

	s.pathStyle = s.endpoint != ""
	if b, ok, err := boolSetting(props, keyForceVirtual); err != nil {
		return s, err
	} else if ok {
		s.pathStyle = !b
	}
	if b, ok, err := boolSetting(props, KeyPathStyle); err != nil {
		return s, err
	} else if ok {
		s.pathStyle = b
	}
	if b, ok, err := boolSetting(props, keyCompatMode); err != nil {
		return s, err
	} else if ok {
		s.compat = b
	}
	if b, ok, err := boolSetting(props, keyRemoteSigning); err != nil {
		return s, err
	} else if ok {
		s.remoteSigning = b
	}
	switch v := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(props[KeyChecksum]), "_", "-")); v {
	case "":
		if s.endpoint != "" || s.compat {
			s.checksum = "when-required"
		}
	case "when-supported", "when-required":
		s.checksum = v
	default:
		return s, fmt.Errorf("%s %q: want when-supported or when-required", KeyChecksum, props[KeyChecksum])
	}
	if s.compat {
		s.checksum = "when-required"
	}
	return s, nil
}

// durationSetting parses a duration given as seconds ("30", "1.5") or as a Go
// duration ("30s", "5m").
func durationSetting(props map[string]string, key string, def time.Duration) (time.Duration, error) {
	return stallnet.Duration(props, key, def)
}

func millisSetting(props map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := props[key]
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want milliseconds, 0 or more", key, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

func boolSetting(props map[string]string, key string) (value, ok bool, err error) {
	v, ok := props[key]
	if !ok || strings.TrimSpace(v) == "" {
		return false, false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, false, fmt.Errorf("%s %q: want true or false", key, v)
	}
	return b, true, nil
}
